/**
 * Browser code of the web UI, part 3e: a job's configuration on its page: what it is, what each instance runs
 * by default, and the instances whose config overrides that default (`instanceConfig`), grouped by what they
 * override. Runs in the browser (see client_dom.ts for the rules).
 */
import type { JobConfigJson, JobInfoJson, ResourceLimits, TaskConfigJson } from "./api_types.ts";
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

/** The job's configuration: its facts, description and default task config, then its instance overrides. */
export function configView(info: JobInfoJson, poolPath: string | undefined): UiElement {
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
    ["Labels", (c.labels ?? []).map((l) => `${l.key}=${l.value}`).join(", ") || "—"],
    ["Config version", rt.configurationVersion],
    ["Created", timeView(rt.creationTime)],
    ["Started", timeView(rt.startTime)],
    ["Completed", timeView(rt.completionTime)],
  ];
  return h("div", { class: "config" }, facts(rows), overridesView(c));
}

export const JOB_CONFIG_CODE = [
  limits,
  taskFieldText,
  instanceRanges,
  instanceOverrides,
  overridesView,
  configView,
];
