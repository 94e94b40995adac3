/**
 * A job's secrets in the minicluster, which has no container to mount them in: each is written, before the
 * task's process exists, to a file under the task's sandbox, read-only for the agent's user (0400, in
 * directories made 0700). `/etc/app/key` lands at `<sandbox>/etc/app/key`, `conf/key` at
 * `<sandbox>/conf/key`; the task's environment is not changed (`$MESOS_SANDBOX` already names the sandbox).
 * Messages name a secret by its path, never by its data.
 */
import { secretPathsProblem } from "../../core/jobmgr/secrets.ts";
import type { LaunchSpec } from "../../core/ports/host_backend.ts";

export type Secret = NonNullable<LaunchSpec["secrets"]>[number];

/** The sandbox's own files, which a secret must not take the place of (its data would show as output). */
const OUTPUT_FILES = new Set(["stdout", "stderr"]);

/** Where a secret goes below the sandbox, as path components; a string says why it cannot go anywhere. */
export function secretPathParts(path: string): string[] | string {
  if (path === "") return "path is empty";
  if (path.includes("\0")) return "path has a NUL character";
  const parts = path.split("/").filter((p) => p !== "" && p !== ".");
  if (path.split("/").includes("..")) return 'path must not have ".." components';
  if (parts.length === 0) return "path names no file";
  if (parts.length === 1 && OUTPUT_FILES.has(parts[0])) return `path is the task's ${parts[0]} file`;
  return parts;
}

