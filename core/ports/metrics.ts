/** Metrics port: counters, gauges and histograms the daemons report through. */

export type MetricLabels = Readonly<Record<string, string>>;

export interface Counter {
  inc(by?: number): void;
}
export interface Gauge {
  set(value: number): void;
}
export interface Histogram {
  observe(value: number): void;
}

/** Handles are cached by the caller: look them up once, not per event. */
export interface Metrics {
  counter(name: string, labels?: MetricLabels): Counter;
  gauge(name: string, labels?: MetricLabels): Gauge;
  /** `buckets`: the upper bounds, ascending (the implementation's defaults when left out). */
  histogram(name: string, labels?: MetricLabels, buckets?: readonly number[]): Histogram;
}

const noop = { inc() {}, set() {}, observe() {} };

/** Metrics that record nothing, for tests and tools that do not report. */
export const noMetrics: Metrics = {
  counter: () => noop,
  gauge: () => noop,
  histogram: () => noop,
};
