/**
 * Browser code of the web UI, part 3e: a job's configuration on its page: what it is, what each instance runs
 * by default (with its volume, placement constraint, health check and ports), the instances whose config
 * overrides that default (`instanceConfig`), grouped by what they override, and the instances that still run
 * another config version than the one shown. Runs in the browser (see client_dom.ts for the rules).
 */
import type {
  ConstraintJson,
  HealthCheckJson,
  JobConfigJson,
  JobInfoJson,
  ResourceLimits,
  TaskConfigJson,
  TaskInfoJson,
} from "./api_types.ts";
import { h, num, statsLine, table, timeView, type UiChild, type UiElement } from "./client_dom.ts";
import { facts } from "./client_views.ts";

export function limits(r: ResourceLimits | undefined): string {
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
 * A placement constraint as the operator reads it: "rack = zeta (host)", "rack ≠ zeta (host)",
 * "no task with app = web on the host (task)", an AND or OR of them ("... and (... or ...)"). A HOST label
 * constraint counts the host's own label (1 or 0), a TASK one the tasks on the host that carry the label; the
 * condition compares that count with the requirement.
 */
export function constraintText(c: ConstraintJson, nested = false): string {
  const type = c.type ??
    (c.labelConstraint
      ? "LABEL_CONSTRAINT"
      : c.andConstraint
      ? "AND_CONSTRAINT"
      : c.orConstraint
      ? "OR_CONSTRAINT"
      : "");
  if (type === "AND_CONSTRAINT" || type === "OR_CONSTRAINT") {
    const and = type === "AND_CONSTRAINT";
    const parts = ((and ? c.andConstraint : c.orConstraint)?.constraints ?? []).map((s) =>
      constraintText(s, true)
    );
    const text = parts.join(and ? " and " : " or ");
    return nested && parts.length > 1 ? `(${text})` : text || "none";
  }
  const l = c.labelConstraint;
  if (type !== "LABEL_CONSTRAINT" || !l) return JSON.stringify(c);
  const kind = (l.kind ?? "UNKNOWN").toLowerCase();
  const condition = (l.condition ?? "").replace(/^CONDITION_/, "");
  // Proto3 JSON leaves a requirement of 0 out.
  const n = l.requirement ?? 0;
  const key = l.label?.key ?? "", value = l.label?.value ?? "";
  const has = (condition === "EQUAL" && n === 1) || (condition === "GREATER_THAN" && n === 0);
  const hasNot = (condition === "EQUAL" && n === 0) || (condition === "LESS_THAN" && n === 1);
  if (kind === "host" && (has || hasNot)) return `${key} ${has ? "=" : "≠"} ${value} (host)`;
  if (kind === "task" && hasNot) return `no task with ${key} = ${value} on the host (task)`;
  const how = condition === "LESS_THAN"
    ? "fewer than"
    : condition === "GREATER_THAN"
    ? "more than"
    : condition === "EQUAL"
    ? "exactly"
    : condition.toLowerCase() || "unknown condition";
  const what = kind === "task" ? `task${n === 1 ? "" : "s"} with` : "of";
  return `${how} ${num(n)} ${what} ${key} = ${value} on the host (${kind})`;
}

/**
 * A health check as the operator reads it: what it runs, how often and when it gives up ("command
 * `curl -f localhost:8080`, every 10 s after 15 s, timeout 20 s, unhealthy after 3 failures in a row").
 */
export function healthCheckText(c: HealthCheckJson): string {
  // Off unless enabled, as in Peloton (proto3 JSON leaves `enabled: false` out).
  if (!c.enabled) return "disabled";
  const type = (c.type ?? "").replace(/^TYPE_/, "");
  const http = c.httpCheck;
  const what = type === "COMMAND" || (!type && c.commandCheck)
    ? `command ${c.commandCheck?.command ?? "—"}`
    : type === "HTTP" || (!type && http)
    ? `${(http?.scheme || "http").toUpperCase()} GET on port ${http?.port ?? "—"}, path ${http?.path || "/"}`
    : (type || "unknown type").toLowerCase();
  // Proto3 JSON leaves out zeros: a field absent is one the job did not set.
  const timing = [
    c.intervalSecs
      ? `every ${num(c.intervalSecs)} s${
        c.initialIntervalSecs ? ` after ${num(c.initialIntervalSecs)} s` : ""
      }`
      : "",
    c.timeoutSecs ? `timeout ${num(c.timeoutSecs)} s` : "",
    c.maxConsecutiveFailures
      ? `unhealthy after ${c.maxConsecutiveFailures} failure${
        c.maxConsecutiveFailures === 1 ? "" : "s"
      } in a row`
      : "",
  ].filter((t) => t);
  return [what, ...timing].join(", ");
}

/** A task's ports: "http: dynamic (env PORT_HTTP), admin: 8080". */
export function portsText(ports: TaskConfigJson["ports"]): string {
  return (ports ?? []).map((p) =>
    `${p.name ?? "—"}: ${p.value ? p.value : "dynamic"}${p.envName ? ` (env ${p.envName})` : ""}`
  ).join(", ") || "none";
}

/** A persistent volume: "/data, 1024 MB". */
export function volumeText(v: TaskConfigJson["volume"]): string {
  return `${v?.containerPath ?? "—"}, ${num(v?.sizeMB)} MB`;
}

/** A task config field as the operator reads it: "command: sleep 5", "kill grace period: 30 s". */
export function taskFieldText(field: string, value: unknown): string {
  switch (field) {
    case "name":
      return `name: ${String(value)}`;
    case "command":
      return `command: ${(value as TaskConfigJson["command"])?.value ?? JSON.stringify(value)}`;
    case "resource":
      return `resources: ${limits(value as ResourceLimits)}`;
    case "killGracePeriodSeconds":
      return `kill grace period: ${num(value as number)} s`;
    case "labels":
      return `labels: ${
        ((value as TaskConfigJson["labels"]) ?? []).map((l) => `${l.key}=${l.value}`).join(", ") || "none"
      }`;
    case "volume":
      return `volume: ${volumeText(value as TaskConfigJson["volume"])}`;
    case "constraint":
      return `placement constraint: ${constraintText(value as ConstraintJson)}`;
    case "healthCheck":
      return `health check: ${healthCheckText(value as HealthCheckJson)}`;
    case "ports":
      return `ports: ${portsText(value as TaskConfigJson["ports"])}`;
    default:
      return `${field}: ${JSON.stringify(value)}`;
  }
}

/**
 * Instance ids as ranges: [0, 1, 2, 5, 7, 8] as "0–2, 5, 7, 8" (a run of two is written out, not as a range).
 */
export function instanceRanges(ids: number[]): string {
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    if (j - i >= 2) out.push(`${sorted[i]}–${sorted[j]}`);
    else for (let k = i; k <= j; k++) out.push(String(sorted[k]));
    i = j + 1;
  }
  return out.join(", ");
}