/** The secret's bytes: `data` is base64 (padding optional, whitespace ignored, as Mesos reads `bytes`). */
export function secretBytes(data: string): Uint8Array | undefined {
  // atob is the forgiving base64 decoder: it refuses other characters and misplaced or excess padding.
  try {
    return Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/**
 * Why `secrets` cannot be written into a sandbox (the first problem, naming its path), or undefined: their
 * paths by the rule a job's secrets were held to when it was created (`secretPathsProblem`), and data that
 * is base64.
 */
export function secretsProblem(secrets: readonly Secret[] | undefined): string | undefined {
  if (!secrets?.length) return undefined;
  const paths = secrets.map((s) => s.path);
  const pathProblem = secretPathsProblem(paths);
  if (pathProblem) return pathProblem;
  for (const [i, s] of secrets.entries()) {
    if (typeof s.data !== "string" || secretBytes(s.data) === undefined) {
      return `secrets[${i}] ${JSON.stringify(s.path)}: data is not valid base64`;
    }
  }
  return undefined;
}

/**
 * Writes every secret under `sandbox`, which exists. No symlink is followed below the sandbox (one a
 * fetched archive, a volume or an earlier run of the task left there would lead out of it); a file already
 * at a secret's path is replaced. Throws naming the path of the first secret that could not be written.
 */
export async function writeSecrets(sandbox: string, secrets: readonly Secret[]): Promise<void> {
  const problem = secretsProblem(secrets);
  if (problem) throw new Error(problem);
  for (const s of secrets) {
    try {
      await writeOne(sandbox, secretPathParts(s.path) as string[], secretBytes(s.data)!);
    } catch (e) {
      throw new Error(`secret ${JSON.stringify(s.path)}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}

async function writeOne(sandbox: string, parts: string[], bytes: Uint8Array): Promise<void> {
  let dir = sandbox;
  for (const [i, part] of parts.slice(0, -1).entries()) {
    dir = `${dir}/${part}`;
    const stat = await Deno.lstat(dir).catch((e) => {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    });
    if (!stat) {
      await Deno.mkdir(dir, { mode: 0o700 });
      await Deno.chmod(dir, 0o700);
    } else if (!stat.isDirectory) {
      const what = stat.isSymlink ? "a symlink" : "not a directory";
      throw new Error(`${parts.slice(0, i + 1).join("/")} in the sandbox is ${what}`);
    }
  }
  const file = `${dir}/${parts[parts.length - 1]}`;
  const stat = await Deno.lstat(file).catch(() => undefined);
  if (stat?.isDirectory) throw new Error(`${parts.join("/")} in the sandbox is a directory`);
  // Removing a symlink removes the link, not its target; createNew then refuses whatever took its place.
  if (stat) await Deno.remove(file);
  await Deno.writeFile(file, bytes, { createNew: true, mode: 0o400 });
  await Deno.chmod(file, 0o400);
}

/**
 * `<dataDir>/agents/<agentId>/secrets`: a file per run whose secrets may be in its sandbox, listing their
 * paths (never their data), so a minicluster started after a crash removes what the dead one left.
 */
export function secretRecordsDir(dataDir: string, agentId: string): string {
  return `${dataDir}/agents/${agentId}/secrets`;
}

/** Records where a run's secrets go, before any is written. */
export async function recordSecrets(dir: string, taskId: string, secrets: readonly Secret[]): Promise<void> {
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  await Deno.writeTextFile(`${dir}/${taskId}`, JSON.stringify(secrets.map((s) => s.path)));
}

/**
 * As Mesos removes a secret volume with its container: once a run ended, the secret files written into its
 * sandbox go (the rest of the sandbox stays for its logs), then the record of them. Sync, as
 * `removeLeftSecrets` runs before any agent is up; a few files.
 */
export function removeSecrets(dir: string, taskId: string, sandbox: string, paths: readonly string[]): void {
  for (const path of paths) {
    const parts = secretPathParts(path);
    if (typeof parts !== "string") removeOne(sandbox, parts);
  }
  try {
    Deno.removeSync(`${dir}/${taskId}`);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/**
 * Removes the secrets of every run a record names under `dataDir`: runs that ended while no minicluster ran
 * (it was killed), found when the next one starts, before its agents come up. Answers a line for each run
 * whose secrets could not all be removed (its record stays, for the next start).
 */
export function removeLeftSecrets(
  dataDir: string,
  sandboxOf: (agentId: string, taskId: string) => string,
): string[] {
  const problems: string[] = [];
  const failed = (what: string, e: unknown) =>
    problems.push(`cannot remove the secrets of ${what}: ${e instanceof Error ? e.message : e}`);
  let agentIds: string[] = [];
  try {
    agentIds = names(`${dataDir}/agents`);
  } catch (e) {
    failed("ended runs", e);
  }
  for (const agentId of agentIds) {
    const dir = secretRecordsDir(dataDir, agentId);
    let taskIds: string[] = [];
    try {
      taskIds = names(dir);
    } catch (e) {
      failed(`agent ${agentId}'s ended runs`, e);
    }
    for (const taskId of taskIds) {
      try {
        // A record cut short by the crash was being written: no secret had been yet.
        const paths = parseOr(Deno.readTextFileSync(`${dir}/${taskId}`), []);
        const listed = Array.isArray(paths) ? paths.filter((p): p is string => typeof p === "string") : [];
        removeSecrets(dir, taskId, sandboxOf(agentId, taskId), listed);
      } catch (e) {
        failed(`task ${taskId}`, e);
      }
    }
  }
  return problems;
}

/**
 * Removes the file at `parts` below `sandbox` if there is one, following no symlink: the task, which ran as
 * this user, may have put one where a directory of its secrets was, and the file it leads to is not ours.
 * A link in the secret's own place is removed (the link, not its target); a directory there is left.
 */
function removeOne(sandbox: string, parts: string[]): void {
  let dir = sandbox;
  for (const part of parts.slice(0, -1)) {
    dir = `${dir}/${part}`;
    const stat = lstatSync(dir);
    if (!stat?.isDirectory) return;
  }
  const file = `${dir}/${parts[parts.length - 1]}`;
  const stat = lstatSync(file);
  if (stat && !stat.isDirectory) Deno.removeSync(file);
}

function parseOr(text: string, otherwise: unknown): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return otherwise;
  }
}

function lstatSync(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return undefined;
    throw e;
  }
}

function names(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name).sort();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return [];
    throw e;
  }
}
