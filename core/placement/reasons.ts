/** Why a task found no host, in words reports can count: the engine's stage counts plus the host manager's. */
import { constraintFailed, REJECT, staticPortTaken } from "../hostmgr/acquire.ts";
import type { RmTask } from "../messages.ts";
import {
  R_CONSTRAINT,
  R_CPU,
  R_DISK,
  R_EXCLUSIVE,
  R_GPU,
  R_GPU_KEPT,
  R_MEM,
  R_PORTS,
  R_REQUIRED,
  R_SLACK,
  REASONS,
} from "./round.ts";

/** Stage names, by reason code (the constraint's own description replaces R_CONSTRAINT). */
export const STAGE_TEXT: string[] = [];
STAGE_TEXT[R_REQUIRED] = REJECT.notRequired;
STAGE_TEXT[R_GPU_KEPT] = REJECT.gpuKept;
STAGE_TEXT[R_EXCLUSIVE] = REJECT.exclusive;
STAGE_TEXT[R_CPU] = REJECT.cpu;
STAGE_TEXT[R_MEM] = REJECT.mem;
STAGE_TEXT[R_DISK] = REJECT.disk;
STAGE_TEXT[R_GPU] = REJECT.gpu;
STAGE_TEXT[R_SLACK] = REJECT.slack;
STAGE_TEXT[R_PORTS] = REJECT.ports;
STAGE_TEXT[R_CONSTRAINT] = "constraint failed";

/** Merged rejection counts: hosts the host manager did not lease plus leased hosts the engine could not use. */
export function rejectionCounts(
  task: RmTask,
  stages: Int32Array | null,
  hostmgr: Record<string, number> | undefined,
): Map<string, number> {
  const out = new Map<string, number>();
  const add = (why: string, n: number) => n > 0 && out.set(why, (out.get(why) ?? 0) + n);
  for (const [why, n] of Object.entries(hostmgr ?? {})) add(why, n);
  if (stages) {
    for (let k = 0; k < REASONS; k++) {
      if (k === R_REQUIRED && task.requiredHost === undefined) continue;
      add(
        k === R_CONSTRAINT && task.constraint
          ? constraintFailed(task.constraint)
          : k === R_PORTS && stages[k] > 0
          ? portsText(task)
          : STAGE_TEXT[k],
        stages[k],
      );
    }
  }
  return out;
}

/**
 * A leased host had the task's static ports free (the host manager checks them): one the round took since is
 * the likely cause, so it is named as the host manager would.
 */
function portsText(task: RmTask): string {
  let statics: number[] | undefined;
  for (const p of task.ports) if (p.value !== 0) (statics ??= []).push(p.value);
  if (!statics) return REJECT.ports;
  return statics.length === 1 ? staticPortTaken(statics[0]) : `static ports ${statics.join(", ")}: one taken`;
}

/**
 * Whether a task's reason (`failureReason`) says its required host has too little free of something the
 * task needs (`required host h3: insufficient disk`), not that the host could not be leased (away, lost,
 * in maintenance): the job manager tells by it an instance that cannot fit its volume's host (its workflows
 * count it failed; outside one, it goes back to the config of its last placed run).
 */
export function requiredHostLacksRoom(reason: string, host: string): boolean {
  return reason.includes(`required host ${host}: insufficient `);
}

/**
 * "no host with 4 free GPUs: insufficient gpu on 1,900 hosts, GPU host kept for GPU work on 48,100
 * hosts"; the headline follows the most common reason.
 */
export function failureReason(task: RmTask, counts: Map<string, number>): string {
  const entries = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  if (task.requiredHost !== undefined) {
    // Other hosts never counted: only the required host's own reason says anything.
    const own = entries.find(([why]) => why !== REJECT.notRequired);
    if (!own) return `required host ${task.requiredHost} could not be leased`;
    return own[0].startsWith("required host") ? own[0] : `required host ${task.requiredHost}: ${own[0]}`;
  }
  const detail = entries.slice(0, 4).map(([why, n]) => `${why} on ${thousands(n)} hosts`).join(", ");
  const head = headline(task, entries[0]?.[0]);
  return detail ? `${head}: ${detail}` : `${head}: no hosts registered`;
}

function headline(task: RmTask, top: string | undefined): string {
  const r = task.resources;
  switch (top) {
    case REJECT.cpu:
      return `no host with ${r.cpuMilli / 1000} free cpus`;
    case REJECT.mem:
      return `no host with ${r.memMb} MB free memory`;
    case REJECT.disk:
      return `no host with ${r.diskMb} MB free disk`;
    case REJECT.gpu:
      return `no host with ${r.gpuMilli / 1000} free GPUs`;
    case REJECT.slack:
      return `no host with ${r.cpuMilli / 1000} free revocable cpus`;
    case REJECT.ports:
      return `no host with ${task.ports.length} free ports`;
    default:
      if (top?.startsWith(STATIC_PORT)) return `no host with ${staticPorts(task)} free`;
      return "no host fits";
  }
}

/** How both the host manager's and the engine's static port reasons start. */
const STATIC_PORT = "static port";

/** "port 31003", "ports 31003, 31004". */
function staticPorts(task: RmTask): string {
  const values = task.ports.filter((p) => p.value !== 0).map((p) => p.value);
  return `${values.length === 1 ? "port" : "ports"} ${values.join(", ")}`;
}

/** True when room, not a constraint or a host's state, kept the task out: reserving a host can help. */
export function roomIsMissing(counts: Map<string, number>): boolean {
  let room = 0, other = 0;
  for (const [why, n] of counts) {
    if (ROOM.has(why)) room += n;
    else if (why !== REJECT.leased && why !== REJECT.reserved) other += n;
  }
  return room > 0 && room >= other;
}

const ROOM = new Set<string>([REJECT.cpu, REJECT.mem, REJECT.disk, REJECT.gpu, REJECT.ports]);

/** 48112 → "48,112" (toLocaleString is slow enough to matter at thousands of reasons a second). */
export function thousands(n: number): string {
  const s = String(Math.trunc(n));
  let out = "";
  for (let i = 0; i < s.length; i++) {
    if (i > 0 && (s.length - i) % 3 === 0 && s[i - 1] !== "-") out += ",";
    out += s[i];
  }
  return out;
}
