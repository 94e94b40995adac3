/** Output helpers for the CLI: Peloton-style aligned tables and readable values. */

import { displayWidth, escapeControls } from "./display_width.ts";

/**
 * Renders rows under headers, columns right-aligned and separated by `|`, as Peloton's CLI does. Columns are
 * measured in terminal cells, not string length, so wide and combining characters keep them aligned; control
 * characters in a cell are shown escaped, so a name cannot break a row or send the terminal an escape.
 */
export function table(headers: string[], rows: (string | number | undefined)[][]): string {
  const cells = [headers, ...rows].map((r) =>
    r.map((c) => escapeControls(c === undefined || c === null ? "" : String(c)))
  );
  const columns = cells.map((r) => r.map(displayWidth));
  const widths = headers.map((_, i) => Math.max(...columns.map((r) => r[i] ?? 0)));
  const line = (r: string[], j: number) =>
    r.map((c, i) => " ".repeat(Math.max(0, widths[i] - columns[j][i])) + c).join("|  ") + "|";
  return cells.map(line).join("\n");
}

/** Cells as a terminal shows them: control characters escaped, measured in terminal columns. */
export const TERMINAL_TEXT = {
  show: escapeControls,
  width: displayWidth,
};

/** "2 MB" style sizes as Peloton prints them. */
export function mb(v: unknown): string {
  return v === undefined ? "" : `${v} MB`;
}

/** The line under a page of a query's table: "tasks 101-200 of 350", or "tasks 0 of 350" past the end. */
export function pageLine(what: string, shown: number, page: { offset: number; total: number }): string {
  return `${what} ${shown ? `${page.offset + 1}-${page.offset + shown}` : "0"} of ${page.total}`;
}
