/** Zod schema for v0 `job.JobConfig`; re-exports the instance merge and the semantic validation. */
import { z } from "zod";
import type { JobConfig, SlaConfig } from "./config_types.ts";
import { JOB_TYPES } from "./states.ts";
import {
  bool,
  instanceIdKey,
  keyMeta,
  MAX_JOB_NAME_CHARS,
  MAX_JOB_OWNER_CHARS,
  num,
  protoEnum,
  text,
  textList,
  uint,
  wrappedId,
} from "./_schema_kit.ts";
import { LabelSchema, TaskConfigSchema } from "./task_config.ts";

export * from "./task_config.ts";
export { mergeTaskConfig, mergeTaskConfigs, overridesField } from "./task_merge.ts";
export {
  capRestartPolicies,
  DEFAULT_MAX_TASKS_PER_JOB,
  ignoredByType,
  MAX_TASK_RETRIES,
  validateJobConfig,
  type ValidateJobOptions,
} from "./job_config_validate.ts";

/**
 * What `instanceCount` takes: the type is a uint32, but a job create with no instances is refused by the
 * rules (`validateJobConfig`), except a DAEMON's, whose instances follow its hosts.
 */
export const INSTANCE_COUNT_EXPECTED = "a whole number, at least 1 (0 only for a DAEMON job)";

export const SlaConfigSchema: z.ZodType<SlaConfig> = z.object({
  priority: uint().default(0),
  preemptible: bool().default(false),
  revocable: bool().default(false),
  maximumRunningInstances: uint().default(0),
  minimumRunningInstances: uint().default(0),
  maxRunningTime: uint().default(0),
  maximumUnavailableInstances: uint().default(0),
});

/** v0 `JobConfig`. DAEMON is accepted here; Peloton's validator rejected it as an invalid job type. */
export const JobConfigSchema: z.ZodType<JobConfig> = z.object({
  name: text(MAX_JOB_NAME_CHARS).default(""),
  type: protoEnum(JOB_TYPES, { prefixes: ["JOB_TYPE_"] }).default("BATCH"),
  owningTeam: text(MAX_JOB_OWNER_CHARS).default(""),
  ldapGroups: textList().default([]),
  description: text().default(""),
  owner: text(MAX_JOB_OWNER_CHARS).default(""),
  labels: z.array(LabelSchema).default([]),
  instanceCount: num({ int: true, min: 0 }, INSTANCE_COUNT_EXPECTED).default(0),
  sla: SlaConfigSchema.prefault({}),
  defaultConfig: TaskConfigSchema.prefault({}),
  instanceConfig: z.record(instanceIdKey(), TaskConfigSchema).default({}),
  respoolId: wrappedId().optional(),
  placementStrategy: protoEnum(
    { PLACEMENT_STRATEGY_INVALID: 0, PACK_HOST: 1, SPREAD_JOB: 2 },
    {
      prefixes: ["PLACEMENT_STRATEGY_"],
      shownAs: (s) => s.startsWith("PLACEMENT_STRATEGY_") ? s : `PLACEMENT_STRATEGY_${s}`,
    },
  ).default("PLACEMENT_STRATEGY_INVALID"),
}).register(keyMeta, { ignoredKeys: ["changeLog"] });
