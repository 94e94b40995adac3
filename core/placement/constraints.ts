/** Label constraints (Peloton's `pkg/common/constraints/evaluate.go`) evaluated against a host. */
import type { Constraint, Label, LabelConstraint } from "../model/config_types.ts";

/** What a host looks like to a constraint: its attributes (plus hostname) and its tasks' labels. */
export interface ConstraintTarget {
  hostname: string;
  attributes: Record<string, string>;
  taskLabels: readonly Label[];
  /** Tasks on the host carrying `key=value`; when given it replaces counting `taskLabels`. */
  labelCount?: (key: string, value: string) => number;
}

/**
 * "unknown": the constraint turns on labels of a kind not evaluated (the host manager's TASK labels, which
 * the round's own placements may change), so only the caller that evaluates every kind can tell.
 */
export type Verdict = "match" | "mismatch" | "not-applicable" | "unknown";
export type LabelKind = "HOST" | "TASK";

/** The attribute key that marks exclusive hosts (Peloton's `common.PelotonExclusiveAttributeName`). */
export const EXCLUSIVE_KEY = "peloton/exclusive";

function count(c: LabelConstraint, t: ConstraintTarget): number {
  const { key, value } = c.label;
  if (c.kind === "HOST") {
    if (key === "hostname") return t.hostname === value ? 1 : 0;
    return t.attributes[key] === value ? 1 : 0;
  }
  if (t.labelCount) return t.labelCount(key, value);
  let n = 0;
  for (const l of t.taskLabels) if (l.key === key && l.value === value) n++;
  return n;
}

export function compare(condition: LabelConstraint["condition"], n: number, requirement: number): boolean {
  switch (condition) {
    case "LESS_THAN":
      return n < requirement;
    case "EQUAL":
      return n === requirement;
    case "GREATER_THAN":
      return n > requirement;
  }
}

/**
 * Evaluates a constraint. AND: any mismatch fails; OR: any match passes. `kinds` limits which label kinds
 * are evaluated, as Peloton's host manager evaluates only HOST constraints: a label of another kind is
 * unknown, so an AND of it with HOST labels that match is unknown, and an OR of it with HOST labels that
 * mismatch is unknown too (its TASK branch may match), never a mismatch.
 */
export function evaluate(
  c: Constraint,
  t: ConstraintTarget,
  kinds: ReadonlySet<LabelKind> = BOTH,
): Verdict {
  switch (c.type) {
    case "LABEL_CONSTRAINT":
      if (!kinds.has(c.labelConstraint.kind)) return "unknown";
      return compare(c.labelConstraint.condition, count(c.labelConstraint, t), c.labelConstraint.requirement)
        ? "match"
        : "mismatch";
    case "AND_CONSTRAINT": {
      let applicable = false, unknown = false;
      for (const sub of c.andConstraint.constraints) {
        const v = evaluate(sub, t, kinds);
        if (v === "mismatch") return "mismatch";
        if (v === "match") applicable = true;
        else if (v === "unknown") unknown = true;
      }
      return unknown ? "unknown" : applicable ? "match" : "not-applicable";
    }
    case "OR_CONSTRAINT": {
      let applicable = false, unknown = false;
      for (const sub of c.orConstraint.constraints) {
        const v = evaluate(sub, t, kinds);
        if (v === "match") return "match";
        if (v === "mismatch") applicable = true;
        else if (v === "unknown") unknown = true;
      }
      return unknown ? "unknown" : applicable ? "mismatch" : "not-applicable";
    }
  }
}

const BOTH: ReadonlySet<LabelKind> = new Set(["HOST", "TASK"]);
export const HOST_KIND: ReadonlySet<LabelKind> = new Set(["HOST"]);

/** True unless the constraint mismatches. */
export function satisfies(c: Constraint | undefined, t: ConstraintTarget): boolean {
  return !c || evaluate(c, t) !== "mismatch";
}

/**
 * Peloton's `IsNonExclusiveConstraint`: true unless some HOST label names `peloton/exclusive`.
 * Exclusive hosts take only work whose constraint targets them.
 */
export function isNonExclusive(c: Constraint | undefined): boolean {
  if (!c) return true;
  switch (c.type) {
    case "LABEL_CONSTRAINT":
      return !(c.labelConstraint.kind === "HOST" && c.labelConstraint.label.key === EXCLUSIVE_KEY);
    case "AND_CONSTRAINT":
      return c.andConstraint.constraints.every(isNonExclusive);
    case "OR_CONSTRAINT":
      return c.orConstraint.constraints.every(isNonExclusive);
  }
}

