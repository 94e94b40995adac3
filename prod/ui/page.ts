/**
 * The operator's web UI: one self-contained page (inline CSS and script, nothing fetched but the API),
 * built from the client functions' own source, and the handler that serves it at `/ui/`.
 */
import { createHash } from "node:crypto";
import { isTerminalJobState, JOB_STATES, type JobState } from "../../core/model/states.ts";
import type { UiConfig } from "./api_types.ts";
import { API_CODE } from "./client_api.ts";
import { APP_CODE } from "./client_app.ts";
import { CLUSTER_CODE } from "./client_cluster.ts";
import { DOM_CODE } from "./client_dom.ts";
import { JOB_CONFIG_CODE } from "./client_job_config.ts";
import { JOB_LIST_CODE, JobList } from "./client_job_list.ts";
import { POOL_QUEUE_CODE } from "./client_pool_queue.ts";
import { TASK_DETAILS_CODE } from "./client_task_details.ts";
import { TASK_CODE } from "./client_tasks.ts";
import { VIEW_CODE } from "./client_views.ts";
import { WORKFLOW_CODE } from "./client_workflow.ts";
import { UI_CSS } from "./style.ts";

/** How often the page reloads its data unless paused (`?refresh=SECONDS` overrides it). */
export const DEFAULT_REFRESH_MS = 3000;

// deno-lint-ignore ban-types
type ClientCode = Function;

/** Every client function and class, in the order the script declares them (classes before their use). */
export const CLIENT_CODE: readonly ClientCode[] = [
  ...DOM_CODE,
  ...API_CODE,
  ...VIEW_CODE,
  ...JOB_CONFIG_CODE,
  ...TASK_CODE,
  ...TASK_DETAILS_CODE,
  ...WORKFLOW_CODE,
  ...JOB_LIST_CODE,
  ...POOL_QUEUE_CODE,
  ...CLUSTER_CODE,
  ...APP_CODE,
];

/** Peloton's job states but UNKNOWN (a job is never stored in it). */
const JOB_STATE_NAMES = (Object.keys(JOB_STATES) as JobState[]).filter((s) => s !== "UNKNOWN");

export const UI_CONFIG: UiConfig = {
  refreshMs: DEFAULT_REFRESH_MS,
  jobStates: JOB_STATE_NAMES,
  activeJobStates: JOB_STATE_NAMES.filter((s) => !isTerminalJobState(s)),
};

/** The page's script: each client function's source (Deno has already stripped its types), then the start. */
export function clientScript(): string {
  const body = CLIENT_CODE.map((f) => f.toString()).join("\n\n");
  const script = `"use strict";\n${body}\n\nnew UiApp(${JSON.stringify(UI_CONFIG)}).start();\n`;
  if (/<\/script/i.test(script)) throw new Error("Cannot inline the UI script: it contains </script");
  return script;
}

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;

/** The job list's filters and page size; the app fills them from the URL and reads them on submit. */
function jobQueryForm(): string {
  const option = (value: string | number, label: string, selected = false) =>
    `<option value="${value}"${selected ? " selected" : ""}>${label}</option>`;
  const states = [
    option("", "Any state"),
    option("ACTIVE", "Active (not finished)"),
    ...JOB_STATE_NAMES.map((s) => option(s, s)),
  ];
  const sizes = JobList.SIZES.map((n) => option(n, `${n} a page`, n === JobList.DEFAULT_SIZE));
  return `<form id="job-query" hidden>
    <input id="job-name" type="search" placeholder="Name (part, any case)" aria-label="Job name"
      title="A part of the job name, in any case (é, ж included).">
    <input id="job-owner" type="search" placeholder="Owning team (exact)" aria-label="Owning team">
    <select id="job-state" aria-label="Job state">${states.join("")}</select>
    <select id="job-size" aria-label="Jobs a page">${sizes.join("")}</select>
    <button type="submit">Apply</button>
  </form>`;
}

function skeleton(css: string, script: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Peloton</title>
<link rel="icon" href="data:,">
<style>${css}</style>
</head>
<body>
<header id="page-header">
  <div class="bar">
    <h1>Peloton</h1>
    <nav>
      <a id="nav-jobs" href="#/jobs">Jobs</a>
      <a id="nav-pools" href="#/pools">Resource pools</a>
      <a id="nav-hosts" href="#/hosts">Hosts</a>
    </nav>
    <div class="controls">
      <span id="status">Loading…</span>
      <button id="refresh-now" type="button">Refresh now</button>
      <button id="pause" type="button" aria-pressed="false">Pause auto-refresh</button>
      <button id="sign-out" type="button" hidden>Sign out</button>
    </div>
  </div>
  <section id="summary" aria-label="Cluster summary"></section>
</header>
<main>
  <div id="errors" role="alert" hidden></div>
  <form id="login" hidden>
    <strong>Sign in</strong>
    <span id="login-why" class="muted"></span>
    <input id="username" name="username" autocomplete="username" placeholder="user" required>
    <input id="password" name="password" type="password" autocomplete="current-password" placeholder="password">
    <button type="submit" class="primary">Sign in</button>
  </form>
  <div id="confirm" role="dialog" aria-modal="true" aria-labelledby="confirm-text" hidden>
    <span id="confirm-text"></span>
    <label id="confirm-choice" hidden><span id="confirm-choice-label"></span>
      <select id="confirm-select"></select></label>
    <label id="confirm-amount" hidden><span id="confirm-amount-label"></span>
      <input id="confirm-number" type="number" min="1" step="1" inputmode="numeric" required></label>
    <button id="confirm-yes" type="button" aria-describedby="confirm-why">Confirm</button>
    <button id="confirm-no" type="button">Cancel</button>
    <span id="confirm-why" class="why-note" hidden></span>
  </div>
  <div id="result" class="result" role="status" hidden>
    <span id="result-text"></span>
    <button id="result-close" type="button" aria-label="Dismiss">Dismiss</button>
  </div>
  <div class="toolbar" id="toolbar">
    <input id="filter" type="search" placeholder="Filter by host, agent, state, pool, label…"
      aria-label="Filter hosts" autocomplete="off" hidden>
    ${jobQueryForm()}
  </div>
  <div id="view"></div>
  <noscript>This page needs JavaScript.</noscript>
</main>
<script>${script}</script>
</body>
</html>
`;
}

let cached: { html: string; csp: string } | undefined;

/** The page and its Content-Security-Policy: only this script and style run, only this origin is called. */
export function uiPage(): { html: string; csp: string } {
  if (cached) return cached;
  const script = clientScript();
  const csp = [
    "default-src 'none'",
    `script-src ${sha256(script)}`,
    `style-src ${sha256(UI_CSS)}`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  cached = { html: skeleton(UI_CSS, script), csp };
  return cached;
}

/**
 * Answers the UI's paths: `GET /ui/` the page, `/` and `/ui` a redirect to it; undefined for any other
 * request. The page holds no data, so it is served without credentials; its API calls carry them.
 */
export function serveUi(req: Request, url: URL): Response | undefined {
  if (req.method !== "GET" && req.method !== "HEAD") return undefined;
  if (url.pathname === "/" || url.pathname === "/ui") {
    return new Response(null, { status: 302, headers: { location: "/ui/" } });
  }
  if (url.pathname !== "/ui/") return undefined;
  const { html, csp } = uiPage();
  return new Response(req.method === "HEAD" ? null : html, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": csp,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  });
}
