/** Records of the task processes agents started, so a minicluster started after a crash can end them. */
import { resolve } from "node:path";
import { signalGroup } from "./_session.ts";

/**
 * Every task process (and whatever it starts, unless it clears its environment) carries this variable,
 * set to the minicluster's absolute data dir. It covers the instant between a spawn and its record: a
 * crash there leaves a process no record names, which the next minicluster finds by its environment.
 */
export const DATA_DIR_ENV = "PELOTON_MINICLUSTER_DATA_DIR";

/** The value of `DATA_DIR_ENV` for a data dir. */
export function dataDirMark(dataDir: string): string {
  return resolve(dataDir);
}

/**
 * A task process as an agent saw it just after starting it: its pid (also its process group id) and its
 * start time (`/proc/<pid>/stat` field 22, clock ticks since boot), which tells it from a later process
 * that got the same pid. No start time where there is no `/proc`.
 */
export interface ProcessRecord {
  pid: number;
  startTicks?: string;
}

/** `<dataDir>/agents/<agentId>/processes`: one file per task whose process may still run. */
export function recordsDir(dataDir: string, agentId: string): string {
  return `${dataDir}/agents/${agentId}/processes`;
}

/** A process's start time, or undefined when it is gone (or there is no `/proc`). */
export function startTicks(pid: number): string | undefined {
  try {
    return parseStartTicks(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return undefined;
  }
}

async function readStartTicks(pid: number): Promise<string | undefined> {
  try {
    return parseStartTicks(await Deno.readTextFile(`/proc/${pid}/stat`));
  } catch {
    return undefined;
  }
}

function parseStartTicks(stat: string): string | undefined {
  return statFields(stat)[22 - 3];
}

/**
 * `/proc/<pid>/stat`'s fields from the third on (index 0 is field 3). The command name (field 2) may hold
 * spaces and parentheses: the fields after its last ")" start at 3.
 */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** Records a task's process; failing to is not an error (the task runs on, only a crash would orphan it). */
export async function recordProcess(dir: string, taskId: string, pid: number): Promise<void> {
  const record: ProcessRecord = { pid, startTicks: await readStartTicks(pid) };
  const file = `${dir}/${taskId}`;
  try {
    await Deno.writeTextFile(file, JSON.stringify(record));
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) return;
    await Deno.mkdir(dir, { recursive: true }).catch(() => {});
    await Deno.writeTextFile(file, JSON.stringify(record)).catch(() => {});
  }
}

/** Forgets a task's process once it was reaped. */
export async function forgetProcess(dir: string, taskId: string): Promise<void> {
  await Deno.remove(`${dir}/${taskId}`).catch(() => {});
}

/**
 * SIGKILLs the process group of every task process recorded under `dataDir` (by any agent, also one no
 * longer configured) and forgets them all. A minicluster calls it before its agents come up: records
 * left behind mean a previous one crashed, and its tasks then run on unsupervised.
 *
 * They are ended rather than adopted: an agent can neither wait on nor learn the exit status of a process
 * that is not its child (the crash re-parented them to init), so it could never report how they end.
 * Ended, they are unknown to the restarted cluster, and the scheduler's reconciliation relaunches each once.
 *
 * A pid whose start time differs from the recorded one belongs to another process now and is spared. A
 * leader that is gone while its group lives on is still the task's group: Linux does not reuse a pid while
 * a process group of that id exists. Then every process whose environment names this data dir
 * (`DATA_DIR_ENV`) is killed too, with its group when it leads one: that ends the processes a crash kept
 * from being recorded. Returns the pids signalled.
 */
export function endRecordedProcesses(dataDir: string): number[] {
  const ended: number[] = [];
  for (const agentId of dirNames(`${dataDir}/agents`, true)) {
    const dir = recordsDir(dataDir, agentId);
    for (const taskId of dirNames(dir, false)) {
      const file = `${dir}/${taskId}`;
      const record = readRecord(file);
      if (record && endProcess(record)) ended.push(record.pid);
      try {
        Deno.removeSync(file);
      } catch { /* gone already */ }
    }
  }
  endMarkedProcesses(dataDir, new Set(ended), ended);
  return ended;
}

/**
 * SIGKILLs the processes whose environment carries this data dir's mark (Linux's `/proc`; elsewhere, or
 * without the permission to list it, there is nothing to scan and the records alone apply). The caller
 * itself is spared.
 */
function endMarkedProcesses(dataDir: string, spared: Set<number>, ended: number[]): void {
  const mark = `${DATA_DIR_ENV}=${dataDirMark(dataDir)}`;
  let pids: string[];
  try {
    pids = dirNames("/proc", true);
  } catch (e) {
    // Deno lists /proc only with --allow-all; without it (tests that drop permissions) the records alone apply.
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) return;
    throw e;
  }
  for (const name of pids) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 1 || pid === Deno.pid || spared.has(pid)) continue;
    let environ: string, stat: string;
    try {
      environ = Deno.readTextFileSync(`/proc/${pid}/environ`);
      stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    } catch {
      continue; // gone, or another user's
    }
    if (!environ.split("\0").includes(mark)) continue;
    // Field 5, the process group: a task's leader is killed with its group, a descendant alone.
    const pgrp = Number(statFields(stat)[5 - 3]);
    if (pgrp === pid) signalGroup(pid, "SIGKILL", true);
    else {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* exited meanwhile */ }
    }
    ended.push(pid);
  }
}

function endProcess(record: ProcessRecord): boolean {
  const now = startTicks(record.pid);
  if (now !== undefined && now !== record.startTicks) return false; // another process has the pid
  // With the leader verified, a leader not yet in its own group (still becoming `setsid`) is killed alone.
  signalGroup(record.pid, "SIGKILL", now !== undefined);
  return true;
}

function readRecord(file: string): ProcessRecord | undefined {
  try {
    const record = JSON.parse(Deno.readTextFileSync(file));
    // Pid 0 or 1 would signal the caller's own group or init: only a positive pid above 1 is a task's.
    return Number.isInteger(record?.pid) && record.pid > 1 ? record : undefined;
  } catch {
    return undefined; // cut short by the crash, or unreadable: nothing to go on
  }
}

function dirNames(dir: string, directories: boolean): string[] {
  const names: string[] = [];
  try {
    for (const entry of Deno.readDirSync(dir)) {
      if (directories ? entry.isDirectory : entry.isFile) names.push(entry.name);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return names;
}
