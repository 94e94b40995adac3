/** In-memory metrics for the simulator: counters and gauges the report reads at the end. */
import type { Counter, Gauge, Histogram, MetricLabels, Metrics } from "../core/ports/metrics.ts";

function key(name: string, labels?: MetricLabels): string {
  if (!labels) return name;
  const parts = Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`);
  return `${name}{${parts.join(",")}}`;
}

export class SimMetrics implements Metrics {
  readonly values = new Map<string, number>();
  readonly samples = new Map<string, number[]>();

  counter(name: string, labels?: MetricLabels): Counter {
    const k = key(name, labels);
    if (!this.values.has(k)) this.values.set(k, 0);
    return { inc: (by = 1) => this.values.set(k, this.values.get(k)! + by) };
  }

  gauge(name: string, labels?: MetricLabels): Gauge {
    const k = key(name, labels);
    return { set: (v) => this.values.set(k, v) };
  }

  histogram(name: string, labels?: MetricLabels): Histogram {
    const k = key(name, labels);
    const list = this.samples.get(k) ?? [];
    this.samples.set(k, list);
    return { observe: (v) => list.push(v) };
  }
}
