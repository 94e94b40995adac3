/** What the stateful-job e2e tests share: instance 0's state and stdout, a job's volumes and their directories. */
import assert from "node:assert/strict";
import { cli, waitFor } from "./testing.ts";

export type Task = { runtime: { state: string; host?: string; mesosTaskId: { value: string } } };

async function task0(url: string, job: string): Promise<Task> {
  const r = await cli(url, "task", "list", job, "-j");
  assert.equal(r.code, 0, r.err);
  return JSON.parse(r.out).result.value["0"];
}

/** Waits until instance 0 is in `state` (in its run `run`, when given). */
export function inState(
  url: string,
  job: string,
  state: string,
  run?: number,
  timeoutMs?: number,
): Promise<Task> {
  return waitFor(`${job}-0 ${state}${run ? ` in run ${run}` : ""}`, async () => {
    const t = await task0(url, job);
    const at = Number(t.runtime.mesosTaskId.value.split("-").at(-1));
    return t.runtime.state === state && (run === undefined || at === run) ? t : undefined;
  }, timeoutMs);
}

/** Instance 0's stdout once its shell has written it. */
export function runsLine(url: string, job: string): Promise<string> {
  return waitFor(`the stdout of ${job}-0`, async () => {
    const out = (await cli(url, "task", "logs", job, "0")).out;
    return /^runs: \d+ on /.test(out) ? out : undefined;
  });
}

/** The ids of the job's volumes, as `volume list` gives them. */
export async function volumeIds(url: string, job: string): Promise<string[]> {
  const r = await cli(url, "volume", "list", job, "-j");
  assert.equal(r.code, 0, r.err);
  return Object.keys(JSON.parse(r.out).volumes);
}

/** The volume's directory on each agent under `agentsDir` (a minicluster's or an emulator's) that has one. */
export async function volumeDirs(agentsDir: string, volumeId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const agent of Deno.readDir(agentsDir)) {
    const dir = `${agentsDir}/${agent.name}/volumes/${volumeId}`;
    if (await Deno.stat(dir).then(() => true, () => false)) out.push(dir);
  }
  return out;
}
