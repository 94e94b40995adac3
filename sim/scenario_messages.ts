/** The scenario format's wording for the problems zod finds in fields whose schema gives no message of its own. */
import type { z } from "zod";

const TYPE_NAMES: Record<string, string> = {
  number: "a number",
  int: "a whole number",
  string: "text",
  boolean: "true or false",
  array: "a list",
  tuple: "a list",
  object: "a mapping",
  record: "a mapping",
};

/** "1 entry", "3 entries". */
const entries = (n: number) => `${n} ${n === 1 ? "entry" : "entries"}`;

/**
 * A per-parse error map (`schema.safeParse(x, { error: scenarioMessage })`): "expected ..." in the words
 * of the format's other errors, after which `issueText` says what the field holds. A missing field says
 * so; an unknown key lists the keys its mapping takes. Issues it does not know keep zod's message.
 */
export function scenarioMessage(iss: z.core.$ZodRawIssue): string | undefined {
  switch (iss.code) {
    case "invalid_type": {
      const expected = `expected ${TYPE_NAMES[iss.expected] ?? iss.expected}`;
      return iss.input === undefined ? `missing; ${expected}` : expected;
    }
    case "too_small":
      if (iss.origin === "array" || iss.origin === "set") {
        return `expected at least ${entries(Number(iss.minimum))}`;
      }
      if (iss.origin === "string") {
        return Number(iss.minimum) === 1 ? "expected text that is not empty" : undefined;
      }
      return iss.inclusive ? `expected at least ${iss.minimum}` : `expected more than ${iss.minimum}`;
    case "too_big":
      if (iss.origin === "array" || iss.origin === "set") {
        return `expected at most ${entries(Number(iss.maximum))}`;
      }
      if (iss.origin === "string") return undefined;
      return iss.inclusive ? `expected at most ${iss.maximum}` : `expected less than ${iss.maximum}`;
    case "invalid_value":
      return `expected one of ${iss.values.map(String).join(", ")}`;
    case "unrecognized_keys": {
      const shape = (iss.inst as { _zod?: { def?: { shape?: Record<string, unknown> } } } | undefined)?._zod
        ?.def
        ?.shape;
      return shape ? `unknown key; expected one of ${Object.keys(shape).join(", ")}` : "unknown key";
    }
    default:
      return undefined;
  }
}

/** The most characters of a text value an error quotes. */
const QUOTED_CHARS = 60;

/**
 * A value as an error quotes it (JSON), a long text cut short after QUOTED_CHARS characters: a file that
 * is one long value (a CSV trace named as the scenario) is not echoed back whole. A number JSON has no
 * word for (JSON would say null) reads as YAML writes it: `.inf`, `-.inf`, `.nan`.
 */
export function quote(value: unknown): string {
  if (typeof value === "number" && !Number.isFinite(value)) {
    return Number.isNaN(value) ? ".nan" : value > 0 ? ".inf" : "-.inf";
  }
  if (typeof value !== "string" || value.length <= QUOTED_CHARS) return JSON.stringify(value);
  const start = JSON.stringify(value.slice(0, QUOTED_CHARS)).slice(0, -1);
  return `${start}..." (${value.length.toLocaleString("en-US")} characters)`;
}
