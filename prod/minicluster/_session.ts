/** Processes in a session of their own (so a kill reaches their children), started without forking Deno. */

/**
 * `setsid(1)`, where there is one. Deno's `detached: true` starts a child with fork(), whose cost grows with
 * the daemon's memory (11 ms a task at a few hundred MB); through `setsid` the child is started with
 * posix_spawn instead, at a fixed cost of about 1 ms.
 */
const SETSID = ["/usr/bin/setsid", "/bin/setsid"].find((p) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
});

/**
 * A command whose process leads a new session and process group (its pid is the group id). A spawned
 * child is not a group leader, so `setsid` makes the session itself and execs the program in place: the
 * pid Deno reports is the task's.
 */
export function sessionCommand(
  program: string,
  args: string[],
  options: Omit<Deno.CommandOptions, "args" | "detached">,
): Deno.Command {
  if (!SETSID) return new Deno.Command(program, { ...options, args, detached: true });
  return new Deno.Command(SETSID, { ...options, args: [program, ...args] });
}

/**
 * Signals a whole process group; a group that already exited is not an error. `live`: the process was
 * not reaped yet, so if it has not made its group yet (it is still becoming `setsid`) it is signalled
 * alone, which ends it before it runs the program.
 */
export function signalGroup(pgid: number, signal: Deno.Signal, live = false): void {
  // kill(0) and kill(-0) signal the caller's own group, kill(-1) every process it may signal: never a task's.
  if (!Number.isInteger(pgid) || pgid <= 1) throw new RangeError(`not a task's process group: ${pgid}`);
  try {
    Deno.kill(-pgid, signal);
  } catch {
    // ESRCH: every member already exited, or the group does not exist yet.
    if (!live) return;
    try {
      Deno.kill(pgid, signal);
    } catch { /* exited meanwhile */ }
  }
}

/**
 * The file `execvp` would run for `program` (searched on `PATH` when it has no slash; relative to `cwd`
 * otherwise). Through `setsid` a missing program would only show as exit status 127, so it is looked up
 * first and a missing one is an error here, as Deno's own spawn reports it.
 */
export async function resolveProgram(
  program: string,
  cwd: string,
  path: string | undefined,
): Promise<string> {
  let seen: { file: string; st: Deno.FileInfo } | undefined;
  for (const file of candidates(program, cwd, path)) {
    try {
      const st = await Deno.stat(file);
      if (isExecutable(st)) return file;
      seen ??= { file, st };
    } catch { /* not here */ }
  }
  throw notFound(program, seen);
}

/** `resolveProgram` without awaiting, for the spawner's worker thread. */
export function resolveProgramSync(program: string, cwd: string, path: string | undefined): string {
  let seen: { file: string; st: Deno.FileInfo } | undefined;
  for (const file of candidates(program, cwd, path)) {
    try {
      const st = Deno.statSync(file);
      if (isExecutable(st)) return file;
      seen ??= { file, st };
    } catch { /* not here */ }
  }
  throw notFound(program, seen);
}

function candidates(program: string, cwd: string, path: string | undefined): string[] {
  if (!program) throw new Error("the command is empty");
  return program.includes("/")
    ? [program.startsWith("/") ? program : `${cwd}/${program}`]
    : (path ?? "/usr/local/bin:/usr/bin:/bin").split(":").map((d) => `${d || "."}/${program}`);
}

function isExecutable(st: Deno.FileInfo): boolean {
  return st.isFile && ((st.mode ?? 0o111) & 0o111) !== 0;
}

/** No executable file for `program`; `seen` is the first file found by its name that cannot be run. */
function notFound(program: string, seen?: { file: string; st: Deno.FileInfo }): Error {
  if (seen) {
    const what = seen.st.isDirectory
      ? "a directory"
      : seen.st.isFile
      ? "not executable"
      : "not a regular file";
    const where = seen.file === program ? "" : ` (${seen.file})`;
    return new Error(`program "${program}"${where} is ${what}`);
  }
  return new Error(`program "${program}" was not found${program.includes("/") ? "" : " on PATH"}`);
}
