/** The web UI's stylesheet, inlined into the page (no fonts or images to fetch). */

export const UI_CSS = `
:root {
  --fg: #1d2330; --muted: #667085; --line: #e4e7ec; --bg: #f7f8fa; --card: #fff; --accent: #2457c5;
  --ok: #137a3a; --ok-bg: #e3f5e9; --done: #1f5fa8; --done-bg: #e4eefb; --bad: #b42318; --bad-bg: #fde8e6;
  --warn: #9a5b00; --warn-bg: #fff3d6; --off: #4b5565; --off-bg: #eceef2; --wait: #6941c6; --wait-bg: #f0ebfd;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  color: var(--fg); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
header { background: #151b2c; color: #eef1f6; padding: 0.6rem 1.25rem 0.9rem; }
.bar { display: flex; align-items: center; gap: 1.5rem; flex-wrap: wrap; }
h1 { font-size: 1.15rem; margin: 0; letter-spacing: 0.02em; }
nav { display: flex; gap: 0.25rem; }
nav a { color: #c9d1e3; text-decoration: none; padding: 0.3rem 0.7rem; border-radius: 6px; }
nav a:hover { background: #252d44; }
nav a.active { background: #2f3a58; color: #fff; }
.controls { margin-left: auto; display: flex; align-items: center; gap: 0.5rem; color: #aeb7cc; font-size: 0.85rem; }
button { font: inherit; font-size: 0.85rem; padding: 0.25rem 0.7rem; border-radius: 6px; cursor: pointer;
  border: 1px solid #c4cad6; background: #fff; color: var(--fg); }
button:hover:not(:disabled, [aria-disabled="true"]) { border-color: var(--accent); }
button:disabled, button[aria-disabled="true"] { opacity: 0.45; cursor: not-allowed; }
/*
 * Why an action is disabled: its button's description, out of sight until the button has the keyboard's focus,
 * then shown above it (a mouse user has the tooltip). Above, so a table's scrolling box does not cut it off
 * below its last row; in a table it ends at the button's right edge, for the actions are its last column.
 */
.action-why { position: relative; display: inline-flex; }
.action-why > .why { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%);
  white-space: nowrap; }
.action-why > button:focus-visible + .why { width: max-content; max-width: 22rem; height: auto; overflow: visible;
  clip-path: none; white-space: normal; left: 0; bottom: calc(100% + 0.3rem); z-index: 10; padding: 0.3rem 0.5rem;
  border-radius: 4px; background: var(--fg); color: #fff; font-size: 0.78rem; font-weight: normal; }
td .action-why > button:focus-visible + .why { left: auto; right: 0; }
button.action, button.details-toggle, button.queue-toggle, button.steps-toggle { white-space: nowrap; }
button.danger { border-color: #e6a7a0; color: var(--bad); }
button.primary { border-color: var(--accent); color: var(--accent); }
header button { background: #252d44; color: #eef1f6; border-color: #3b4666; }
.cards { display: flex; gap: 0.75rem; flex-wrap: wrap; margin-top: 0.75rem; }
.card { background: #1f2740; border-radius: 8px; padding: 0.4rem 0.8rem; min-width: 9rem; }
.card .k { font-size: 0.75rem; color: #aeb7cc; text-transform: uppercase; letter-spacing: 0.04em; }
.card .v { font-size: 1rem; display: flex; gap: 0.35rem; align-items: center; flex-wrap: wrap; }
main { padding: 1rem 1.25rem 3rem; }
h2 { font-size: 1.2rem; margin: 0.5rem 0 0.75rem; display: flex; align-items: center; gap: 0.5rem; }
h3 { font-size: 1rem; margin: 1.5rem 0 0.5rem; }
table { border-collapse: collapse; width: 100%; background: var(--card); border: 1px solid var(--line); }
th, td { text-align: left; padding: 0.35rem 0.6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 0.78rem; color: var(--muted); font-weight: 600; background: #fafbfc; white-space: nowrap; }
tbody.pool-group { border-top: 2px solid var(--line); }
td.pool { background: #fcfcfd; min-width: 14rem; }
td.depth-1 { padding-left: 1.75rem; } td.depth-2 { padding-left: 3rem; } td.depth-3 { padding-left: 4.25rem; }
td.depth-4 { padding-left: 5.5rem; } td.depth-5 { padding-left: 6.75rem; } td.depth-6 { padding-left: 8rem; }
/*
 * Cells wrap only between words: a state, a goal or a figure is never cut. A wide table scrolls in its own box
 * rather than widen the page. Only a name or an id (.long) may be cut anywhere, for it may be long and have no
 * space (a job name of 512 characters); it keeps a width of its own, so one that fits is not cut. So may a pool
 * path in the jobs list, as a last resort (see below).
 */
.table-scroll { overflow-x: auto; max-width: 100%; }
.table-scroll > table { min-width: 100%; }
h2, .long { overflow-wrap: anywhere; }
td:has(> .long) { min-width: 10rem; }
.path { overflow-wrap: normal; }
table.jobs td:first-child { min-width: 10rem; max-width: 24rem; }
table.hosts td, table.jobs td, table.tasks td, table.pools td, table.workflows td { white-space: nowrap; }
/*
 * Free text wraps between words; so do times (date, then time), a host's maintenance and labels, a job's task
 * counts and its pool's path, so the tables fit a desktop. A pool's cell wraps its path and why it waits in
 * its own column, never over the figures beside it.
 */
table.hosts td:has(> .long), table.jobs td:has(> .long), table.tasks td:has(> .long), table.pools td.pool,
  table.tasks td:nth-child(n+7):nth-child(-n+11), table.hosts td:has(> .labels),
  table.hosts td:has(> .maintenance), table.jobs td:has(> .path), table.jobs td:has(> time),
  table.jobs td:has(> .stats) { white-space: normal; }
table.tasks td:nth-child(10), table.tasks td:nth-child(11) { min-width: 10rem; }
td.pool { max-width: 28rem; }
/* A long pool path breaks before a slash or between words first; only a name wider than the column is cut. */
table.jobs .path { overflow-wrap: anywhere; }
/*
 * The hosts table fits a 1280-px window, its actions in view: tighter cells, headers wrapped between words,
 * labels cut to three lines (each one is in the tooltip) and small action buttons one above the other.
 */
table.hosts th, table.hosts td { padding: 0.35rem 0.45rem; }
table.hosts th { white-space: normal; }
table.hosts td:has(> .long) { min-width: 7rem; }
table.hosts .labels { display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 3; overflow: hidden;
  overflow-wrap: anywhere; min-width: 10rem; }
table.hosts .actions { flex-direction: column; align-items: flex-start; gap: 0.2rem; margin: 0; }
table.hosts button.action { padding: 0.05rem 0.45rem; font-size: 0.78rem; }
button.queue-toggle { margin-top: 0.35rem; padding: 0.05rem 0.5rem; font-size: 0.8rem; }
tr.pool-queue > td { background: #fafbfc; padding: 0.5rem 0.75rem 0.75rem 2rem; }
.queue + .queue { margin-top: 0.75rem; }
.queue-name { margin-bottom: 0.25rem; }
table.gangs { width: auto; min-width: 24rem; }
table.gangs td.position { text-align: right; font-variant-numeric: tabular-nums; width: 4.5rem; }
.gang-job .instances { font-variant-numeric: tabular-nums; }
.host-pools { display: flex; gap: 0.4rem; flex-wrap: wrap; align-items: center; margin: 0 0 0.6rem;
  font-size: 0.85rem; }
.host-pool { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 0.1rem 0.5rem; }
.host-pool.empty { color: var(--muted); }
.host-pool-entry { display: inline-flex; gap: 0.2rem; align-items: center; }
.host-pool-entry button.action { padding: 0.05rem 0.45rem; font-size: 0.78rem; }
#confirm select, #confirm input { font: inherit; padding: 0.15rem 0.3rem; }
#confirm input { width: 5rem; }
#confirm input[aria-invalid="true"] { border-color: var(--bad); outline-color: var(--bad); }
table.secrets { width: auto; min-width: 28rem; }
td.empty { color: var(--muted); text-align: center; padding: 1rem; }
code { font: 0.82rem ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
a { color: var(--accent); }
.muted { color: var(--muted); }
.wait { color: #9a5b00; max-width: 32rem; font-size: 0.85rem; margin-top: 0.25rem; overflow-wrap: anywhere; }
.note { font-size: 0.85rem; }
.header .muted, header .muted { color: #aeb7cc; }
.badge, .stat { display: inline-block; border-radius: 999px; padding: 0.05rem 0.55rem; font-size: 0.75rem;
  font-weight: 600; white-space: nowrap; }
.stats { display: inline-flex; gap: 0.25rem; flex-wrap: wrap; }
.ok { color: var(--ok); background: var(--ok-bg); } .done { color: var(--done); background: var(--done-bg); }
.bad { color: var(--bad); background: var(--bad-bg); } .warn { color: var(--warn); background: var(--warn-bg); }
.off { color: var(--off); background: var(--off-bg); } .wait { color: var(--wait); background: var(--wait-bg); }
.goal { font-size: 0.85rem; font-weight: normal; }
.actions { display: flex; gap: 0.4rem; flex-wrap: wrap; margin: 0.25rem 0; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1.25rem; margin: 0;
  background: var(--card); border: 1px solid var(--line); padding: 0.75rem 1rem; border-radius: 6px; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; }
.workflow { display: grid; gap: 0.5rem; margin-bottom: 0.75rem; }
progress { width: 10rem; vertical-align: middle; }
.workflow-line { display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; margin: 0 0 0.5rem; }
.failed-note { color: var(--bad); font-weight: 600; margin: 0.25rem 0 0.5rem; }
.version-note { color: var(--warn); background: var(--warn-bg); border: 1px solid #f0c36d; border-radius: 6px;
  padding: 0.4rem 0.75rem; margin: 0 0 0.5rem; font-size: 0.85rem; }
.other-version { color: var(--warn); font-weight: 600; }
table.instances td:nth-child(-n+3) { white-space: nowrap; }
tr.instance.failed td { background: var(--bad-bg); }
tr.instance.failed td:first-child { box-shadow: inset 3px 0 0 var(--bad); font-weight: 600; }
button.steps-toggle { padding: 0.05rem 0.5rem; font-size: 0.8rem; }
tr.steps td { background: #fafbfc; padding-left: 2rem; }
.steps-list { margin: 0; padding: 0; list-style: none; display: grid; gap: 0.2rem; }
.back { margin: 0; }
#errors { background: var(--bad-bg); color: var(--bad); border: 1px solid #f4b8b0; border-radius: 6px;
  padding: 0.5rem 0.8rem; margin-bottom: 0.75rem; }
.error-line { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.82rem; }
#login, #confirm, .result { display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; border-radius: 6px;
  padding: 0.6rem 0.8rem; margin-bottom: 0.75rem; border: 1px solid var(--line); background: var(--card); }
#confirm { border-color: #f0c36d; background: var(--warn-bg); }
#confirm .why-note { color: var(--bad); font-size: 0.85rem; }
#login input { font: inherit; padding: 0.2rem 0.4rem; }
.result.ok { border-color: #9fd8b1; } .result.error { border-color: #f4b8b0; } .result.info { color: var(--muted); }
.result #result-close { margin-left: auto; }
.toolbar { margin-bottom: 0.5rem; }
#filter { font: inherit; padding: 0.25rem 0.5rem; width: 22rem; }
#job-query { display: flex; gap: 0.4rem; flex-wrap: wrap; align-items: center; }
#job-query input, #job-query select { font: inherit; padding: 0.2rem 0.4rem; }
#job-query input { width: 12rem; }
#job-query #job-name { width: 16rem; }
.pager { display: flex; gap: 0.6rem; align-items: center; flex-wrap: wrap; margin: 0.4rem 0; font-size: 0.85rem; }
.page-link.inactive { color: var(--muted); opacity: 0.6; }
.page-of { color: var(--muted); }
.task-controls { display: flex; gap: 0.5rem 1.5rem; align-items: center; flex-wrap: wrap; margin: 0 0 0.25rem;
  font-size: 0.85rem; }
.task-filter, .task-sizes { display: inline-flex; gap: 0.3rem; align-items: center; flex-wrap: wrap; }
a.state-chip { display: inline-block; border-radius: 999px; padding: 0.05rem 0.55rem; font-size: 0.75rem;
  font-weight: 600; white-space: nowrap; text-decoration: none; border: 1px solid transparent; }
a.state-chip.all { color: var(--fg); background: var(--off-bg); }
a.state-chip[aria-current] { border-color: currentColor; box-shadow: 0 0 0 1px currentColor; }
#task-query { display: flex; gap: 0.4rem; flex-wrap: wrap; align-items: center; margin: 0.25rem 0; }
#task-query input { font: inherit; font-size: 0.85rem; padding: 0.2rem 0.4rem; width: 16rem; }
.task-sizes .size { padding: 0 0.2rem; }
.task-sizes .size.current { font-weight: 600; }
th a.sort-link { color: inherit; text-decoration: none; }
th a.sort-link:hover { color: var(--accent); text-decoration: underline; }
th[aria-sort] { color: var(--fg); }
tr.task-details > td { background: #fafbfc; padding: 0.5rem 0.75rem 0.75rem 2rem; white-space: normal; }
/* The details stay in view, as wide as the window at most, when the tasks table scrolls sideways. */
tr.task-details > td > div { position: sticky; left: 2rem; max-width: calc(100vw - 5rem); }
.task-events, .task-sandbox { margin-bottom: 0.75rem; }
h4 { font-size: 0.9rem; margin: 0.25rem 0 0.35rem; }
table.events { width: auto; min-width: 40rem; }
table.events td { white-space: normal; }
table.events td:nth-child(-n+4) { white-space: nowrap; }
.log + .log { margin-top: 0.5rem; }
.log-head { font-size: 0.85rem; margin-bottom: 0.2rem; }
pre.log-text { margin: 0; padding: 0.4rem 0.6rem; background: #11151f; color: #e6e9ef; border-radius: 6px;
  max-height: 24rem; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere;
  font: 0.8rem/1.35 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.error-note { color: var(--bad); font-size: 0.85rem; margin: 0.2rem 0; }
button.details-toggle { padding: 0.05rem 0.5rem; font-size: 0.8rem; }
.card .v .aside { font-size: 0.75rem; color: #aeb7cc; flex-basis: 100%; }
.stale { opacity: 0.55; }
.description { white-space: pre-wrap; }
ul.overrides { margin: 0; padding-left: 1rem; }
table.overrides { width: auto; min-width: 28rem; }
table.overrides td { white-space: normal; }
table.overrides td:first-child { white-space: nowrap; }
[hidden] { display: none !important; }
`;
