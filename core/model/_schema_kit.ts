/** Zod building blocks shared by the config schemas: proto enums by name or number, lenient numbers, text. */
import { z } from "zod";
import { isPlainObject } from "./yaml_load.ts";

/** Hints the key normalizer reads off a schema (see `_key_normalize.ts`). */
export interface KeyMeta {
  /** Keys accepted and dropped without a warning: server-set fields such as `changeLog`. */
  ignoredKeys?: readonly string[];
  /** Other spellings of a key, e.g. v1alpha's `httpGet` for `httpCheck`. */
  aliases?: Readonly<Record<string, string>>;
  /** A scalar where text is expected keeps its spelling: `value: 1.0` reads as "1.0", as in yaml.v2. */
  text?: boolean;
}

export const keyMeta = z.registry<KeyMeta>();

/** Keys match case-insensitively and ignoring `_`: `instancecount`, `instanceCount`, `instance_count`. */
export function canonKey(key: string): string {
  return key.toLowerCase().replaceAll("_", "");
}

/** Expected-value phrases, shared so messages read the same everywhere. */
export const EXPECT = {
  text: "text",
  bool: "true or false",
  list: "a list",
} as const;

export interface NumberRule {
  int?: boolean;
  min?: number;
  max?: number;
}

function describeNumber(r: NumberRule): string {
  const kind = r.int ? "a whole number" : "a number";
  if (r.min !== undefined && r.max !== undefined) return `${kind} between ${r.min} and ${r.max}`;
  if (r.min === 0) return `${kind} (0 or more)`;
  if (r.min !== undefined) return `${kind} of at least ${r.min}`;
  if (r.max !== undefined) return `${kind} of at most ${r.max}`;
  return kind;
}

const NUMERIC_TEXT = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/;

/** Proto-JSON writes 64-bit integers as strings ("12"), so numeric text is read as a number. */
function numericText(v: unknown): unknown {
  return typeof v === "string" && NUMERIC_TEXT.test(v) ? Number(v) : v;
}

/**
 * A number; YAML may give `2` for a double or `2.0` for an integer field. `expected` replaces the phrase
 * built from the rule when a semantic rule narrows the field further, so both say the same; `aboveMax`, the
 * phrase for a number over `rule.max` alone.
 */
export function num(
  rule: NumberRule = {},
  expected = describeNumber(rule),
  aboveMax = expected,
): z.ZodType<number> {
  // One issue per value, the first check that fails: a number past max is not also called not whole
  // (zod's int ends at 2^53), and gets the phrase that says why.
  const abort = true;
  let n = z.number({ error: expected });
  if (rule.max !== undefined) n = n.max(rule.max, { error: aboveMax, abort });
  if (rule.int) n = n.int({ error: expected, abort });
  if (rule.min !== undefined) n = n.min(rule.min, { error: expected, abort });
  return z.preprocess(numericText, n);
}

/** The largest value of a proto uint32 field. */
export const MAX_UINT32 = 0xffff_ffff;

/**
 * A proto uint32: larger numbers are refused, not stored, since Peloton (and any proto client reading the
 * config back) could not hold them.
 */
export const uint = (): z.ZodType<number> =>
  num(
    { int: true, min: 0, max: MAX_UINT32 },
    describeNumber({ int: true, min: 0 }),
    `a whole number from 0 to ${MAX_UINT32} (a uint32)`,
  );

/**
 * The largest resource amount a config may give, in its API unit (cores, GPUs, MB): 10^12. The model keeps
 * cpu and gpu in thousandths (`resources.ts`), and 10^12 × 1000 = 10^15 is below 2^53, so every amount is
 * held as a safe integer and sums of them stay finite. Larger numbers (a `cpuLimit` of 1e308 is Infinity
 * milli-cores) are refused, not stored: they would turn a pool's demand into Infinity, then NaN.
 */
export const MAX_AMOUNT = 1e12;

/** What a number over `MAX_AMOUNT` is told. */
export const AMOUNT_BOUND = `a number from 0 to ${MAX_AMOUNT} (1e12)`;

/** A resource amount (cores, GPUs, MB): a number from 0 to `MAX_AMOUNT`. */
export const amount = (): z.ZodType<number> =>
  num({ min: 0, max: MAX_AMOUNT }, describeNumber({ min: 0 }), AMOUNT_BOUND);

/**
 * A resource pool's amount (reservation, limit, share): at most `MAX_AMOUNT`; a negative one is left to the
 * pool's rules, which say what it is for (`a reservation of 0 or more`).
 */
export const poolAmount = (): z.ZodType<number> =>
  num({ max: MAX_AMOUNT }, describeNumber({}), `a number of at most ${MAX_AMOUNT} (1e12)`);

