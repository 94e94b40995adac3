/**
 * Browser code of the web UI, part 1: the small DOM slice it uses, an element builder and formatters.
 *
 * Every function here runs in the browser: page.ts puts each one's source into the page, so they may use
 * only their arguments, browser globals and the other client functions, never module-level values.
 * Deno type-checks them against the slice below (Deno's own types have no DOM).
 */

/** The part of a DOM element the UI uses. */
export interface UiElement {
  id: string;
  className: string;
  textContent: string | null;
  hidden: boolean;
  title: string;
  value: string;
  disabled: boolean;
  readonly classList: { toggle(name: string, on?: boolean): boolean };
  append(...nodes: (UiElement | string)[]): void;
  replaceChildren(...nodes: (UiElement | string)[]): void;
  setAttribute(name: string, value: string): void;
  addEventListener(type: string, listener: (event: UiEvent) => void): void;
  focus(): void;
}

export interface UiEvent {
  preventDefault(): void;
}

export interface UiDocument {
  createElement(tag: string): UiElement;
  getElementById(id: string): UiElement | null;
}

/** What `h` takes as children: elements, text, or nothing (null, undefined, false are skipped). */
export type UiChild = UiElement | string | number | null | undefined | false;

/** Attributes; `on<event>` entries are listeners, `true` is a bare attribute, false/undefined are left out. */
export type UiAttrs = Record<string, string | number | boolean | undefined | ((e: UiEvent) => void)>;

export function uiDocument(): UiDocument {
  return (globalThis as unknown as { document: UiDocument }).document;
}

/** The element with `id`; the page's skeleton has every id the code asks for. */
export function byId(id: string): UiElement {
  const el = uiDocument().getElementById(id);
  if (!el) throw new Error(`Cannot find #${id} in the page`);
  return el;
}

/** Builds an element. Text goes in as text nodes, never as HTML, so API strings cannot inject markup. */
export function h(tag: string, attrs: UiAttrs = {}, ...children: UiChild[]): UiElement {
  const el = uiDocument().createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === "object" ? c : String(c));
  }
  return el;
}

/** A table with a header row; `rows` of cells. An empty table says so in one row. */
export function table(headers: string[], rows: UiChild[][], empty = "Nothing to show", cls = ""): UiElement {
  const body = rows.length
    ? rows.map((r) => h("tr", {}, ...r.map((c) => h("td", {}, c))))
    : [h("tr", {}, h("td", { colspan: headers.length, class: "empty" }, empty))];
  return h(
    "table",
    { class: cls },
    h("thead", {}, h("tr", {}, ...headers.map((t) => h("th", {}, t)))),
    h("tbody", {}, ...body),
  );
}

/** A state as a coloured badge; the colour comes from the state's family. */
export function badge(state: string | undefined): UiElement {
  const s = state ?? "UNKNOWN";
  return h("span", { class: `badge ${stateTone(s)}`, "data-state": s }, s.replace(/^HOST_STATE_/, ""));
}

export function stateTone(state: string): string {
  if (/RUNNING|^(HOST_STATE_)?UP$|ROLLING_FORWARD/.test(state)) return "ok";
  if (/SUCCEEDED|ROLLED_BACK/.test(state)) return "done";
  if (/FAILED|LOST|DOWN/.test(state)) return "bad";
  if (/KILL|DELETED|ABORTED|PREEMPTING/.test(state)) return "off";
  if (/DRAIN|PAUSED|ROLLING_BACKWARD/.test(state)) return "warn";
  return "wait";
}

/** Task counts by state, largest first, zeros left out: "RUNNING 3 · PENDING 7". */
export function statsLine(stats: Record<string, number> | undefined): UiElement {
  const parts = Object.entries(stats ?? {}).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
  if (!parts.length) return h("span", { class: "muted" }, "no tasks");
  return h(
    "span",
    { class: "stats" },
    ...parts.map(([s, n]) => h("span", { class: `stat ${stateTone(s)}`, "data-state": s }, `${s} ${n}`)),
  );
}

/** Up to two decimals, no trailing zeros; undefined as a dash. */
export function num(v: number | undefined): string {
  if (typeof v !== "number" || Number.isNaN(v)) return "—";
  return String(Math.round(v * 100) / 100);
}

/** An RFC 3339 time as local "YYYY-MM-DD HH:MM:SS"; absent as a dash. */
export function when(t: string | undefined): string {
  if (!t) return "—";
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return t;
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** A pool resource's value in its unit: cores, MB, or GPUs. */
export function resourceUnit(kind: string): string {
  return kind === "cpu" ? "cores" : kind === "gpu" ? "GPUs" : "MB";
}

export const DOM_CODE = [uiDocument, byId, h, table, badge, stateTone, statsLine, num, when, resourceUnit];
