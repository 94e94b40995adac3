/** The shape of a CLI command and the context it runs in. */
import { TASK_ORDER_PROPERTIES } from "../../core/jobmgr/task_query.ts";
import { canonKey, MAX_UINT32 } from "../../core/model/_schema_kit.ts";
import { closestName } from "../../core/model/_key_normalize.ts";
import type { PelotonClient } from "./client.ts";

export interface CommandContext {
  client: PelotonClient;
  json: boolean;
  out: (line: string) => void;
  err: (line: string) => void;
  /** Raw bytes to stdout, unchanged (`task logs`); absent, commands print lines through `out`. */
  write?: (bytes: Uint8Array) => Promise<void>;
  /** Asks the user a yes/no question; absent (or not a terminal) counts as no. */
  confirm?: (question: string) => Promise<boolean>;
  /** Runs `handler` on Ctrl-C (SIGINT) instead of exiting, until the function it returns is called. */
  onInterrupt?: (handler: () => void) => () => void;
}

export type OptionSpec = Record<
  string,
  { type: "string" | "boolean"; short?: string; multiple?: boolean; default?: string | boolean }
>;

export interface Command {
  /** Words that select the command, e.g. `job create`. */
  name: string;
  /** Positional argument names; a trailing `?` marks an optional one, `...` on the last one several. */
  args: string[];
  summary: string;
  options?: OptionSpec;
  /** Offline commands need no server. */
  offline?: boolean;
  run(ctx: CommandContext, args: string[], opts: Record<string, unknown>): Promise<number>;
}

/**
 * Thrown by `out` and `write` when stdout's reader has gone (`peloton ... | head -1`, EPIPE): the command
 * stops there, and the CLI exits 0 saying nothing, as a command whose output was cut short by its reader.
 */
export class OutputClosed extends Error {
  override readonly name = "OutputClosed";
  constructor() {
    super("stdout closed by its reader");
  }
}

/**
 * Thrown by `out` and `write` when stdout cannot be written for another reason than its reader going away
 * (a full disk, an I/O error): the CLI says so in one line on stderr and exits 1.
 */
export class OutputFailed extends Error {
  override readonly name = "OutputFailed";
}

/** Thrown for bad command-line input: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** The one of `known` that `given` is likely a typo of, `-` aside too (`data_dir` for `data-dir`). */
export function closest(given: string, known: readonly string[]): string | undefined {
  return closestName(given, known, (k) => canonKey(k).replaceAll("-", ""));
}

/**
 * node:util parseArgs' unknown-option error said for people, with the flag of `options` it is closest to
 * (`unknown flag --jobid; did you mean --jobID?`): its own text suggests quoting the flag as an argument,
 * which is seldom what was meant. Undefined for any other error.
 */
export function unknownFlag(e: Error, options: readonly string[]): string | undefined {
  const flag = /^Unknown option '(-[^']*)'/.exec(e.message)?.[1];
  if (flag === undefined) return undefined;
  // A short flag is one letter: too short to tell which was meant.
  const meant = flag.startsWith("--") ? closest(flag.slice(2), options) : undefined;
  return `unknown flag ${flag}${meant ? `; did you mean --${meant}?` : ""}`;
}

/**
 * The largest value of a proto `uint32`, the type of the API's limits, offsets, counts, batch sizes and
 * instance ids: a larger one sent as JSON would be refused (or, past 2^53, not even be the number given).
 */
export { MAX_UINT32 };

/** What a value over `max` is told it should have been. */
const upTo = (min: number, max: number) =>
  `from ${min} to ${max}${max === MAX_UINT32 ? " (the API's uint32)" : ""}`;

/**
 * A whole-number flag (`-n 100`), at least `min` and at most `max` (the uint32 the API takes); anything else
 * is a UsageError naming the flag.
 */
export function wholeFlag(flag: string, v: unknown, min: number, max = MAX_UINT32): number {
  const n = Number(v);
  if (!/^\d+$/.test(String(v)) || n < min) {
    throw new UsageError(`--${flag}: got "${v}", expected an integer >= ${min}`);
  }
  if (n > max) throw new UsageError(`--${flag}: got "${v}", expected an integer ${upTo(min, max)}`);
  return n;
}

/**
 * A whole-number argument or flag value named `name` (`BATCH-SIZE`, `--maxattempts`), at most `max` (the
 * uint32 the API takes); anything else is a UsageError naming it.
 */
export function wholeNumber(name: string, v: string, max = MAX_UINT32): number {
  if (!/^\d+$/.test(v)) throw new UsageError(`${name}: got "${v}", expected a whole number`);
  const n = Number(v);
  if (n > max) throw new UsageError(`${name}: got "${v}", expected a whole number ${upTo(0, max)}`);
  return n;
}

/** What a query command's `--sort` and `-a` take, and what each means when left out (Peloton's CLI defaults). */
export interface SortFlags {
  properties: readonly string[];
  /** The order when `-a` is not given. */
  order: "ASC" | "DESC";
  /** The property `-a` alone sorts by; without one, `-a` alone sorts nothing. */
  property?: string;
}

/** `task query` and `pod query`: Peloton's task properties, ascending unless `-a` says otherwise. */
export const TASK_SORT: SortFlags = { properties: TASK_ORDER_PROPERTIES, order: "ASC" };

/** The flags of `task query` and `pod query`, Peloton's `task query` ones. */
export const TASK_QUERY_OPTIONS: OptionSpec = {
  states: { type: "string", short: "s" },
  names: { type: "string" },
  hosts: { type: "string" },
  limit: { type: "string", short: "n", default: "100" },
  offset: { type: "string", short: "o", default: "0" },
  sort: { type: "string", short: "p" },
  sortorder: { type: "string", short: "a", default: "ASC" },
};

/** What `TASK_QUERY_OPTIONS` do, for a command's summary. */
export const TASK_QUERY_SUMMARY =
  "-s states, --names NAME,..., --hosts HOST,...; -n limit (100), -o offset, " +
  "-p/--sort creation_time|host|instanceId|message|name|reason|state (comma-separated), -a ASC|DESC";

/**
 * `--sort state,host -a DESC` (Peloton's `-p state,host -a DESC`): a query's `orderBy`, each property in the
 * one order `-a` gives, as Peloton's CLI builds it (v1alpha names the orders `ORDER_BY_ASC` and
 * `ORDER_BY_DESC`); empty with neither flag, leaving the order to the server.
 */
export function sortOrder(
  sort: unknown,
  order: unknown,
  flags: SortFlags,
  api: "v0" | "v1alpha" = "v0",
): { order: string; property: { value: string } }[] {
  const dir = String(order ?? flags.order).toUpperCase();
  if (dir !== "ASC" && dir !== "DESC") {
    throw new UsageError(`--sortorder: got "${order}", expected ASC or DESC`);
  }
  const properties = String(sort ?? "").split(",").map((p) => p.trim()).filter(Boolean);
  if (!properties.length && order !== undefined && flags.property) properties.push(flags.property);
  return properties.map((p) => {
    if (!flags.properties.includes(p)) {
      throw new UsageError(`--sort: got "${p}", expected one of ${flags.properties.join(", ")}`);
    }
    return { order: api === "v0" ? dir : `ORDER_BY_${dir}`, property: { value: p } };
  });
}