export const bool = (): z.ZodType<boolean> => z.boolean({ error: EXPECT.bool });

/**
 * Text; a number or boolean in the input is taken as its spelling, as yaml.v2 did for string fields. With
 * `maxChars`, longer text is refused (fields the store indexes in a column of that width).
 */
export function text(maxChars?: number): z.ZodType<string> {
  const str = z.string({ error: EXPECT.text });
  const schema = z.preprocess(
    (v) => typeof v === "number" || typeof v === "boolean" ? String(v) : v,
    maxChars === undefined ? str : str.max(maxChars, { error: `text of at most ${maxChars} characters` }),
  );
  return schema.register(keyMeta, { text: true });
}

/** The widths of a job's name and owner columns in the SQL store (prod/store/schema.ts). */
export const MAX_JOB_NAME_CHARS = 512;
export const MAX_JOB_OWNER_CHARS = 255;

export const textList = (): z.ZodType<string[]> => z.array(text(), { error: EXPECT.list });

/** An id given as text or wrapped the proto way, `{value: root}` (`peloton.ResourcePoolID`). */
export function wrappedId(): z.ZodType<string> {
  const expected = "an id, as text or as {value: <id>}";
  const unwrap = (v: unknown) => {
    if (!isPlainObject(v)) return typeof v === "number" ? String(v) : v;
    const keys = Object.keys(v);
    return keys.length === 1 && canonKey(keys[0]) === "value" ? v[keys[0]] : v;
  };
  return z.preprocess(unwrap, z.string({ error: expected })).register(keyMeta, { text: true });
}

export interface EnumOptions<T extends string> {
  /** Prefixes a name may carry: `CONDITION_` in `CONDITION_EQUAL`. */
  prefixes?: readonly string[];
  /** Other names, e.g. v1alpha's `POD` for `TASK`. */
  aliases?: Readonly<Record<string, NoInfer<T>>>;
  /**
   * How a name is written in messages, where the model keeps a shorter one than the proto's (`PACK_HOST`
   * for `PLACEMENT_STRATEGY_PACK_HOST`): a refusal lists the names a client finds in the proto.
   */
  shownAs?: (name: NoInfer<T>) => string;
}

const normName = (s: string) => s.toUpperCase().replace(/[^A-Z0-9]/g, "");

/**
 * A proto enum read from its number (`type: 1`, how the Go CLI files write it) or its name in any
 * reasonable spelling (`SERVICE`, `service`, `CONDITION_EQUAL`, `LABEL_CONSTRAINT_KIND_HOST`).
 * `null` marks a value that has a name only (respool kinds `cpu`, `memory`, ...).
 */
export function protoEnum<T extends string>(
  values: Readonly<Record<T, number | null>>,
  opts: EnumOptions<T> = {},
): z.ZodType<T> {
  const entries = Object.entries(values) as [T, number | null][];
  const prefixes = (opts.prefixes ?? []).map(normName);
  const strip = (n: string) => {
    for (const p of prefixes) if (n.startsWith(p) && n.length > p.length) return n.slice(p.length);
    return n;
  };
  const byName = new Map<string, T>();
  const addName = (spelling: string, name: T) => {
    byName.set(normName(spelling), name);
    byName.set(strip(normName(spelling)), name);
  };
  for (const [name] of entries) addName(name, name);
  for (const [alias, name] of Object.entries(opts.aliases ?? {}) as [string, T][]) addName(alias, name);
  const byNumber = new Map<number, T>();
  for (const [name, n] of entries) if (n !== null) byNumber.set(n, name);
  const shown = opts.shownAs ?? ((name: T) => name);
  const expected = "one of " +
    entries.map(([name, n]) => n === null ? shown(name) : `${shown(name)} (${n})`).join(", ").replace(
      /, ([^,]*)$/,
      " or $1",
    );
  return z.unknown().transform((v, ctx): T => {
    const hit = typeof v === "number"
      ? byNumber.get(v)
      : typeof v === "string"
      ? byName.get(normName(v)) ?? byName.get(strip(normName(v))) ?? byNumber.get(Number(v.trim() || NaN))
      : undefined;
    if (hit !== undefined) return hit;
    ctx.addIssue({ code: "custom", message: expected, input: v });
    return z.NEVER;
  });
}

/** A key of `instanceConfig` / `instanceSpec`: YAML writes `0:`, proto-JSON writes `"0":`. */
export const instanceIdKey = (): z.ZodType<string> =>
  z.string().regex(/^(0|[1-9]\d*)$/, { error: "an instance id (a whole number, 0 or more)" });
