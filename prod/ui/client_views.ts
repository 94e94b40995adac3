/**
 * Browser code of the web UI, part 3: a job's view (config and workflow; the job list is in client_job_list.ts,
 * each instance's progress in a workflow in client_workflow.ts, the tasks table in client_tasks.ts) and the
 * operator actions it offers. Each view is a function of the data one refresh loaded; actions are described
 * as data (`UiAction`) and carried out by the app after the operator confirms.
 * Runs in the browser (see client_dom.ts for the rules).
 */
import type {
  ActionPicks,
  JobInfoJson,
  RespoolInfoJson,
  RowToggle,
  SecretJson,
  Snapshot,
  TaskListQuery,
  UiAction,
  UpdateInfoJson,
} from "./api_types.ts";
import { badge, count, h, table, timeView, type UiChild, type UiElement } from "./client_dom.ts";
import { configView } from "./client_job_config.ts";
import { taskListHash, tasksView } from "./client_tasks.ts";
import { instanceProgressView } from "./client_workflow.ts";

/** The API procedures the UI calls: the ones the CLI uses for the same things. */
export class Rpc {
  static readonly JOB = "peloton.api.job.JobManager";
  static readonly TASK = "peloton.api.task.TaskManager";
  static readonly UPDATE = "peloton.api.v0.update.svc.UpdateService";
  static readonly STATELESS = "peloton.api.v1alpha.job.stateless.svc.JobService";
  static readonly RESPOOL = "peloton.api.respool.ResourceManager";
  /** Private in Peloton; served through the API for `peloton resmgr tasks` and the pools view's queues. */
  static readonly RESMGR = "peloton.private.resmgr.ResourceManagerService";
  static readonly HOST = "peloton.api.v0.host.svc.HostService";
}

export type Act = (a: UiAction) => void;

export function isTerminalJob(state: string | undefined): boolean {
  return state === "SUCCEEDED" || state === "FAILED" || state === "KILLED" || state === "DELETED";
}

export function isTerminalUpdate(state: string): boolean {
  return state === "SUCCEEDED" || state === "ABORTED" || state === "FAILED" || state === "ROLLED_BACK";
}

/**
 * An action button's id, from its accessible name: the same button in the view a refresh rebuilds has the
 * same id, so the focus and the confirm step's return find it again.
 */
export function actionId(a: UiAction): string {
  return `action:${encodeURIComponent(a.name ?? a.label)}`;
}

/**
 * An action's button. A disabled one is marked `aria-disabled` rather than `disabled`, which Tab skips: it
 * keeps the focus, so a keyboard user reaches it and learns why it is disabled, from its description (read
 * out) and from the reason beside it (shown while it has the focus), as a mouse user does from its tooltip.
 * Pressing it does nothing.
 */
export function actionButton(a: UiAction, act: Act): UiElement {
  const id = actionId(a), why = a.disabled ? a.disabledWhy : undefined;
  const button = h("button", {
    type: "button",
    id,
    class: a.danger ? "action danger" : "action",
    "aria-disabled": a.disabled ? "true" : undefined,
    "aria-describedby": why ? `${id}:why` : undefined,
    title: why,
    "data-action": a.label,
    "aria-label": a.name,
    onclick: () => {
      if (!a.disabled) act(a);
    },
  }, a.label);
  if (!why) return button;
  return h("span", { class: "action-why" }, button, h("span", { class: "why", id: `${id}:why` }, why));
}

/** An action's name for its confirm button and result line: its label without the "…" that says it asks more. */
export function actionVerb(a: UiAction): string {
  return a.label.replace(/…$/, "");
}

/**
 * The body an action sends without a `prepare`: its own, with the pick of its choice as that choice's field.
 */
export function actionBody(a: UiAction, picks: ActionPicks = {}): Record<string, unknown> {
  return a.choice ? { ...a.body, [a.choice.field]: picks.choice } : a.body;
}

/** An amount typed in the confirm step: a whole number from 1 ("3", " 3 "); anything else is undefined. */
export function wholeAmount(text: string): number | undefined {
  const t = text.trim(), n = Number(t);
  return /^\d+$/.test(t) && n >= 1 && Number.isSafeInteger(n) ? n : undefined;
}

