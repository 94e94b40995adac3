/** The report's time series as CSV files: one row per sample, one column per series. */
import type { Report } from "./report.ts";
import { POOL_SERIES_KEYS } from "../sim/stats.ts";

/** `series.csv`: time, every cluster series, then failed placements per reason. */
export function seriesCsv(report: Report): string {
  const s = report.series;
  const scalar = (Object.keys(s) as (keyof typeof s)[]).filter((k) => k !== "t" && k !== "placementFailures");
  const reasons = Object.keys(s.placementFailures);
  const header = ["t", ...scalar, ...reasons.map((r) => `placementFailures: ${r}`)];
  const rows = [header.map(field).join(",")];
  for (let i = 0; i < s.t.length; i++) {
    const row = [
      s.t[i],
      ...scalar.map((k) => (s[k] as number[])[i]),
      ...reasons.map((r) => s.placementFailures[r][i]),
    ];
    // No value (a queue delay of an interval in which no task started): an empty cell.
    rows.push(row.map((v) => (v === undefined || v === null ? "" : String(v))).join(","));
  }
  return rows.join("\n") + "\n";
}

/**
 * `pools.csv`: one row per sample and pool (long format, so any number of pools fits one file), a column
 * per pool series (`POOL_SERIES_KEYS`: regular, held on hosts, then slack); a series a report from before
 * it lacks is left empty.
 */
export function poolsCsv(report: Report): string {
  const keys = POOL_SERIES_KEYS;
  const rows = [["t", "pool", ...keys].join(",")];
  for (const [path, p] of Object.entries(report.poolSeries)) {
    for (let i = 0; i < report.series.t.length; i++) {
      rows.push(
        [String(report.series.t[i]), field(path), ...keys.map((k) => String(p[k]?.[i] ?? ""))].join(","),
      );
    }
  }
  return rows.join("\n") + "\n";
}

/** Quotes a CSV field when it holds a comma, quote or newline. */
export function field(v: string): string {
  return /[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/** Writes every CSV file of a report into `dir`. */
export async function writeCsvFiles(report: Report, dir: string): Promise<void> {
  await Deno.writeTextFile(`${dir}/series.csv`, seriesCsv(report));
  await Deno.writeTextFile(`${dir}/pools.csv`, poolsCsv(report));
}
