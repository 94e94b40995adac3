/** Number-or-distribution fields of the scenario format (`cpu: 2`, `durationSec: {lognormal: {...}}`) and their errors. */
import { z } from "zod";
import { valueAt } from "../core/model/_key_normalize.ts";
import { quote } from "./scenario_messages.ts";

/** A number, or a distribution to draw it from. */
export type Distribution =
  | number
  | { fixed: number }
  /** From the first bound to the second (equal bounds: always that value). */
  | { uniform: [number, number] }
  | { exponential: number }
  | { normal: { mean: number; stddev: number } }
  | { lognormal: { median: number; sigma: number } }
  /** Values with weights: `choice: [[1, 0.5], [8, 0.5]]`. */
  | { choice: [number, number][] };

/** How a field's numbers read in its errors. */
export interface Quantity {
  /** The numbers it takes: "a number of seconds (at least 0)". */
  value: string;
  /** Its unit after a parameter's bound ("a mean above 0 seconds"), with its space; "" for counts. */
  unit: string;
}

/**
 * The error of a union whose input matched none of its forms as a whole (zod's own says only "Invalid
 * input"): `expected`, what the field takes; or, when the input is a mapping naming one form, how that form
 * is written (`forms`, by key).
 */
export function unionError(expected: string, forms: Record<string, string> = {}) {
  return (iss: { code?: string; input?: unknown }): string | undefined => {
    if (iss.code !== "invalid_union") return undefined;
    return neitherError(expected, iss.input, forms);
  };
}

function neitherError(expected: string, input: unknown, forms: Record<string, string> = {}): string {
  if (!isMapping(input)) return `expected ${expected}`;
  const keys = Object.keys(input);
  if (keys.length === 1 && Object.hasOwn(forms, keys[0])) {
    // The mapping's one value is what is wrong; a number, it is said (a .inf reads as the file has it).
    const value = input[keys[0]];
    const got = typeof value === "number" ? `; got {${keys[0]}: ${quote(value)}}` : "";
    return `expected ${forms[keys[0]]}${got}`;
  }
  const got = keys.length ? `a mapping with ${keys.map(quote).join(", ")}` : "{}";
  return `expected ${expected}; got ${got}`;
}

export const isMapping = (x: unknown): x is Record<string, unknown> =>
  !!x && typeof x === "object" && !Array.isArray(x);

/** The least a number-or-distribution field can be: exact for numbers, fixed, uniform and choice. */
export function leastOf(d: unknown): number {
  if (typeof d === "number") return d;
  if (!isMapping(d)) return 0;
  if (typeof d.fixed === "number") return d.fixed;
  if (Array.isArray(d.uniform) && typeof d.uniform[0] === "number") return d.uniform[0];
  if (Array.isArray(d.choice)) {
    const values = d.choice.map((c) => (Array.isArray(c) && typeof c[0] === "number" ? c[0] : 0));
    return values.length ? Math.min(...values) : 0;
  }
  // Exponential, normal and lognormal draws can be small.
  return 0;
}

/** "a, b or c" (`last`: "and" for "a, b and c"). */
const orList = (xs: string[], last = "or") =>
  xs.length > 1 ? `${xs.slice(0, -1).join(", ")} ${last} ${xs.at(-1)}` : xs[0];

/** A number within bounds, every error of it (not a number, out of bounds) the one `expected`. */
function bounded(expected: string, check: (n: z.ZodNumber) => z.ZodNumber): z.ZodNumber {
  return check(z.number({ error: expected }));
}

/** A mapping of these fields only; a field left out or not known is named by its own path. */
function fields(shape: Record<string, z.ZodType>, expected: string) {
  const names = Object.keys(shape);
  return z.strictObject(shape, {
    error: (iss) =>
      iss.code === "unrecognized_keys"
        ? `unknown key; expected ${orList(names, "and")}`
        : `expected ${expected}`,
  });
}

/**
 * A number (checked by `value`), or a mapping of one key naming one of `forms` (checked by that form).
 * The form is picked by its key before its value is looked at, so a bad value inside a form is reported
 * at its own path, with what that form expects there (a union of every form could only say that none
 * matched). Anything else gets `neither`. Problems do not stop the parse (`continue`), so the workload's
 * other rules still run and every problem is listed at once; those rules check the fields they read.
 */
