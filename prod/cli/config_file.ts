/** Reading the files a command is given, and checking config files with the model's loaders. */
import { formatIssues, type LoadResult } from "../../core/model/load.ts";
import { type CommandContext, UsageError } from "./command.ts";

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
