/**
 * In-memory metrics for the simulator: counters, gauges and histograms (count and sum) kept by name and
 * labels. An update is a field write on a handle the daemons look up once, so that metrics the core reports
 * per task cost the simulator next to nothing.
 */
import type { Counter, Gauge, Histogram, MetricLabels, Metrics } from "../core/ports/metrics.ts";

function key(name: string, labels?: MetricLabels): string {
  if (!labels) return name;
  const parts = Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`);
  return `${name}{${parts.join(",")}}`;
}

export interface SimSeries {
  value: number;
  /** Observations of a histogram (`value` is their sum). */
  count: number;
}

export class SimMetrics implements Metrics {
  readonly series = new Map<string, SimSeries>();

  counter(name: string, labels?: MetricLabels): Counter {
    const s = this.#series(name, labels);
    return { inc: (by = 1) => void (s.value += by) };
  }

  gauge(name: string, labels?: MetricLabels): Gauge {
    const s = this.#series(name, labels);
    return { set: (v) => void (s.value = v) };
  }

  histogram(name: string, labels?: MetricLabels): Histogram {
    const s = this.#series(name, labels);
    return {
      observe: (v) => {
        s.value += v;
        s.count++;
      },
    };
  }

  #series(name: string, labels?: MetricLabels): SimSeries {
    const k = key(name, labels);
    let s = this.series.get(k);
    if (!s) this.series.set(k, s = { value: 0, count: 0 });
    return s;
  }
}
