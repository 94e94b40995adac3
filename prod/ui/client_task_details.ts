/**
 * Browser code of the web UI, part 3d: a task's events and sandbox logs, opened under its row in the tasks
 * table. They come from the calls the CLI's `task events` and `task logs` make: TaskManager's GetPodEvents
 * (the task's states in its latest runs, newest first) and BrowseSandbox, then the run's stdout and stderr
 * from the sandbox endpoint it points to. The page shows the end of each file and links to the whole.
 * Runs in the browser (see client_dom.ts for the rules).
 */
import type { ApiCall, IdValue, PodEventJson, SandboxFileLoad, TaskDetails } from "./api_types.ts";
import { errorText, sandboxPath } from "./client_api.ts";
import { badge, count, h, table, timeView, type UiChild, type UiElement } from "./client_dom.ts";
import { Rpc } from "./client_views.ts";

/**
 * How much of a sandbox file the page shows: its last lines, at most so many characters of them, out of the
 * file's last TAIL_BYTES, all that is read of it (a file of any size costs the page that much).
 */
export class TaskLog {
  static readonly TAIL_LINES = 100;
  static readonly TAIL_CHARS = 16_000;
  static readonly TAIL_BYTES = 64 << 10;
  static readonly FILES: readonly ("stdout" | "stderr")[] = ["stdout", "stderr"];
}

/** What loading a task's details needs of the API client (UiApi has both). */
export interface TaskDetailsApi {
  call: ApiCall;
  sandboxTail(
    taskId: string,
    file: string,
    agentId: string | undefined,
    maxBytes: number,
  ): Promise<{ text: string; sizeBytes: number; offsetBytes: number }>;
}

/**
 * Loads a task's events and its current run's stdout and stderr; each part that fails keeps its error, shown
 * in its place (a task not yet launched has no sandbox: that is no error of the page).
 */
export async function loadTaskDetails(
  api: TaskDetailsApi,
  jobId: string,
  instanceId: number,
): Promise<TaskDetails> {
  const task = { jobId: { value: jobId }, instanceId };
  const out: TaskDetails = {};
  const events = api.call<{ result?: PodEventJson[] }>(`${Rpc.TASK}::GetPodEvents`, task).then(
    (r) => {
      out.events = r.result ?? [];
    },
    (e) => {
      out.eventsError = errorText(e);
    },
  );
  const read = (taskId: string, file: string, agentId?: string): Promise<SandboxFileLoad> =>
    api.sandboxTail(taskId, file, agentId, TaskLog.TAIL_BYTES).then(
      (t) => ({ text: t.text, ...(t.offsetBytes > 0 ? { sizeBytes: t.sizeBytes } : {}) }),
      (e) => ({ error: errorText(e) }),
    );
  const sandbox = api.call<{ taskId: IdValue; agentId?: IdValue; hostname?: string }>(
    `${Rpc.TASK}::BrowseSandbox`,
    task,
  ).then(
    async (r) => {
      const run = { taskId: r.taskId.value, agentId: r.agentId?.value, hostname: r.hostname };
      out.sandbox = run;
      [out.stdout, out.stderr] = await Promise.all(
        TaskLog.FILES.map((f) => read(run.taskId, f, run.agentId)),
      );
    },
    (e) => {
      out.sandboxError = errorText(e);
    },
  );
  await Promise.all([events, sandbox]);
  return out;
}

/** The end of a file: its last `maxLines` lines, cut to the last `maxChars` characters at a line's start. */
export function logTail(
  text: string,
  maxLines: number = TaskLog.TAIL_LINES,
  maxChars: number = TaskLog.TAIL_CHARS,
): { text: string; lines: number; shown: number } {
  const body = text.endsWith("\n") ? text.slice(0, -1) : text;
  if (!body) return { text: "", lines: 0, shown: 0 };
  const all = body.split("\n");
  let lines = all.slice(-maxLines);
  while (lines.length > 1 && lines.join("\n").length > maxChars) lines = lines.slice(1);
  let shown = lines.join("\n");
  // One line longer than the bound on its own: its end.
  if (shown.length > maxChars) shown = `…${shown.slice(-maxChars)}`;
  return { text: shown, lines: all.length, shown: lines.length };
}

