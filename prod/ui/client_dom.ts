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
  removeAttribute(name: string): void;
  addEventListener(type: string, listener: (event: UiEvent) => void): void;
  focus(options?: { preventScroll?: boolean }): void;
}

export interface UiEvent {
  preventDefault(): void;
  /** A keyboard event's key ("Escape", "Tab") and whether Shift was down; absent on other events. */
  readonly key?: string;
  readonly shiftKey?: boolean;
}

/** What the UI reads of the focused element to give it back its focus and caret. */
export interface UiFocused extends UiElement {
  readonly isConnected: boolean;
  /** A number in text inputs; null or absent in other elements. */
  readonly selectionStart?: number | null;
  readonly selectionEnd?: number | null;
  readonly selectionDirection?: "forward" | "backward" | "none" | null;
  setSelectionRange?(start: number, end: number, direction?: "forward" | "backward" | "none"): void;
}

export interface UiDocument {
  createElement(tag: string): UiElement;
  getElementById(id: string): UiElement | null;
  readonly activeElement: UiFocused | null;
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

/**
 * Runs `change` (a render), then gives the focus and the caret back to the element that had them if it is
 * still in the page: a render that places a node it keeps (the form the app builds once) moves it, which blurs
 * it, and the move happens as soon as the new view takes the node, before that view replaces the old one.
 * A focused element the render replaced (a button of the view, rebuilt on every refresh) hands the focus to
 * its successor, the element with its id.
 */
export function keepingFocus(change: () => void): void {
  const doc = uiDocument(), focused = doc.activeElement;
  const start = focused?.selectionStart, end = focused?.selectionEnd;
  const direction = focused?.selectionDirection ?? undefined;
  const id = focused?.id;
  try {
    change();
  } finally {
    if (focused && doc.activeElement !== focused && focused.isConnected) {
      // No scrolling: the operator is where they were.
      focused.focus({ preventScroll: true });
      // Chromium keeps a moved input's caret; another browser's focus() may put it elsewhere.
      if (typeof start === "number" && typeof end === "number") {
        focused.setSelectionRange?.(start, end, direction);
      }
    } else if (focused && id && !focused.isConnected) {
      doc.getElementById(id)?.focus({ preventScroll: true });
    }
  }
}

/** A table in a box that scrolls sideways when the table is wider than the page, so the page never does. */
export function scrolling(table: UiElement): UiElement {
  return h("div", { class: "table-scroll" }, table);
}

/**
 * A table with a header row; `rows` of cells. An empty table says so in one row. It comes in its scrolling
 * box (see `scrolling`).
 */
export function table(headers: string[], rows: UiChild[][], empty = "Nothing to show", cls = ""): UiElement {
  const body = rows.length
    ? rows.map((r) => h("tr", {}, ...r.map((c) => h("td", {}, c))))
    : [h("tr", {}, h("td", { colspan: headers.length, class: "empty" }, empty))];
  return scrolling(h(
    "table",
    { class: cls },
    h("thead", {}, h("tr", {}, ...headers.map((t) => h("th", {}, t)))),
    h("tbody", {}, ...body),
  ));
}

/** One page of a longer list the API pages: which page, its size, how many in all, and a link to any page. */
export interface Paging {
  /** 1-based. */
  page: number;
  size: number;
  total: number;
  /** What the list holds, plural ("jobs", "tasks"). */
  noun: string;
  /** The hash that shows `page` of the same list. */
  hashOf: (page: number) => string;
}

/** Links to the first, previous, next and last pages around "tasks 101–200 of 10,000 · page 2 of 100". */
export function pagerView(p: Paging, where: string): UiElement {
  const pages = Math.max(1, Math.ceil(p.total / p.size));
  const first = (p.page - 1) * p.size;
  const link = (label: string, page: number, rel: string) =>
    page >= 1 && page <= pages && page !== p.page
      ? h("a", { href: p.hashOf(page), class: "page-link", "data-page": rel }, label)
      : h("span", { class: "page-link inactive", "data-page": rel, "aria-disabled": "true" }, label);
  const shown = p.total === 0
    ? `no ${p.noun}`
    : first >= p.total
    ? `past the last page (${count(pages)})`
    : `${p.noun} ${count(first + 1)}–${count(Math.min(first + p.size, p.total))} of ${count(p.total)}`;
  return h(
    "div",
    // Not a <nav>: the header's nav links are styled for a dark background.
    { class: `pager pager-${where}`, role: "navigation", "aria-label": `Pages of ${p.noun}` },
    link("« First", 1, "first"),
    link("‹ Previous", Math.min(p.page - 1, pages), "previous"),
    h("span", { class: "page-of" }, `${shown} · page ${count(p.page)} of ${count(pages)}`),
    link("Next ›", p.page + 1, "next"),
    link("Last »", pages, "last"),
  );
}

/** A whole number of the URL's `key` from 1 to `max`; anything else (absent, 0, 2.5, "x") is `otherwise`. */
export function wholeParam(p: URLSearchParams, key: string, max: number, otherwise: number): number {
  const v = p.get(key), n = Number(v);
  return v !== null && Number.isInteger(n) && n >= 1 && n <= max ? n : otherwise;
}

/**
 * A pool path that may wrap after each slash (a `<wbr>` there), which browsers do not break at by themselves:
 * a long path breaks between its pools before it is cut inside a name.
 */
export function pathView(path: string): UiElement {
  // "/Batch/Analytics" as "/Batch", "/Analytics": each line but the first starts with a slash.
  const parts = path.split(/(?=\/)/);
  return h("span", { class: "path" }, ...parts.flatMap((p, i) => i ? [h("wbr"), p] : [p]));
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

/**
 * An RFC 3339 time in UTC, as the CLI prints times, with its zone: "YYYY-MM-DD HH:MM:SS UTC"; absent as a
 * dash, one that is not a time as it is.
 */
export function when(t: string | undefined): string {
  if (!t) return "—";
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return t;
  return `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/**
 * A time as `when` writes it, in a <time> whose tooltip has it in ISO 8601 and in the browser's own zone
 * ("2026-11-28T05:02:03.000Z · your time 11/27/2026, 9:02:03 PM PST").
 */
export function timeView(t: string | undefined): UiElement | string {
  const text = when(t);
  const d = new Date(t ?? "");
  if (!t || Number.isNaN(d.getTime())) return text;
  const iso = d.toISOString();
  const local = d.toLocaleString(undefined, { timeZoneName: "short" });
  return h("time", { datetime: iso, title: `${iso} · your time ${local}` }, text);
}

/** A count with thousands separated by commas, whatever the browser's locale: 10000 as "10,000". */
export function count(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** A pool resource's value in its unit: cores, MB, or GPUs. */
export function resourceUnit(kind: string): string {
  return kind === "cpu" ? "cores" : kind === "gpu" ? "GPUs" : "MB";
}

export const DOM_CODE = [
  uiDocument,
  byId,
  h,
  keepingFocus,
  scrolling,
  table,
  pagerView,
  wholeParam,
  pathView,
  badge,
  stateTone,
  statsLine,
  num,
  when,
  timeView,
  count,
  resourceUnit,
];
