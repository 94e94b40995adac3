/** A task's whole process tree ends with it: children in other process groups and sessions too. */
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { Minicluster, type MiniclusterOptions } from "./minicluster.ts";
import { isAlive, makeSpec as specFor, Recorder } from "../backend_testing.ts";
import type { SpawnerKind } from "./spawner.ts";
import { sandboxPath } from "./agent.ts";

function assert(cond: unknown, message = "assertion failed"): asserts cond {
  if (!cond) throw new Error(message);
}

const AGENT_0 = { hostname: "agent-0", agentId: "minicluster-S0" };

function makeSpec(command: string, overrides: Partial<LaunchSpec> = {}): LaunchSpec {
  return specFor(AGENT_0, command, overrides);
}

type Body = (mc: Minicluster, rec: Recorder, dataDir: string) => Promise<void>;

function treeTest(name: string, body: Body, options: Partial<MiniclusterOptions> = {}): void {
  for (const spawner of ["posix_spawn", "setsid", "in-process"] as SpawnerKind[]) {
    Deno.test(`${name} (${spawner} spawner)`, async () => {
      const dataDir = await Deno.makeTempDir({ prefix: "process_tree_test_" });
      const mc = new Minicluster({ dataDir, agents: 1, stopGracePeriodMs: 200, spawner, ...options });
      const rec = new Recorder();
      mc.start(rec.sink);
      try {
        await body(mc, rec, dataDir);
      } finally {
        await mc.stop();
        await Deno.remove(dataDir, { recursive: true });
      }
    });
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The pids a task wrote to `pids` in its sandbox, once it wrote `n` of them. */
async function pidsOf(dataDir: string, taskId: string, n: number): Promise<number[]> {
  const file = `${sandboxPath(dataDir, AGENT_0.agentId, taskId)}/pids`;
  for (const deadline = Date.now() + 5000; Date.now() < deadline; await delay(20)) {
    const text = await Deno.readTextFile(file).catch(() => "");
    const pids = text.split(/\s+/).filter(Boolean).map(Number);
    if (pids.length >= n) return pids;
  }
  throw new Error(`timed out waiting for ${n} pids from ${taskId}`);
}

function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* gone */ }
  }
}

/** Children that left the task's process group (`timeout` does) or its session (`setsid`, `nohup`). */
const ESCAPERS = [
  "timeout 1000 sleep 1007 & echo $! >>pids",
  "setsid sleep 1001 & echo $! >>pids",
  "setsid nohup sleep 1002 >/dev/null 2>&1 & echo $! >>pids",
  // A grandchild in a session of its own whose parent stays: found by its parent chain and its mark.
  "setsid sh -c 'sleep 1003 & echo $! >>pids; wait' & echo $! >>pids",
].join("\n");

treeTest(
  "a task that exits leaves no process behind, whatever its group or session",
  async (mc, rec, dataDir) => {
    const spec = makeSpec(`${ESCAPERS}\nsleep 0.3; echo exiting`);
    mc.launch([spec]);
    const pids = await pidsOf(dataDir, spec.taskId, 5);
    try {
      await rec.waitState(spec.taskId, "TASK_FINISHED");
      // By the time the run is reported ended, nothing of it runs: a next run never overlaps it.
      const alive = pids.filter(isAlive);
      assert(alive.length === 0, `still running after TASK_FINISHED: ${alive} of ${pids}`);
    } finally {
      killAll(pids);
    }
  },
);

treeTest(
  "a killed task's processes in other groups and sessions get SIGTERM, then SIGKILL after the grace period",
  async (mc, rec, dataDir) => {
    // The other-session child notes the SIGTERM it got, and does not exit on it: only SIGKILL ends it.
    const stubborn = `setsid sh -c 'trap "echo term >>got_term" TERM; echo $$ >>pids; ` +
      `while :; do sleep 0.05; done' &`;
    const spec = makeSpec(`${ESCAPERS}\n${stubborn}\ntrap '' TERM\nwhile :; do sleep 0.05; done`, {
      killGracePeriodMs: 600,
    });
    mc.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    const pids = await pidsOf(dataDir, spec.taskId, 6);
    try {
      const started = Date.now();
      mc.kill([{ taskId: spec.taskId, agentId: AGENT_0.agentId, gracePeriodMs: 600 }]);
      await rec.waitState(spec.taskId, "TASK_KILLED");
      const tookMs = Date.now() - started;
      assert(tookMs >= 500, `the grace period was cut short: killed after ${tookMs} ms`);
      const alive = pids.filter(isAlive);
      assert(alive.length === 0, `still running after TASK_KILLED: ${alive} of ${pids}`);
      const got = await Deno.readTextFile(`${sandboxPath(dataDir, AGENT_0.agentId, spec.taskId)}/got_term`)
        .catch(() => "");
      assert(got.includes("term"), "the child in another session never got SIGTERM");
    } finally {
      killAll(pids);
    }
  },
);

treeTest("a killed service's port is free for its next run", async (mc, rec) => {
  const port = 20000 + Math.floor(Math.random() * 10000);
  const serve = `timeout 3600 python3 -m http.server ${port} --bind 127.0.0.1`;
  const first = makeSpec(serve, { killGracePeriodMs: 200 });
  mc.launch([first]);
  await rec.waitState(first.taskId, "TASK_RUNNING");
  const deadline = Date.now() + 10_000;
  for (;; await delay(50)) {
    const up = await fetch(`http://127.0.0.1:${port}/`).then(
      async (r) => (await r.body?.cancel(), true),
      () => false,
    );
    if (up) break;
    assert(Date.now() < deadline, "the server never came up");
  }
  mc.kill([{ taskId: first.taskId, agentId: AGENT_0.agentId, gracePeriodMs: 200 }]);
  await rec.waitState(first.taskId, "TASK_KILLED");
  const next = makeSpec(`timeout 5 python3 -m http.server ${port} --bind 127.0.0.1 2>&1 | head -c 2000`);
  mc.launch([next]);
  await delay(1500);
  const log = await mc.logs(next.taskId, "stdout");
  assert(!/Address already in use/.test(log ?? ""), `the next run found the port taken: ${log}`);
  mc.kill([{ taskId: next.taskId, agentId: AGENT_0.agentId, gracePeriodMs: 0 }]);
});
