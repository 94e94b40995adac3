/** A self-contained HTML page of uPlot charts (uPlot inlined, data embedded), shared by reports and comparisons. */

export interface UplotAssets {
  js: string;
  css: string;
}

/** One chart: lines over a shared x axis (simulated seconds); null values leave gaps. */
export interface Chart {
  id: string;
  title: string;
  y: string;
  x: number[];
  lines: { label: string; values: (number | null)[] }[];
  /** Draw steps rather than lines (counts per interval). */
  stepped?: boolean;
  /** The x axis' label (default: simulated seconds). */
  xLabel?: string;
  /** Draw points (a curve of few runs, values between gaps). */
  points?: boolean;
  /** Leave a gap at a null value rather than draw the line across it. */
  gaps?: boolean;
}

export const esc = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]!));

const COLORS = [
  "#1f77b4",
  "#d62728",
  "#2ca02c",
  "#9467bd",
  "#ff7f0e",
  "#8c564b",
  "#e377c2",
  "#17becf",
  "#7f7f7f",
];

/** A page: a title, HTML sections (tables), then the charts in order, each in its own div. */
export function renderPage(
  title: string,
  sections: string[],
  charts: Chart[],
  assets: UplotAssets,
): string {
  const data = JSON.stringify({ charts, colors: COLORS }).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>${assets.css}
body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}table{border-collapse:collapse;margin:8px 0}
td,th{padding:2px 12px 2px 0;text-align:left;vertical-align:top}td.n{text-align:right}h1{font-size:20px}h2{font-size:16px;margin-top:28px}
.chart{margin:16px 0}.muted{color:#666}</style></head>
<body><h1>${esc(title)}</h1>
${sections.join("\n")}
<h2>Charts</h2>
${charts.map((c) => `<div class="chart" id="${esc(c.id)}"></div>`).join("\n")}
<script>${assets.js}</script>
<script>
const {charts, colors} = ${data};
for (const c of charts) {
  const opts = {title: c.title, width: 960, height: 260, scales: {x: {time: false}},
    axes: [{label: c.xLabel ?? "simulated seconds"}, {label: c.y, size: 70}],
    series: [{}, ...c.lines.map((l, i) => ({label: l.label, stroke: colors[i % colors.length], width: 1.5,
      spanGaps: c.gaps !== true, points: {show: c.points === true, size: 7},
      ...(c.stepped ? {paths: uPlot.paths.stepped({align: 1})} : {})}))]};
  new uPlot(opts, [c.x, ...c.lines.map((l) => l.values)], document.getElementById(c.id));
}
</script></body></html>
`;
}

/**
 * A number as the tables show it: grouped ("12,345.678"), with every digit the JSON and the terminal have,
 * so two different values never look equal (toLocaleString alone keeps 3 fraction digits: 0.9996 as 1).
 */
export function formatNumber(v: number): string {
  const grouped = v.toLocaleString("en-US", { maximumFractionDigits: 20 });
  // Intl gives the shortest digits that read back as `v`; where it could not, the plain form does.
  return Number(grouped.replace(/,/g, "")) === v ? grouped : String(v);
}

/** An HTML table: header cells, then rows; numbers are right-aligned and grouped. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cell = (v: string | number) =>
    typeof v === "number" ? `<td class="n">${formatNumber(v)}</td>` : `<td>${esc(v)}</td>`;
  return `<table><tr>${header.map((h) => `<th>${esc(h)}</th>`).join("")}</tr>${
    rows.map((r) => `<tr>${r.map(cell).join("")}</tr>`).join("")
  }</table>`;
}