/** A size as the page shows it: `812 B`, `64.0 KiB`, `9.5 MiB`, `1.2 GiB`. */
export function bytesText(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}

/** A run's number from its Mesos task id `<jobId>-<instanceId>-<runId>`. */
export function runOf(taskId: string | undefined): string {
  const m = /-(\d+)$/.exec(taskId ?? "");
  return m ? m[1] : "—";
}

function eventsView(d: TaskDetails): UiElement {
  const parts: UiChild[] = [h("h4", {}, "Events")];
  if (d.eventsError) {
    parts.push(h("p", { class: "error-note" }, `Events could not be loaded: ${d.eventsError}`));
  } else {
    const events = d.events ?? [];
    parts.push(
      h("p", { class: "muted note" }, "Newest first, over the task's latest runs (as `task events`)."),
      table(
        ["Time", "Run", "State", "Host", "Message", "Reason"],
        events.map((e) => [
          timeView(e.timestamp),
          h("span", { title: e.taskId?.value ?? "" }, runOf(e.taskId?.value)),
          badge(e.actualState),
          e.hostname || "—",
          e.message ?? "",
          e.reason ?? "",
        ]),
        "No events recorded",
        "events",
      ),
    );
  }
  return h("div", { class: "task-events" }, ...parts);
}

function fileView(
  file: string,
  run: { taskId: string; agentId?: string },
  load?: SandboxFileLoad,
): UiElement {
  const link = h(
    "a",
    {
      href: sandboxPath(run.taskId, file, run.agentId),
      target: "_blank",
      rel: "noopener",
      class: "whole-file",
      title: "The whole file from the server (with sign-in on, the browser asks for the user and password)",
    },
    "whole file",
  );
  const head = (...note: UiChild[]) => h("div", { class: "log-head" }, h("strong", {}, file), ...note);
  if (!load || load.error !== undefined) {
    return h(
      "div",
      { class: "log", "data-file": file },
      head(" ", link),
      h("p", { class: "error-note" }, `${file} could not be loaded: ${load?.error ?? "not loaded"}`),
    );
  }
  const tail = logTail(load.text ?? "");
  const lines = (n: number) => `${count(n)} line${n === 1 ? "" : "s"}`;
  // Only the file's end was read: its size says how much more the whole file has.
  const note = load.sizeBytes !== undefined
    ? `the last ${lines(tail.shown)} of ${bytesText(load.sizeBytes)} (only its end is read)`
    : tail.lines === 0
    ? "empty"
    : tail.shown < tail.lines
    ? `the last ${count(tail.shown)} of ${count(tail.lines)} lines`
    : lines(tail.lines);
  return h(
    "div",
    { class: "log", "data-file": file },
    head(h("span", { class: "muted" }, ` · ${note} · `), link),
    tail.lines ? h("pre", { class: "log-text" }, tail.text) : null,
  );
}

function sandboxView(d: TaskDetails): UiElement {
  const run = d.sandbox;
  if (!run) {
    return h(
      "div",
      { class: "task-sandbox" },
      h("h4", {}, "Sandbox"),
      h("p", { class: "error-note" }, `No sandbox to read: ${d.sandboxError ?? "not loaded"}`),
    );
  }
  return h(
    "div",
    { class: "task-sandbox" },
    h(
      "h4",
      {},
      `Sandbox of run ${runOf(run.taskId)}`,
      h("span", { class: "muted" }, run.hostname ? ` on ${run.hostname}` : ""),
    ),
    ...TaskLog.FILES.map((f) => fileView(f, run, d[f])),
  );
}

/** A task's details under its row, across the table's `columns`; undefined until first loaded. */
export function taskDetailsRow(instanceId: number, d: TaskDetails | undefined, columns: number): UiElement {
  const body = d
    ? [eventsView(d), sandboxView(d)]
    : [h("p", { class: "muted" }, "Loading the task's events and logs…")];
  return h(
    "tr",
    { class: "task-details", "data-details-of": instanceId },
    h("td", { colspan: columns }, ...body),
  );
}

export const TASK_DETAILS_CODE = [
  TaskLog,
  loadTaskDetails,
  logTail,
  bytesText,
  runOf,
  eventsView,
  fileView,
  sandboxView,
  taskDetailsRow,
];