/** Pool id → path, for showing a job's pool by name. */
export function poolPaths(pools: RespoolInfoJson[] | undefined): Map<string, string> {
  return new Map((pools ?? []).map((p) => [p.id.value, p.path.value]));
}

/** Whether any of `cells` contains `filter` (case-insensitive); an empty filter matches everything. */
export function matches(filter: string, cells: (string | number | undefined)[]): boolean {
  const f = filter.trim().toLowerCase();
  return !f || cells.some((c) => c !== undefined && String(c).toLowerCase().includes(f));
}

/** A definition list of label → value. */
export function facts(pairs: [string, UiChild][]): UiElement {
  return h("dl", { class: "facts" }, ...pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? "—")]));
}

/**
 * Why a job cannot be stopped, or undefined if it can. A job has ended when its goal has too: a service in a
 * crash loop, FAILED while its goal RUNNING restarts its tasks, has not, and stopping it is what ends it (as
 * the CLI's `job stop` has it).
 */
export function whyNoStop(info: JobInfoJson): string | undefined {
  const { state, goalState } = info.runtime;
  if (isTerminalJob(state) && (!goalState || isTerminalJob(goalState))) {
    return `Job has ended (${state}): there is nothing to stop`;
  }
  if (info.runtime.goalState === "KILLED") return "Job is being stopped already (goal KILLED)";
  return undefined;
}

/**
 * Why Start would start none of a job's tasks, or undefined if it may start some. TaskManager's Start starts
 * the tasks that were stopped (goal KILLED); a batch job that ended FAILED or SUCCEEDED without a stop has
 * none, and the API answers "0 started" for it and leaves it as it is (a stopped one, goal KILLED, does run
 * again).
 */
export function whyNoStart(info: JobInfoJson): string | undefined {
  const { state, goalState } = info.runtime;
  if (goalState === "KILLED") return undefined;
  if (info.config.type === "BATCH" && (state === "FAILED" || state === "SUCCEEDED")) {
    return `Batch job has ended (${state}) and was not stopped: Start starts stopped tasks only, ` +
      "so it would start none";
  }
  // Tasks on their way to running or running: Start has nothing to start (it answers "0 started").
  const going = ["PENDING", "READY", "PLACING", "PLACED", "LAUNCHING", "LAUNCHED", "STARTING", "RUNNING"];
  const stats = Object.entries(info.runtime.taskStats ?? {}).filter(([, n]) => n > 0);
  const all = stats.reduce((s, [, n]) => s + n, 0);
  if (all > 0 && all >= info.config.instanceCount && stats.every(([s]) => going.includes(s))) {
    const which = stats.map(([s, n]) => `${s} ${count(n)}`).join(", ");
    return `Every task is running or starting already (${which}): Start starts stopped tasks only, so it ` +
      "would start none";
  }
  return undefined;
}

/** A workflow that Stop would abort: one that has not ended (rolling forward or back, paused, initialized). */
export function workflowStopAborts(info: JobInfoJson, updates: UpdateInfoJson[] | undefined): string {
  const u = updates && activeUpdate(info, updates);
  if (!u) return "";
  const s = u.status, total = s.numTasksDone + s.numTasksFailed + s.numTasksRemaining;
  return ` Its ${u.type} workflow ${u.updateId.value} (${s.state}, ${s.numTasksDone} of ${total} instances ` +
    "done) will be aborted.";
}

