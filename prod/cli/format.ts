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

/** The line under a page of a query's table: "tasks 101-200 of 350", or "tasks 0 of 350" past the end. */
export function pageLine(what: string, shown: number, page: { offset: number; total: number }): string {
  return `${what} ${shown ? `${page.offset + 1}-${page.offset + shown}` : "0"} of ${page.total}`;
}
