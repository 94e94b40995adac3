/** Zod schema for v0 `update.UpdateConfig`; v1alpha `UpdateSpec` names are accepted as aliases. */
import { z } from "zod";
import type { UpdateConfig } from "./config_types.ts";
import { bool, keyMeta, num, uint } from "./_schema_kit.ts";

/**
 * Default `minRunningSeconds`: long enough that a command which crashes on start never counts as
 * updated, short enough for rolling updates of many batches (Nomad's `min_healthy_time` is also 10 s).
 */
export const DEFAULT_MIN_RUNNING_SECONDS = 10;

export const UpdateConfigSchema: z.ZodType<UpdateConfig> = z.object({
  batchSize: uint().default(0),
  // Takes precedence over batchSize when set.
  batchPercentage: num({ min: 0, max: 100 }).default(0),
  stopBeforeUpdate: bool().default(false),
  startPaused: bool().default(false),
  rollbackOnFailure: bool().default(false),
  // 0 retries an instance forever.
  maxInstanceAttempts: uint().default(0),
  // 0 lets the update succeed even if every instance fails.
  maxFailureInstances: uint().default(0),
  inPlace: bool().default(false),
  startTasks: bool().default(false),
  // 0 counts an instance without a health check as updated as soon as it is RUNNING.
  minRunningSeconds: num({ min: 0 }).default(DEFAULT_MIN_RUNNING_SECONDS),
}).register(keyMeta, {
  aliases: {
    maxInstanceRetries: "maxInstanceAttempts",
    maxTolerableInstanceFailures: "maxFailureInstances",
    startPods: "startTasks",
  },
});