/** The job's Stop and Start; `updates` are its workflows, the one in progress named in Stop's question. */
export function jobActions(info: JobInfoJson, updates?: UpdateInfoJson[]): UiAction[] {
  const id = info.id.value, name = info.config.name;
  const instances = (r: Record<string, unknown>, key: string) => {
    const n = ((r[key] as number[] | undefined) ?? []).length;
    return `${count(n)} instance${n === 1 ? "" : "s"}`;
  };
  const noStop = whyNoStop(info), noStart = whyNoStart(info);
  return [
    {
      label: "Stop job",
      question:
        `Stop every task of job ${name} (${id})? Running tasks get SIGTERM, then SIGKILL after their ` +
        `grace period.${workflowStopAborts(info, updates)}`,
      procedure: `${Rpc.TASK}::Stop`,
      body: { jobId: { value: id } },
      describe: (r) => `Job ${name}: stopping ${instances(r, "stoppedInstanceIds")}`,
      disabled: noStop !== undefined,
      disabledWhy: noStop,
      danger: true,
    },
    {
      label: "Start job",
      question: `Start the stopped tasks of job ${name} (${id})?`,
      procedure: `${Rpc.TASK}::Start`,
      body: { jobId: { value: id } },
      describe: (r) => `Job ${name}: starting ${instances(r, "startedInstanceIds")}`,
      disabled: noStart !== undefined,
      disabledWhy: noStart,
    },
  ];
}

export function workflowActions(u: UpdateInfoJson): UiAction[] {
  const id = u.updateId.value, state = u.status.state;
  /** `why` is the reason it is disabled, undefined when it is not. */
  const control = (verb: string, method: string, why: string | undefined, danger = false): UiAction => ({
    label: `${verb[0].toUpperCase()}${verb.slice(1)} workflow`,
    question: `${verb[0].toUpperCase()}${verb.slice(1)} ${u.type} workflow ${id} (now ${state})?`,
    procedure: `${Rpc.UPDATE}::${method}`,
    body: { updateId: { value: id } },
    describe: () => `Workflow ${id}: ${verb} requested`,
    disabled: why !== undefined,
    disabledWhy: why,
    danger,
  });
  const ended = isTerminalUpdate(state) ? `Workflow has ended (${state})` : undefined;
  return [
    control("pause", "PauseUpdate", ended ?? (state === "PAUSED" ? "Workflow is paused already" : undefined)),
    control(
      "resume",
      "ResumeUpdate",
      ended ??
        (state !== "PAUSED" ? `Workflow is not paused (${state}): there is nothing to resume` : undefined),
    ),
    control("abort", "AbortUpdate", ended, true),
  ];
}

/** The job's workflow in progress: the one its runtime names, else the newest that has not ended. */
export function activeUpdate(info: JobInfoJson, updates: UpdateInfoJson[]): UpdateInfoJson | undefined {
  const named = info.runtime.updateID?.value;
  return updates.find((u) => u.updateId.value === named && !isTerminalUpdate(u.status.state)) ??
    updates.find((u) => !isTerminalUpdate(u.status.state));
}

export function workflowView(info: JobInfoJson, updates: UpdateInfoJson[] | undefined, act: Act): UiElement {
  if (!updates) return h("p", { class: "muted" }, "Workflows could not be loaded (see the error above).");
  const active = activeUpdate(info, updates);
  const parts: UiChild[] = [];
  if (active) {
    const s = active.status;
    const total = s.numTasksDone + s.numTasksFailed + s.numTasksRemaining;
    parts.push(
      h(
        "div",
        { class: "workflow", id: "active-workflow" },
        facts([
          ["Workflow", h("code", {}, active.updateId.value)],
          ["Type", active.type],
          ["State", badge(s.state)],
          [
            "Progress",
            h(
              "span",
              {},
              h("progress", { value: s.numTasksDone, max: Math.max(total, 1) }),
              ` ${s.numTasksDone} of ${total} instances done, ${s.numTasksFailed} failed, ${s.numTasksRemaining} remaining`,
            ),
          ],
          ["In progress now", (s.instancesCurrent ?? []).join(", ") || "—"],
          ["Batch size", active.config?.batchSize],
          [
            "Config version",
            active.prevConfigVersion === undefined
              ? active.configVersion
              : `${active.prevConfigVersion} → ${active.configVersion}`,
          ],
          ["Created", timeView(active.creationTime)],
          ["Updated", timeView(active.updateTime)],
        ]),
        h("div", { class: "actions" }, ...workflowActions(active).map((a) => actionButton(a, act))),
      ),
    );
  } else parts.push(h("p", { class: "muted", id: "active-workflow" }, "No workflow in progress."));
  if (updates.length) {
    parts.push(table(
      ["Workflow", "Type", "State", "Done", "Failed", "Remaining", "Created", "Completed"],
      updates.map((u) => [
        h("code", {}, u.updateId.value),
        u.type,
        badge(u.status.state),
        u.status.numTasksDone,
        u.status.numTasksFailed,
        u.status.numTasksRemaining,
        timeView(u.creationTime),
        timeView(u.completionTime),
      ]),
      "",
      "workflows",
    ));
  }
  return h("section", {}, h("h3", {}, "Workflow"), ...parts);
}

