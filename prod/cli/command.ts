/** The shape of a CLI command and the context it runs in. */
import type { PelotonClient } from "./client.ts";

export interface CommandContext {
  client: PelotonClient;
  json: boolean;
  out: (line: string) => void;
  err: (line: string) => void;
  /** Asks the user a yes/no question; absent (or not a terminal) counts as no. */
  confirm?: (question: string) => Promise<boolean>;
}

export type OptionSpec = Record<
  string,
  { type: "string" | "boolean"; short?: string; multiple?: boolean; default?: string | boolean }
>;

export interface Command {
  /** Words that select the command, e.g. `job create`. */
  name: string;
  /** Positional argument names; a trailing `?` marks an optional one. */
  args: string[];
  summary: string;
  options?: OptionSpec;
  /** Offline commands need no server. */
  offline?: boolean;
  run(ctx: CommandContext, args: string[], opts: Record<string, unknown>): Promise<number>;
}

/** Thrown for bad command-line input: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