function numberOr<T>(
  value: z.ZodType<number>,
  forms: Record<string, z.ZodType>,
  neither: (input: unknown) => string,
  check: (parsed: number | T, report: (path: (string | number)[], message: string) => void) => void =
    () => {},
) {
  return z.unknown().transform((input, ctx): number | T => {
    const report = (path: (string | number)[], message: string) =>
      ctx.addIssue({ code: "custom", path, message, continue: true });
    const key = isMapping(input) && Object.keys(input).length === 1 ? Object.keys(input)[0] : undefined;
    const form = typeof input === "number"
      ? value
      : key !== undefined && Object.hasOwn(forms, key)
      ? forms[key]
      : undefined;
    if (!form) {
      report([], neither(input));
      return input as T;
    }
    const at = typeof input === "number" ? [] : [key!];
    const res = form.safeParse(typeof input === "number" ? input : (input as Record<string, unknown>)[key!]);
    if (!res.success) {
      for (const iss of res.error.issues) {
        const path = [...at, ...iss.path as (string | number)[]];
        if (iss.code === "unrecognized_keys") {
          for (const k of iss.keys) report([...path, k], iss.message);
        } else if (iss.code === "invalid_type" && valueAt(input, path).value === undefined) {
          report(path, `missing; ${iss.message}`);
        } else report(path, iss.message);
      }
      return input as T;
    }
    const parsed = (typeof input === "number" ? res.data : { [key!]: res.data }) as number | T;
    check(parsed, report);
    return parsed;
  });
}

/** A uniform's first bound is its lower one. */
function boundsInOrder(d: number | object, report: (path: (string | number)[], message: string) => void) {
  if (typeof d !== "object" || !("uniform" in d) || !Array.isArray(d.uniform)) return;
  if (d.uniform[0] > d.uniform[1]) {
    report(["uniform", 1], `expected at least the lower bound (${d.uniform[0]})`);
  }
}

const SHAPES = {
  fixed: "{fixed: n}",
  uniform: "{uniform: [low, high]}",
  exponential: "{exponential: mean}",
  normal: "{normal: {mean, stddev}}",
  lognormal: "{lognormal: {median, sigma}}",
  choice: "{choice: [[value, weight], ...]}",
};

/**
 * A number-or-distribution field over the numbers `value` accepts; `q` says what those are, for errors.
 * Every error names the path of the bad part (`durationSec.lognormal.median`) and what was expected there.
 */
export function distributionOf(value: z.ZodType<number>, q: Quantity) {
  const bounds = `two bounds [low, high], each ${q.value}, the lower first`;
  const pair = `the value ${q.value} and the weight above 0`;
  const pairs = `each value ${q.value} and each weight above 0`;
  const mean = `a mean of at least 0${q.unit}: draws below 0 count as 0`;
  const stddev = `a stddev of at least 0${q.unit}`;
  const median = `a median above 0${q.unit}`;
  const sigma = "a sigma of at least 0";
  const forms = {
    fixed: value,
    uniform: z.tuple([value, value], { error: `expected ${bounds}` }),
    exponential: bounded(`expected a mean above 0${q.unit}`, (n) => n.positive()),
    normal: fields({
      mean: bounded(`expected ${mean}`, (n) => n.nonnegative()),
      stddev: bounded(`expected ${stddev}`, (n) => n.nonnegative()),
    }, `{mean, stddev}: ${mean.slice(0, mean.indexOf(":"))} and ${stddev}`),
    lognormal: fields({
      median: bounded(`expected ${median}`, (n) => n.positive()),
      sigma: bounded(`expected ${sigma}`, (n) => n.nonnegative()),
    }, `{median, sigma}: ${median} and ${sigma}`),
    choice: z.array(
      z.tuple([value, bounded("expected a weight above 0", (n) => n.positive())], {
        error: `expected a [value, weight] pair, ${pair}`,
      }),
      { error: `expected at least one [value, weight] pair, ${pairs}` },
    ).min(1),
  };
  const expected = `${q.value}, or a distribution: ${orList(Object.values(SHAPES))}`;
  return numberOr<Exclude<Distribution, number>>(
    value,
    forms,
    (input) => neitherError(expected, input),
    boundsInOrder,
  );
}

/** A number of a unit of at least 0, or a distribution of such numbers (`cores`, `MB`, `seconds`). */
export function amount(unit: string) {
  const value = `a number of ${unit} (at least 0)`;
  return distributionOf(bounded(`expected ${value}`, (n) => n.nonnegative()), { value, unit: ` ${unit}` });
}

/**
 * Instances per job: a whole number of at least 1, or a distribution whose values and bounds are. A draw
 * is rounded to a whole number, and is at least 1 (exponential, normal and lognormal draws can be less).
 */
export const instanceCount = distributionOf(
  z.number({ error: "expected a whole number of at least 1" })
    .min(1, { error: "expected at least 1 instance" })
    // A refinement, not `.int()`: that one stops the checks, and 0.5 would not also be told it is below 1.
    .refine(Number.isInteger, { error: "expected a whole number of instances" }),
  { value: "a whole number of at least 1", unit: "" },
);

const FRACTION = "a fraction above 0 and at most 1";

/** A fraction above 0 and at most 1, fixed or drawn uniformly. */
export const fraction = (() => {
  const value = bounded(`expected ${FRACTION}`, (n) => n.positive().max(1));
  return numberOr<{ uniform: [number, number] } | { fixed: number }>(
    value,
    {
      uniform: z.tuple([value, value], {
        error: `expected two bounds [low, high], each ${FRACTION}, the lower first`,
      }),
      fixed: value,
    },
    (input) => neitherError(`${FRACTION}, {uniform: [low, high]} or {fixed: n}`, input),
    boundsInOrder,
  );
})();