/**
 * A job's secrets by path and id, when it has any (v0 Get's `id` or v1alpha GetJob's `secretId`). The API never
 * answers a secret's data, so the page cannot show it.
 */
export function secretsView(secrets: SecretJson[] | undefined): UiElement | null {
  if (!secrets?.length) return null;
  const rows = secrets.slice().sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  return h(
    "section",
    { id: "secrets" },
    h("h3", {}, "Secrets"),
    h(
      "p",
      { class: "muted note" },
      "Each is written at its path in every task of the job as the task launches. Their data is not shown: " +
        "the API never answers it.",
    ),
    table(
      ["Path", "Secret ID"],
      rows.map((s) => [
        h("code", { class: "secret-path" }, s.path),
        h("code", { class: "secret-id" }, s.id?.value ?? s.secretId?.value ?? "—"),
      ]),
      "",
      "secrets",
    ),
  );
}

/**
 * A job's page; `rows` says which instance rows of its workflow show their steps, `tasks` which tasks its
 * tasks table shows, `taskFilter` is that table's name and host form (the one the app keeps), `taskDetails`
 * which tasks show their events and logs.
 */
export function jobView(
  snap: Snapshot,
  jobId: string,
  act: Act,
  rows: RowToggle,
  tasks: TaskListQuery,
  taskFilter: UiElement,
  taskDetails?: RowToggle,
): UiElement {
  const info = snap.job?.info;
  if (!info || info.id.value !== jobId) {
    return h(
      "section",
      {},
      h("p", { class: "back" }, h("a", { href: "#/jobs" }, "← All jobs")),
      h(
        "p",
        { class: "muted" },
        snap.job ? `Job ${jobId} could not be loaded (see the error above).` : "Loading…",
      ),
    );
  }
  const c = info.config, rt = info.runtime;
  const paths = poolPaths(snap.pools);
  // The tasks table's page, when it is the one asked for: all the job's tasks if unfiltered and on one page.
  const page = snap.job?.tasksFor === taskListHash(jobId, tasks) ? snap.job.tasks : undefined;
  const unfiltered = !tasks.states.length && !tasks.names.length && !tasks.hosts.length;
  const loaded = page && {
    records: page.records,
    whole: unfiltered && tasks.page === 1 && page.records.length >= page.pagination.total,
  };
  return h(
    "section",
    { id: "job", "data-job-id": jobId },
    h("p", { class: "back" }, h("a", { href: "#/jobs" }, "← All jobs")),
    h("h2", {}, c.name, " ", badge(rt.state), h("span", { class: "muted goal" }, ` goal ${rt.goalState}`)),
    h(
      "div",
      { class: "actions" },
      ...jobActions(info, snap.job?.updates).map((a) => actionButton(a, act)),
    ),
    h("h3", {}, "Configuration"),
    configView(info, paths.get(c.respoolID?.value ?? ""), loaded),
    secretsView(snap.job?.secrets),
    workflowView(info, snap.job?.updates, act),
    instanceProgressView(info, snap.job?.updates, snap.job?.workflows, rows),
    tasksView(snap, info, tasks, taskFilter, taskDetails),
  );
}

export const VIEW_CODE = [
  Rpc,
  isTerminalJob,
  isTerminalUpdate,
  actionId,
  actionButton,
  actionVerb,
  actionBody,
  wholeAmount,
  poolPaths,
  matches,
  facts,
  whyNoStop,
  whyNoStart,
  workflowStopAborts,
  jobActions,
  workflowActions,
  activeUpdate,
  workflowView,
  secretsView,
  jobView,
];