/**
 * The instances whose config overrides the job's default, grouped by the same overrides, in the order of
 * their first instance: each group's instances and what they set in the default's place (an override
 * replaces the default's field whole, as the job manager merges them).
 */
export function instanceOverrides(c: JobConfigJson): { instances: number[]; fields: string[] }[] {
  const groups = new Map<string, { instances: number[]; fields: string[] }>();
  const entries = Object.entries(c.instanceConfig ?? {}).map(([id, tc]) => [Number(id), tc] as const)
    .filter(([id, tc]) => Number.isInteger(id) && tc && Object.keys(tc).length > 0)
    .sort((a, b) => a[0] - b[0]);
  for (const [id, tc] of entries) {
    const fields = Object.keys(tc).sort().map((k) => taskFieldText(k, tc[k]));
    const key = JSON.stringify(fields);
    const g = groups.get(key);
    if (g) g.instances.push(id);
    else groups.set(key, { instances: [id], fields });
  }
  return [...groups.values()];
}

/** The overrides as a table, or a line saying every instance runs the default. */
export function overridesView(c: JobConfigJson): UiElement {
  const groups = instanceOverrides(c);
  if (!groups.length) {
    return h(
      "p",
      { class: "muted note", id: "instance-overrides" },
      "Every instance runs the default config (no instanceConfig).",
    );
  }
  const n = groups.reduce((s, g) => s + g.instances.length, 0);
  return h(
    "section",
    { id: "instance-overrides" },
    h("h4", {}, `Instance overrides (${n} of ${c.instanceCount} instances)`),
    h(
      "p",
      { class: "muted note" },
      "Each field set here replaces the default's, whole; the instance keeps the default's other fields.",
    ),
    table(
      ["Instances", "Overrides"],
      groups.map((g) => [
        h("span", { class: "instances" }, instanceRanges(g.instances)),
        h("ul", { class: "overrides" }, ...g.fields.map((f) => h("li", {}, h("code", {}, f)))),
      ]),
      "",
      "overrides",
    ),
  );
}

