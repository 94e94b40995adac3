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
  ResourceLimits,
  RespoolInfoJson,
  RowToggle,
  SecretJson,
  Snapshot,
  TaskListQuery,
  UiAction,
  UpdateInfoJson,
} from "./api_types.ts";
import { badge, h, num, statsLine, table, type UiChild, type UiElement, when } from "./client_dom.ts";
import { tasksView } from "./client_tasks.ts";
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

export function actionButton(a: UiAction, act: Act): UiElement {
  return h("button", {
    class: a.danger ? "action danger" : "action",
    disabled: a.disabled === true,
    title: a.disabled ? a.disabledWhy : undefined,
    "data-action": a.label,
    "aria-label": a.name,
    onclick: () => act(a),
  }, a.label);
}

/** An action's name for its confirm button and result line: its label without the "…" that says it asks more. */
export function actionVerb(a: UiAction): string {
  return a.label.replace(/…$/, "");
}

/**
 * The body an action sends: the one it works out from the operator's picks in the confirm step if it does,
 * else its own, with the pick of its choice as that choice's field.
 */
export function actionBody(a: UiAction, picks: ActionPicks = {}): Record<string, unknown> {
  if (a.bodyOf) return a.bodyOf(picks);
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

/** Why a job cannot be stopped, or undefined if it can. */
export function whyNoStop(info: JobInfoJson): string | undefined {
  const state = info.runtime.state;
  if (isTerminalJob(state)) return `Job has ended (${state}): there is nothing to stop`;
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
  if (info.config.type !== "BATCH" || (state !== "FAILED" && state !== "SUCCEEDED")) return undefined;
  if (goalState === "KILLED") return undefined;
  return `Batch job has ended (${state}) and was not stopped: Start starts stopped tasks only, ` +
    "so it would start none";
}

export function jobActions(info: JobInfoJson): UiAction[] {
  const id = info.id.value, name = info.config.name;
  const instances = (r: Record<string, unknown>, key: string) =>
    ((r[key] as number[] | undefined) ?? []).length;
  const noStop = whyNoStop(info), noStart = whyNoStart(info);
  return [
    {
      label: "Stop job",
      question:
        `Stop every task of job ${name} (${id})? Running tasks get SIGTERM, then SIGKILL after their grace period.`,
      procedure: `${Rpc.TASK}::Stop`,
      body: { jobId: { value: id } },
      describe: (r) => `Job ${name}: stopping ${instances(r, "stoppedInstanceIds")} instances`,
      disabled: noStop !== undefined,
      disabledWhy: noStop,
      danger: true,
    },
    {
      label: "Start job",
      question: `Start the stopped tasks of job ${name} (${id})?`,
      procedure: `${Rpc.TASK}::Start`,
      body: { jobId: { value: id } },
      describe: (r) => `Job ${name}: starting ${instances(r, "startedInstanceIds")} instances`,
      disabled: noStart !== undefined,
      disabledWhy: noStart,
    },
  ];
}

export function workflowActions(u: UpdateInfoJson): UiAction[] {
  const id = u.updateId.value, state = u.status.state;
  const control = (verb: string, method: string, disabled: boolean, danger = false): UiAction => ({
    label: `${verb[0].toUpperCase()}${verb.slice(1)} workflow`,
    question: `${verb[0].toUpperCase()}${verb.slice(1)} ${u.type} workflow ${id} (now ${state})?`,
    procedure: `${Rpc.UPDATE}::${method}`,
    body: { updateId: { value: id } },
    describe: () => `Workflow ${id}: ${verb} requested`,
    disabled,
    danger,
  });
  const terminal = isTerminalUpdate(state);
  return [
    control("pause", "PauseUpdate", terminal || state === "PAUSED"),
    control("resume", "ResumeUpdate", state !== "PAUSED"),
    control("abort", "AbortUpdate", terminal, true),
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
          ["Created", when(active.creationTime)],
          ["Updated", when(active.updateTime)],
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
        when(u.creationTime),
        when(u.completionTime),
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

function limits(r: ResourceLimits | undefined): string {
  if (!r) return "—";
  const parts = [
    `${num(r.cpuLimit)} cores`,
    `${num(r.memLimitMb)} MB memory`,
    `${num(r.diskLimitMb)} MB disk`,
  ];
  if (r.gpuLimit) parts.push(`${num(r.gpuLimit)} GPUs`);
  return parts.join(", ");
}

/**
 * A job's page; `rows` says which instance rows of its workflow show their steps, `tasks` which tasks its
 * tasks table shows, `taskFilter` is that table's name and host form (the one the app keeps).
 */
export function jobView(
  snap: Snapshot,
  jobId: string,
  act: Act,
  rows: RowToggle,
  tasks: TaskListQuery,
  taskFilter: UiElement,
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
  return h(
    "section",
    { id: "job", "data-job-id": jobId },
    h("p", { class: "back" }, h("a", { href: "#/jobs" }, "← All jobs")),
    h("h2", {}, c.name, " ", badge(rt.state), h("span", { class: "muted goal" }, ` goal ${rt.goalState}`)),
    h("div", { class: "actions" }, ...jobActions(info).map((a) => actionButton(a, act))),
    h("h3", {}, "Configuration"),
    facts([
      ["Job ID", h("code", {}, info.id.value)],
      ["Type", c.type],
      ["Resource pool", paths.get(c.respoolID?.value ?? "") ?? c.respoolID?.value],
      ["Instances", c.instanceCount],
      ["Tasks by state", statsLine(rt.taskStats)],
      ["Owning team", c.owningTeam || "—"],
      ["Owner", c.owner || "—"],
      ["Priority", c.sla?.priority],
      ["Preemptible", c.sla?.preemptible === undefined ? "—" : c.sla.preemptible ? "yes" : "no"],
      ["Revocable", c.sla?.revocable ? "yes" : "no"],
      ["Per instance", limits(c.defaultConfig?.resource)],
      ["Command", c.defaultConfig?.command?.value ? h("code", {}, c.defaultConfig.command.value) : "—"],
      ["Labels", (c.labels ?? []).map((l) => `${l.key}=${l.value}`).join(", ") || "—"],
      ["Config version", rt.configurationVersion],
      ["Created", when(rt.creationTime)],
      ["Started", when(rt.startTime)],
      ["Completed", when(rt.completionTime)],
    ]),
    secretsView(snap.job?.secrets),
    workflowView(info, snap.job?.updates, act),
    instanceProgressView(info, snap.job?.updates, snap.job?.workflows, rows),
    tasksView(snap, info, tasks, taskFilter),
  );
}

export const VIEW_CODE = [
  Rpc,
  isTerminalJob,
  isTerminalUpdate,
  actionButton,
  actionVerb,
  actionBody,
  wholeAmount,
  poolPaths,
  matches,
  facts,
  whyNoStop,
  whyNoStart,
  jobActions,
  workflowActions,
  activeUpdate,
  workflowView,
  secretsView,
  limits,
  jobView,
];
