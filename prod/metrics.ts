/** The Metrics port in Prometheus's text exposition format, with gauges that are read at scrape time. */
import type { Counter, Gauge, Histogram, MetricLabels, Metrics } from "../core/ports/metrics.ts";

/** Seconds: fine at the low end (in-process calls), up to the API's timeouts. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

type Kind = "counter" | "gauge" | "histogram";

interface Series {
  labels: MetricLabels;
  value: number;
  buckets?: number[];
  sum?: number;
  count?: number;
}

interface Family {
  kind: Kind;
  help: string;
  series: Map<string, Series>;
  /** A histogram's upper bounds, set by its first registration. */
  buckets?: readonly number[];
}

export class PromMetrics implements Metrics {
  readonly #families = new Map<string, Family>();
  readonly #collectors: (() => void)[] = [];
  /** Gauge families the collectors set at the last scrape: set afresh at the next. */
  readonly #collected = new Set<Family>();
  #collecting = false;

  constructor(readonly constLabels: MetricLabels = {}) {}

  counter(name: string, labels: MetricLabels = {}): Counter {
    const s = this.#series(name, "counter", labels);
    return { inc: (by = 1) => void (s.value += by) };
  }

  gauge(name: string, labels: MetricLabels = {}): Gauge {
    const s = this.#series(name, "gauge", labels);
    if (this.#collecting) this.#collected.add(this.#families.get(name)!);
    return { set: (v) => void (s.value = v) };
  }

  histogram(name: string, labels: MetricLabels = {}, buckets: readonly number[] = BUCKETS): Histogram {
    const s = this.#series(name, "histogram", labels);
    const bounds = (this.#families.get(name)!.buckets ??= buckets);
    s.buckets ??= bounds.map(() => 0);
    s.sum ??= 0;
    s.count ??= 0;
    return {
      observe: (v) => {
        s.sum! += v;
        s.count!++;
        for (let i = 0; i < bounds.length; i++) if (v <= bounds[i]) s.buckets![i]++;
      },
    };
  }

  /** Describes a family for `# HELP`. */
  help(name: string, text: string): void {
    const f = this.#families.get(name);
    if (f) f.help = text;
  }

  /**
   * `fn` runs before each scrape to set gauges from the daemons' state (queue depths, entitlement). Those
   * gauges are the state of the moment: a family a collector set is emptied before the next scrape's
   * collectors run, so a series they no longer set (a pool deleted, a role the process stepped down from)
   * is gone rather than left at its last value. Gauges set outside collectors keep their values.
   */
  collect(fn: () => void): void {
    this.#collectors.push(fn);
  }

  render(): string {
    for (const f of this.#collected) f.series.clear();
    this.#collected.clear();
    this.#collecting = true;
    for (const fn of this.#collectors) {
      try {
        fn();
      } catch { /* a collector must not break the scrape */ }
    }
    this.#collecting = false;
    const out: string[] = [];
    for (const [name, f] of this.#families) {
      if (f.help) out.push(`# HELP ${name} ${f.help}`);
      out.push(`# TYPE ${name} ${f.kind}`);
      for (const s of f.series.values()) {
        const labels = { ...this.constLabels, ...s.labels };
        if (f.kind !== "histogram") {
          out.push(`${name}${fmtLabels(labels)} ${fmtNumber(s.value)}`);
          continue;
        }
        const bounds = f.buckets!;
        for (let i = 0; i < bounds.length; i++) {
          out.push(`${name}_bucket${fmtLabels({ ...labels, le: String(bounds[i]) })} ${s.buckets![i]}`);
        }
        out.push(`${name}_bucket${fmtLabels({ ...labels, le: "+Inf" })} ${s.count}`);
        out.push(`${name}_sum${fmtLabels(labels)} ${fmtNumber(s.sum!)}`);
        out.push(`${name}_count${fmtLabels(labels)} ${s.count}`);
      }
    }
    return out.join("\n") + "\n";
  }

  #series(name: string, kind: Kind, labels: MetricLabels): Series {
    let f = this.#families.get(name);
    if (!f) this.#families.set(name, f = { kind, help: "", series: new Map() });
    if (f.kind !== kind) throw new Error(`Cannot register ${name} as a ${kind}: it is a ${f.kind}`);
    const key = JSON.stringify(labels);
    let s = f.series.get(key);
    if (!s) f.series.set(key, s = { labels, value: 0 });
    return s;
  }
}

function fmtLabels(labels: MetricLabels): string {
  const parts = Object.entries(labels).map(([k, v]) =>
    `${k}="${v.replaceAll("\\", "\\\\").replaceAll("\n", "\\n").replaceAll('"', '\\"')}"`
  );
  return parts.length ? `{${parts.join(",")}}` : "";
}

function fmtNumber(v: number): string {
  return Number.isFinite(v) ? String(v) : v > 0 ? "+Inf" : v < 0 ? "-Inf" : "NaN";
}
