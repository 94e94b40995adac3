/** Peloton's merge of a per-instance TaskConfig over the job's default (`pkg/common/taskconfig/merge.go`). */
import type { JobConfig, TaskConfig } from "./config_types.ts";

type FieldKind = "bool" | "number" | "text" | "list" | "message";

// Every TaskConfig field, so a field added to the type cannot be forgotten here.
const FIELD_KIND: { readonly [K in keyof Required<TaskConfig>]: FieldKind } = {
  name: "text",
  labels: "list",
  resource: "message",
  container: "message",
  command: "message",
  executor: "message",
  healthCheck: "message",
  ports: "list",
  constraint: "message",
  restartPolicy: "message",
  volume: "message",
  preemptionPolicy: "message",
  controller: "bool",
  killGracePeriodSeconds: "number",
  revocable: "bool",
};

/**
 * Whether the override's value of `field` replaces the default's. Go's merge, field by field: a bool
 * always comes from the override; a number or string only when non-zero / non-empty; a message or list
 * only when set. An empty list counts as unset: it is nil once the config has crossed the wire.
 */
export function overridesField(override: TaskConfig, field: keyof TaskConfig): boolean {
  const v = override[field];
  switch (FIELD_KIND[field]) {
    case "bool":
      return true;
    case "number":
      return v !== undefined && v !== 0;
    case "text":
      return v !== undefined && v !== "";
    case "list":
      return Array.isArray(v) && v.length > 0;
    case "message":
      return v !== undefined;
  }
}

/** Merges top-level fields only; nested messages are taken whole from one side. */
export function mergeTaskConfigs(base: TaskConfig, override: TaskConfig | undefined): TaskConfig {
  if (override === undefined) return base;
  const merged: Record<string, unknown> = {};
  for (const field of Object.keys(FIELD_KIND) as (keyof TaskConfig)[]) {
    let v = overridesField(override, field) ? override[field] : base[field];
    // An override that leaves a bool out still sets it: to false, Go's zero value.
    if (v === undefined && FIELD_KIND[field] === "bool" && base[field] !== undefined) v = false;
    if (v !== undefined) merged[field] = v;
  }
  return merged as TaskConfig;
}

/** The effective TaskConfig of one instance of a job. */
export function mergeTaskConfig(config: JobConfig, instanceId: number): TaskConfig {
  return mergeTaskConfigs(config.defaultConfig, config.instanceConfig[instanceId]);
}