/**
 * The host summary's host-limit check: a top-level TASK label constraint that the tasks already on
 * the host exceed (more tasks can only raise the count) rejects the host before placement.
 */
export function hostLimitExceeded(
  c: Constraint | undefined,
  labelCount: (k: string, v: string) => number,
): boolean {
  if (!c || c.type !== "LABEL_CONSTRAINT" || c.labelConstraint.kind !== "TASK") return false;
  const l = c.labelConstraint;
  const n = labelCount(l.label.key, l.label.value);
  if (l.condition === "LESS_THAN") return n >= l.requirement;
  if (l.condition === "EQUAL") return n > l.requirement;
  return false;
}

/**
 * The most tasks of a group one host can take under its constraint's host limit: a TASK label LESS_THAN n
 * (or EQUAL 0: one), at the top or under an AND, on a label the tasks carry themselves (each one placed counts). Undefined when
 * the constraint sets none. The host manager leases hosts for the room the group needs: without this, a job
 * limited to one task per host got hosts for its cpu alone (a 32-core host "room" for 32) and a few tasks a round.
 */
export function perHostLimit(c: Constraint | undefined, labels: readonly Label[]): number | undefined {
  if (!c) return undefined;
  if (c.type === "AND_CONSTRAINT") {
    let least: number | undefined;
    for (const s of c.andConstraint.constraints) {
      const n = perHostLimit(s, labels);
      if (n !== undefined && (least === undefined || n < least)) least = n;
    }
    return least;
  }
  if (c.type !== "LABEL_CONSTRAINT") return undefined;
  const l = c.labelConstraint;
  if (l.kind !== "TASK") return undefined;
  // Fewer than n such tasks on the host; or none (EQUAL 0, Peloton's own host-limit example writes it so):
  // once the group's first task is there, one is the most a host takes.
  const limit = l.condition === "LESS_THAN"
    ? Math.max(1, l.requirement)
    : l.condition === "EQUAL" && l.requirement === 0
    ? 1
    : undefined;
  if (limit === undefined) return undefined;
  const own = labels.some((x) => x.key === l.label.key && x.value === l.label.value);
  return own ? limit : undefined;
}

/** Every label of a kind a constraint mentions, once, as `key=value`, in first-seen order. */
export function labelsOf(c: Constraint | undefined, kind: LabelKind, out: string[] = []): string[] {
  if (!c) return out;
  switch (c.type) {
    case "LABEL_CONSTRAINT": {
      const l = c.labelConstraint;
      const k = `${l.label.key}=${l.label.value}`;
      if (l.kind === kind && !out.includes(k)) out.push(k);
      return out;
    }
    case "AND_CONSTRAINT":
      for (const s of c.andConstraint.constraints) labelsOf(s, kind, out);
      return out;
    case "OR_CONSTRAINT":
      for (const s of c.orConstraint.constraints) labelsOf(s, kind, out);
      return out;
  }
}

/** "host_pool=batch", "rack!=r1", "tasks with app=web < 1" for rejection reasons. */
export function describeConstraint(c: Constraint): string {
  switch (c.type) {
    case "LABEL_CONSTRAINT": {
      const l = c.labelConstraint;
      const kv = `${l.label.key}=${l.label.value}`;
      if (l.kind === "HOST") {
        if (l.condition === "EQUAL" && l.requirement === 1) return kv;
        if (l.condition === "GREATER_THAN" && l.requirement === 0) return kv;
        if (l.condition === "EQUAL" && l.requirement === 0) return `${l.label.key}!=${l.label.value}`;
        if (l.condition === "LESS_THAN" && l.requirement === 1) return `${l.label.key}!=${l.label.value}`;
      }
      const op = l.condition === "EQUAL" ? "==" : l.condition === "LESS_THAN" ? "<" : ">";
      return `${l.kind === "HOST" ? "hosts" : "tasks"} with ${kv} ${op} ${l.requirement}`;
    }
    case "AND_CONSTRAINT":
      return `(${c.andConstraint.constraints.map(describeConstraint).join(" and ")})`;
    case "OR_CONSTRAINT":
      return `(${c.orConstraint.constraints.map(describeConstraint).join(" or ")})`;
  }
}

/** A stable text key of a constraint, cached per object (tasks of a job share theirs). */
export function constraintKey(c: Constraint | undefined): string {
  if (!c) return "";
  let k = KEYS.get(c);
  if (k === undefined) {
    k = JSON.stringify(c);
    KEYS.set(c, k);
  }
  return k;
}
const KEYS = new WeakMap<Constraint, string>();
