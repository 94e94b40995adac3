/** Timed events of the scenario format: host failures, rack loss, maintenance, capacity changes, pool changes. */
import { z } from "zod";
import { hostClass } from "./scenario_hosts.ts";

/** Which hosts an event acts on: a class, a rack, named hosts, and how many of them. */
const hostSelector = z.object({
  class: z.string().min(1).optional(),
  /** A value of the hosts' `rack` attribute, e.g. `std-rack-3`. */
  rack: z.string().min(1).optional(),
  /** A value of the hosts' `zone` attribute. */
  zone: z.string().min(1).optional(),
  hosts: z.array(z.string().min(1)).optional(),
  /** At most this many of the matching hosts (the first ones, in host order). */
  count: z.number().int().positive().optional(),
  /** Or this fraction of them, picked with the run's seed. */
  fraction: z.number().positive().max(1).optional(),
}).strict();
export type HostSelector = z.infer<typeof hostSelector>;

export const scenarioEvent = z.object({
  atSec: z.number().nonnegative(),
  /** Agents fail: their tasks are lost and run again elsewhere. */
  failHosts: hostSelector.optional(),
  /** Every host of a rack fails at once. */
  loseRack: z.string().min(1).optional(),
  /** Failed hosts come back (empty) after this long; without it they stay down. */
  recoverAfterSec: z.number().positive().optional(),
  /** Peloton host maintenance: the hosts drain (their tasks are moved), then come back after `durationSec`. */
  drain: hostSelector.optional(),
  durationSec: z.number().positive().optional(),
  /** More hosts of a class from `hostClasses`, or of a class defined here. */
  addHosts: z.object({ class: z.string().min(1), count: z.number().int().positive() }).strict().optional(),
  addHostClass: hostClass.optional(),
  /** Hosts leave for good (decommissioned): like a failure that never recovers. */
  removeHosts: hostSelector.optional(),
  /** UpdateResourcePool on a pool path, in Peloton's respool shape (the fields given replace the pool's). */
  updatePool: z.object({ path: z.string().startsWith("/") }).catchall(z.unknown()).optional(),
  /** A workload's tasks use this multiple of their modelled cpu (a traffic spike: slack shrinks). */
  usage: z.object({ workload: z.string().min(1), level: z.number().nonnegative() }).strict().optional(),
}).strict().superRefine((e, ctx) => {
  const actions = ACTIONS.filter((k) => e[k] !== undefined);
  if (actions.length !== 1) {
    ctx.addIssue({
      code: "custom",
      message: `expected exactly one of ${ACTIONS.join(", ")}; got ${
        actions.length ? actions.join(", ") : "none"
      }`,
    });
  }
});
export type ScenarioEvent = z.infer<typeof scenarioEvent>;

export const ACTIONS = [
  "failHosts",
  "loseRack",
  "drain",
  "addHosts",
  "addHostClass",
  "removeHosts",
  "updatePool",
  "usage",
] as const;
