/** Zod schema for v0 `respool.ResourcePoolConfig` and the checks that need no other pool. */
import { z } from "zod";
import type { RespoolConfig, RespoolResourceConfig, RespoolResourceKind } from "./config_types.ts";
import { formatPath, type Gaps, judged, NO_GAPS, type PathSeg, type RuleIssue } from "./config_issues.ts";
import { keyMeta, num, poolAmount, protoEnum, text, textList, wrappedId } from "./_schema_kit.ts";

export const RESPOOL_RESOURCE_KINDS: readonly RespoolResourceKind[] = ["cpu", "memory", "disk", "gpu"];

export const RespoolResourceConfigSchema: z.ZodType<RespoolResourceConfig> = z.object({
  kind: protoEnum<RespoolResourceKind>({ cpu: null, memory: null, disk: null, gpu: null }),
  reservation: poolAmount().default(0),
  limit: poolAmount().default(0),
  // Ours: a kind listed without a share gets 1, as Peloton gives the kinds a pool leaves out. Its proto
  // default of 0 gives the pool none of the capacity others leave free (or all of it, as the only pool
  // wanting more: 0/0 in the share loop), which no one writing a file without `share` means.
  share: poolAmount().default(1),
  type: protoEnum({ ELASTIC: 1, STATIC: 2 }, { prefixes: ["RESERVATION_TYPE_"] }).default("ELASTIC"),
});

/** Peloton needs every pool to say what it reserves and may use; a file without them is a mistake. */
const RESOURCES_EXPECTED = "a list of cpu, memory, disk and gpu entries";

const PercentLimitSchema = z.object({ maxPercent: num().default(0) });

/** v0 `ResourcePoolConfig`; `parent` may be `root` or `{value: root}`; an unset policy is PriorityFIFO. */
export const RespoolConfigSchema: z.ZodType<RespoolConfig> = z.object({
  name: text().default(""),
  owningTeam: text().default(""),
  ldapGroups: textList().default([]),
  description: text().default(""),
  resources: z.array(RespoolResourceConfigSchema, { error: RESOURCES_EXPECTED }),
  parent: wrappedId().optional(),
  // Peloton runs an UNKNOWN (unset) policy as PriorityFIFO, so the model never carries UNKNOWN.
  policy: protoEnum({ UNKNOWN: 0, PriorityFIFO: 1 }, { prefixes: ["SCHEDULING_POLICY_"] })
    .default("PriorityFIFO")
    .transform(() => "PriorityFIFO" as const),
  controllerLimit: PercentLimitSchema.optional(),
  slackLimit: PercentLimitSchema.optional(),
}).register(keyMeta, { ignoredKeys: ["changeLog"] });

/**
 * The self-contained rules of `respoolconfig_validator.go`: known and unique kinds, reservation and share
 * of 0 or more, limit of at least the reservation, percentages within 0..100. Rules that compare a pool
 * with its parent or siblings belong to the resource manager. `gaps` names fields that were malformed in the
 * input; rules that read them are skipped.
 */
export function validateRespoolConfig(config: RespoolConfig, gaps: Gaps = NO_GAPS): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const add = (path: PathSeg[], value: unknown, expected: string, uses?: PathSeg[][]) => {
    const issue: RuleIssue = { path, value, expected, severity: "error" };
    if (uses) issue.uses = uses;
    if (judged(issue, gaps)) issues.push(issue);
  };
  const firstIndex = new Map<string, number>();
  config.resources.forEach((r, j) => {
    const first = firstIndex.get(r.kind);
    if (!RESPOOL_RESOURCE_KINDS.includes(r.kind)) {
      add(["resources", j, "kind"], r.kind, "one of cpu, memory, disk or gpu");
    } else if (first !== undefined) {
      const also = ["resources", first, "kind"];
      // Named as in the input, where entries dropped as malformed still count.
      const where = formatPath(gaps.original(["resources", first]));
      add(["resources", j, "kind"], r.kind, `each kind once (also ${where})`, [also]);
    } else firstIndex.set(r.kind, j);
    if (r.reservation < 0) add(["resources", j, "reservation"], r.reservation, "a reservation of 0 or more");
    if (r.share < 0) add(["resources", j, "share"], r.share, "a share of 0 or more");
    if (r.limit < r.reservation) {
      const expected = `a limit of at least the reservation (${r.reservation})`;
      add(["resources", j, "limit"], r.limit, expected, [["resources", j, "reservation"]]);
    }
  });
  for (const field of ["controllerLimit", "slackLimit"] as const) {
    const p = config[field]?.maxPercent;
    if (p !== undefined && (p < 0 || p > 100)) {
      add([field, "maxPercent"], p, "a percentage between 0 and 100");
    }
  }
  return issues;
}