/**
 * The tasks that run another config version than the job's (`version`), grouped by the one they run, oldest
 * first, each group's instance ids ascending.
 */
export function otherVersions(
  version: number | undefined,
  tasks: TaskInfoJson[],
): { version: number; instances: number[] }[] {
  if (version === undefined) return [];
  const by = new Map<number, number[]>();
  for (const t of tasks) {
    const v = t.runtime.configVersion;
    if (v === undefined || v === version) continue;
    by.set(v, [...(by.get(v) ?? []), t.instanceId]);
  }
  return [...by].sort((a, b) => a[0] - b[0]).map(([v, ids]) => ({
    version: v,
    instances: ids.sort((a, b) => a - b),
  }));
}

/**
 * A note that some instances run another config version than the one the section shows (the job's own),
 * from the tasks the page loaded: after an aborted or rolled-back update most of them may. `whole` says the
 * tasks are all the job's; else they are the tasks table's page, and the note says so. Null when every task
 * loaded runs the job's version.
 */
export function versionsNote(
  info: JobInfoJson,
  tasks: { records: TaskInfoJson[]; whole: boolean } | undefined,
): UiElement | null {
  const version = info.runtime.configurationVersion;
  const groups = otherVersions(version, tasks?.records ?? []);
  if (!tasks || !groups.length) return null;
  const parts = groups.map((g) => {
    const one = g.instances.length === 1;
    return `${one ? "instance" : "instances"} ${instanceRanges(g.instances)} ${
      one ? "runs" : "run"
    } config ` +
      `version ${g.version}`;
  });
  const text = `${parts.join("; ")}, not the job's config version ${version} shown here.`;
  return h(
    "p",
    { class: "version-note", id: "config-versions" },
    tasks.whole
      ? `${text[0].toUpperCase()}${text.slice(1)}`
      : `Of the tasks on the tasks table's page below, ${text} Other pages may hold more.`,
  );
}

/**
 * The job's configuration: which instances run another version than it, its facts, description and default
 * task config, then its instance overrides. `tasks` are the tasks the page loaded (see `versionsNote`).
 */
export function configView(
  info: JobInfoJson,
  poolPath: string | undefined,
  tasks?: { records: TaskInfoJson[]; whole: boolean },
): UiElement {
  const c = info.config, rt = info.runtime, d = c.defaultConfig;
  const rows: [string, UiChild][] = [
    ["Job ID", h("code", {}, info.id.value)],
    ["Type", c.type],
    ["Description", c.description ? h("span", { class: "description" }, c.description) : "—"],
    ["Resource pool", poolPath ?? c.respoolID?.value],
    ["Instances", c.instanceCount],
    ["Tasks by state", statsLine(rt.taskStats)],
    ["Owning team", c.owningTeam || "—"],
    ["Owner", c.owner || "—"],
    ["Priority", c.sla?.priority],
    ["Preemptible", c.sla?.preemptible === undefined ? "—" : c.sla.preemptible ? "yes" : "no"],
    ["Revocable", c.sla?.revocable ? "yes" : "no"],
    ["Per instance", limits(d?.resource)],
    ["Command", d?.command?.value ? h("code", {}, d.command.value) : "—"],
    ["Kill grace period", d?.killGracePeriodSeconds ? `${num(d.killGracePeriodSeconds)} s` : "—"],
  ];
  // What places the tasks and what they keep, shown only when the job sets them.
  if (d?.volume) rows.push(["Persistent volume", volumeText(d.volume)]);
  if (d?.constraint) rows.push(["Placement constraint", constraintText(d.constraint)]);
  if (d?.healthCheck) rows.push(["Health check", healthCheckText(d.healthCheck)]);
  if (d?.ports?.length) rows.push(["Ports", portsText(d.ports)]);
  rows.push(
    ["Labels", (c.labels ?? []).map((l) => `${l.key}=${l.value}`).join(", ") || "—"],
    ["Config version", rt.configurationVersion],
    ["Created", timeView(rt.creationTime)],
    ["Started", timeView(rt.startTime)],
    ["Completed", timeView(rt.completionTime)],
  );
  return h("div", { class: "config" }, versionsNote(info, tasks), facts(rows), overridesView(c));
}

export const JOB_CONFIG_CODE = [
  limits,
  constraintText,
  healthCheckText,
  portsText,
  volumeText,
  taskFieldText,
  instanceRanges,
  instanceOverrides,
  overridesView,
  otherVersions,
  versionsNote,
  configView,
];
