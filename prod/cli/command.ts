/** The shape of a CLI command and the context it runs in. */
import { formatIssues, type LoadResult } from "../../core/model/load.ts";
import type { PelotonClient } from "./client.ts";

export interface CommandContext {
  client: PelotonClient;
  json: boolean;
  out: (line: string) => void;
  err: (line: string) => void;
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

/** A file the command was given, as text; one it cannot read is a usage error naming it. */
export async function readInput(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    throw new UsageError(`cannot read ${path}: ${(e as Error).message}`);
  }
}

/**
 * Reads a config file and checks it with `load`: its warnings go to stderr; when it is invalid the errors
 * do too, and the result is undefined (the command exits 1 and sends nothing).
 */
export async function loadConfigFile<T>(
  ctx: CommandContext,
  file: string,
  load: (text: string, file: string) => LoadResult<T>,
): Promise<T | undefined> {
  const loaded = load(await readInput(file), file);
  for (const w of loaded.warnings) ctx.err(`warning: ${w.message}`);
  if (!loaded.ok) {
    ctx.err(formatIssues(loaded.errors));
    return undefined;
  }
  return loaded.value;
}
