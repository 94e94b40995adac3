/** Zod schema for v0 `update.UpdateConfig`; v1alpha `UpdateSpec` names are accepted as aliases. */
import { z } from "zod";
import type { UpdateConfig } from "./config_types.ts";
import { bool, keyMeta, num, uint } from "./_schema_kit.ts";

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
}).register(keyMeta, {
  aliases: {
    maxInstanceRetries: "maxInstanceAttempts",
    maxTolerableInstanceFailures: "maxFailureInstances",
    startPods: "startTasks",
  },
});
