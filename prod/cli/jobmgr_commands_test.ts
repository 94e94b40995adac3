/** `peloton jobmgr throttled-pods|query-job-cache|instance-availability` against `peloton up`. */
import assert from "node:assert/strict";
import { cli, waitFor, withUp } from "../testing.ts";

/** A service of `count` instances running `command`, labelled team=`team`. */
function serviceYaml(name: string, count: number, command: string, team: string): string {
  return `
name: ${name}
type: SERVICE
owningTeam: team6
labels: [{ key: team, value: ${team} }]
instanceCount: ${count}
sla: { priority: 10, preemptible: false }
defaultConfig:
  resource: { cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10 }
  killGracePeriodSeconds: 1
  command: { shell: true, value: '${command}' }
`;
}

Deno.test({
  name:
    "jobmgr throttled-pods lists a failing service's pod; instance-availability and query-job-cache a running one",
  sanitizeResources: false,
  async fn() {
    // The default restart backoff (30 s) keeps the failed pod throttled while the test looks.
    await withUp("peloton-jobmgr-cache-", async (up, dir) => {
      const create = async (file: string, yaml: string) => {
        await Deno.writeTextFile(`${dir}/${file}`, yaml);
        const r = await cli(up.url, "job", "create", "/DefaultResPool", `${dir}/${file}`);
        assert.equal(r.code, 0, r.err);
        return /^Job (\S+) created$/.exec(r.out)![1];
      };
      const failing = await create("failing.yaml", serviceYaml("crashes", 1, "exit 3", "ops"));
      const web = await create(
        "web.yaml",
        serviceYaml("cache-web", 2, "while true; do sleep 1; done", "web"),
      );

      const throttled = await waitFor("the failing service's pod throttled", async () => {
        const r = await cli(up.url, "jobmgr", "throttled-pods", "-j");
        assert.equal(r.code, 0, r.err);
        const pods = (JSON.parse(r.out).throttledPods ?? []) as { value: string }[];
        return pods.length ? pods : undefined;
      });
      assert.deepEqual(throttled, [{ value: `${failing}-0` }]);
      const pods = await cli(up.url, "jobmgr", "throttled-pods");
      assert.equal(pods.code, 0, pods.err);
      assert.equal(pods.out, [" ".repeat(`${failing}-0`.length - 3) + "Pod|", `${failing}-0|`].join("\n"));

      const available = await waitFor("both web instances available", async () => {
        const r = await cli(up.url, "jobmgr", "instance-availability", web, "-j");
        assert.equal(r.code, 0, r.err);
        const map = JSON.parse(r.out).instanceAvailabilityMap as Record<string, string>;
        return Object.values(map).every((a) => a === "AVAILABLE") ? map : undefined;
      });
      assert.deepEqual(available, { 0: "AVAILABLE", 1: "AVAILABLE" });
      const one = await cli(up.url, "jobmgr", "instance-availability", web, "--instances", "1");
      assert.equal(one.code, 0, one.err);
      assert.equal(one.out, ["Instance|  Availability|", "       1|     AVAILABLE|"].join("\n"));
      const crashing = await cli(up.url, "jobmgr", "instance-availability", failing, "-j");
      assert.deepEqual(JSON.parse(crashing.out).instanceAvailabilityMap, { 0: "UNAVAILABLE" });

      const byName = await cli(up.url, "jobmgr", "query-job-cache", "-n", "cache-web");
      assert.equal(byName.code, 0, byName.err);
      assert.equal(byName.out, [`${" ".repeat(33)}Job|       Name|`, `${web}|  cache-web|`].join("\n"));
      const byLabel = await cli(up.url, "jobmgr", "query-job-cache", "-l", "team=web", "-j");
      assert.deepEqual(JSON.parse(byLabel.out).result, [{ jobId: { value: web }, name: "cache-web" }]);
      const none = await cli(up.url, "jobmgr", "query-job-cache", "-n", "Cache-Web");
      assert.deepEqual([none.code, none.out], [0, "No result"], "the exact name");

      const missing = await cli(up.url, "jobmgr", "instance-availability", web, "-i", "0,7");
      assert.equal(missing.code, 1);
      assert.match(missing.err, /invalid-argument: instances: job \S+ has no instance 7; it has 2 instances/);
      const bad = await cli(up.url, "jobmgr", "instance-availability", web, "-i", "one");
      assert.equal(bad.code, 2);
      assert.match(bad.err, /--instances: got "one", expected instance ids/);
      assert.equal((await cli(up.url, "jobmgr", "query-job-cache", "-l", "team")).code, 2);
      for (const id of [failing, web]) assert.equal((await cli(up.url, "job", "stop", id)).code, 0);
    }, ["--agents", "2"]);
  },
});
