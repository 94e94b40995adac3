/**
 * SLA-aware host maintenance against `peloton up`: a service with `maximumUnavailableInstances: 1` leaves a
 * host in maintenance one instance at a time, each only once the one before runs again elsewhere.
 */
import assert from "node:assert/strict";
import { cli, createDefaultPool, startUp, type UpProcess, waitFor } from "./testing.ts";

const SERVICE = `
name: sla-drain
type: SERVICE
owningTeam: team6
instanceCount: 4
sla: { priority: 10, preemptible: false, maximumUnavailableInstances: 1 }
defaultConfig:
  resource: { cpuLimit: 1, memLimitMb: 16, diskLimitMb: 10 }
  killGracePeriodSeconds: 1
  command: { shell: true, value: 'while true; do sleep 1; done' }
`;

type Task = { instanceId: number; runtime: { state: string; host?: string } };
type Event = { actualState: string; timestamp: string };

async function tasks(url: string, jobId: string): Promise<Task[]> {
  const r = await cli(url, "task", "list", jobId, "-j");
  assert.equal(r.code, 0, r.err);
  return Object.values(JSON.parse(r.out).result.value) as Task[];
}

/** An instance's state changes, oldest first, with their times in ms. */
async function events(
  url: string,
  jobId: string,
  instance: number,
): Promise<{ state: string; ms: number }[]> {
  const r = await cli(url, "task", "events", jobId, String(instance), "-j");
  assert.equal(r.code, 0, r.err);
  const list = (JSON.parse(r.out).result as Event[]).map((e) => ({
    state: e.actualState,
    ms: Date.parse(e.timestamp),
  }));
  return list.reverse();
}

Deno.test({
  name: "host maintenance drains a service with maximumUnavailableInstances 1 one instance at a time",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-sla-drain-" });
    let up: UpProcess | undefined = await startUp(`${dir}/peloton`, ["--agents", "2"]);
    try {
      await createDefaultPool(up.url);
      await Deno.writeTextFile(`${dir}/service.yaml`, SERVICE);
      const created = await cli(up.url, "job", "create", "/DefaultResPool", `${dir}/service.yaml`);
      assert.equal(created.code, 0, created.err);
      const jobId = /^Job (\S+) created$/.exec(created.out)![1];
      const placed = await waitFor("every instance running", async () => {
        const list = await tasks(up!.url, jobId);
        return list.length === 4 && list.every((t) => t.runtime.state === "RUNNING") ? list : undefined;
      });
      // Spread over the two 4-core agents: the one with more instances is drained.
      const byHost = Object.groupBy(placed, (t) => t.runtime.host!);
      const [host, on] = Object.entries(byHost).sort((a, b) => b[1]!.length - a[1]!.length)[0];
      assert.ok(on!.length >= 2, `two instances on ${host} at least: ${JSON.stringify(byHost)}`);
      const moved = on!.map((t) => t.instanceId).sort();

      assert.equal((await cli(up.url, "host", "maintenance", "start", host)).code, 0);
      await waitFor("the host drained, every instance running elsewhere", async () => {
        const list = await tasks(up!.url, jobId);
        const done = list.every((t) => t.runtime.state === "RUNNING" && t.runtime.host !== host);
        return done || undefined;
      }, 60_000);

      // Each drained instance was stopped only once the one drained before it was RUNNING again.
      const runs = await Promise.all(moved.map((i) => events(up!.url, jobId, i)));
      const stopped = runs.map((e) => e.find((x) => x.state === "PREEMPTING")!.ms);
      const order = moved.map((_, k) => k).sort((a, b) => stopped[a] - stopped[b]);
      for (let k = 1; k < order.length; k++) {
        const before = runs[order[k - 1]], at = stopped[order[k]];
        const backAt = before.filter((x) => x.state === "RUNNING").at(-1)!.ms;
        assert.ok(
          backAt <= at,
          `instance ${moved[order[k]]} stopped at ${at} before instance ${
            moved[order[k - 1]]
          } ran again at ${backAt}`,
        );
      }
    } catch (err) {
      if (up) console.error(up.output());
      throw err;
    } finally {
      await up?.stop();
      up = undefined;
      await Deno.remove(dir, { recursive: true });
    }
  },
});
