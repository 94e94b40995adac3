/** Why a gang could not be placed whole, in words that agree with the hosts it was tried on. */
import type { RmTask } from "../messages.ts";
import { perHostLimit } from "./constraints.ts";
import { thousands } from "./reasons.ts";

/**
 * A gang's failure. Its rejection counts (`stages`, per filter stage) are taken over the round's hosts as
 * they were before any of its tasks was tried (`PartitionPlacer` counts after giving back what the gang
 * took), so the round's hosts not counted had room for one of its tasks. With none (or no counts: the round
 * was not run), `perTask` (the task's own reason, "no host with 4 free cpus: ...") is the point; with some,
 * the gang needed more room than they had together, which a per-task headline would deny: "gang of 2 could
 * not be placed whole: too few hosts with room for its tasks (4 cpus, 2048 MB memory, 1 GPU each): room for
 * one on 1 host, not for all 2; insufficient cpu on 1 hosts, insufficient gpu on 1 hosts". When the gang's
 * host limit caps those hosts below its size, the limit is named instead: "at most 1 of its tasks per host
 * (maxPerHost/host limit): 10 hosts with room, not for all 11". `counts` are the merged counts `perTask`
 * was worded from (the host manager's too).
 */
export function gangFailure(
  tasks: readonly RmTask[],
  perTask: string,
  counts: Map<string, number>,
  stages: Int32Array | null,
  roundHosts: number,
): string {
  const n = tasks.length;
  const head = `gang of ${n} could not be placed whole`;
  let roomy = stages ? roundHosts : 0;
  for (const hosts of stages ?? []) roomy -= hosts;
  if (roomy <= 0) return `${head}: ${perTask}`;
  const hosts = `${thousands(roomy)} ${roomy === 1 ? "host" : "hosts"}`;
  const detail = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 4)
    .map(([why, hosts]) => `${why} on ${thousands(hosts)} hosts`).join(", ");
  const rest = `not for all ${n}${detail ? `; ${detail}` : ""}`;
  // The hosts with room could take no more than the limit each, however much room they had: the limit,
  // not their resources, is what a planner would change (more hosts or a looser limit, not bigger hosts).
  const limit = sharedHostLimit(tasks);
  if (limit !== undefined && roomy * limit < n) {
    const each = `at most ${thousands(limit)} of its tasks per host (maxPerHost/host limit)`;
    return `${head}: ${each}: ${hosts} with room, ${rest}`;
  }
  const shape = sameShape(tasks);
  const what = shape ? `its tasks (${shape} each)` : "its tasks";
  return `${head}: too few hosts with room for ${what}: room for one on ${hosts}, ${rest}`;
}

/** The host limit (`perHostLimit`) every task of the gang has, the same for all; undefined otherwise. */
function sharedHostLimit(tasks: readonly RmTask[]): number | undefined {
  const limit = perHostLimit(tasks[0].constraint, tasks[0].labels);
  for (const t of tasks) if (perHostLimit(t.constraint, t.labels) !== limit) return undefined;
  return limit;
}

/** "4 cpus, 1 GPU" when every task asks for the same; undefined when they differ. */
function sameShape(tasks: readonly RmTask[]): string | undefined {
  const [t] = tasks, r = t.resources;
  for (const o of tasks) {
    const q = o.resources;
    if (
      q.cpuMilli !== r.cpuMilli || q.memMb !== r.memMb || q.diskMb !== r.diskMb ||
      q.gpuMilli !== r.gpuMilli ||
      o.revocable !== t.revocable || o.ports.length !== t.ports.length
    ) return undefined;
  }
  const parts: string[] = [];
  const cpu = r.cpuMilli / 1000, gpu = r.gpuMilli / 1000;
  if (cpu > 0) parts.push(`${cpu} ${t.revocable ? "revocable " : ""}${cpu === 1 ? "cpu" : "cpus"}`);
  if (r.memMb > 0) parts.push(`${r.memMb} MB memory`);
  if (r.diskMb > 0) parts.push(`${r.diskMb} MB disk`);
  if (gpu > 0) parts.push(`${gpu} ${gpu === 1 ? "GPU" : "GPUs"}`);
  if (t.ports.length) parts.push(`${t.ports.length} ${t.ports.length === 1 ? "port" : "ports"}`);
  return parts.join(", ") || undefined;
}
