/** Reading the files a command is given, and checking config files with the model's loaders. */
import { type ConfigIssue, type ConfigKind, formatIssues, type LoadResult } from "../../core/model/load.ts";
import { readUtf8File } from "../utf8.ts";
import { type CommandContext, UsageError } from "./command.ts";

/**
 * A file the command was given (`/dev/stdin` for standard input), as UTF-8 text; one it cannot read, or
 * that is not UTF-8, is a usage error naming it.
 */
export async function readInput(path: string): Promise<string> {
  try {
    return await readUtf8File(path);
  } catch (e) {
    throw new UsageError(`cannot read ${path}: ${(e as Error).message}`);
  }
}

/** The commands that take a file of each kind, said when a file of one is given to a command for another. */
const TAKEN_BY: Partial<Record<ConfigKind, string>> = {
  job: "create it with `job create`, or update a job to it with `update create`",
  "stateless-spec":
    "create it with `job stateless create`, or update a job to it with `job stateless replace`",
  respool: "create it with `respool create PATH FILE`",
};

const withCommand = (e: ConfigIssue): ConfigIssue => {
  const taken = e.fileKind && TAKEN_BY[e.fileKind];
  return taken ? { ...e, message: `${e.message}: ${taken}` } : e;
};

/**
 * Checks a config file's text with `load`: its warnings go to stderr; when it is invalid the errors do too,
 * and the result is undefined (the command exits 1 and sends nothing). A file of another kind is refused
 * naming the command that takes it.
 */
export function checkConfig<T>(
  ctx: CommandContext,
  text: string,
  file: string,
  load: (text: string, file: string) => LoadResult<T>,
): T | undefined {
  const loaded = load(text, file);
  for (const w of loaded.warnings) ctx.err(`warning: ${w.message}`);
  if (!loaded.ok) {
    ctx.err(formatIssues(loaded.errors.map(withCommand)));
    return undefined;
  }
  return loaded.value;
}

/** Reads a config file and checks it with `load`, as `checkConfig` does. */
export async function loadConfigFile<T>(
  ctx: CommandContext,
  file: string,
  load: (text: string, file: string) => LoadResult<T>,
): Promise<T | undefined> {
  return checkConfig(ctx, await readInput(file), file, load);
}
