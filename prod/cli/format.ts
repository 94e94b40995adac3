/** Output helpers for the CLI: Peloton-style aligned tables and readable values. */

/** Renders rows under headers, columns right-aligned and separated by `|`, as Peloton's CLI does. */
export function table(headers: string[], rows: (string | number | undefined)[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === undefined || c === null ? "" : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => r.map((c, i) => c.padStart(widths[i])).join("|  ") + "|";
  return [line(headers), ...cells.map(line)].join("\n");
}

/** "2 MB" style sizes as Peloton prints them. */
export function mb(v: unknown): string {
  return v === undefined ? "" : `${v} MB`;
}
