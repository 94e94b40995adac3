/**
 * `peloton up --backend mesos` whose scheduler the master stops for good (another scheduler took its
 * framework over): /health answers 503 with the master's reason, so a supervisor restarts it. Verified against
 * the project's emulator of the documented Mesos protocol.
 */
import assert from "node:assert/strict";
import { frameworkInfo, RawSubscription } from "./mesos/_testing.ts";
import { startPeloton, startUp, waitFor } from "./testing.ts";

Deno.test({
  name: "peloton up --backend mesos: /health is 503 'unhealthy' once the master stops the scheduler for good",
  ignore: Deno.env.get("MESOS_MASTER_URL") !== undefined,
  sanitizeResources: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-mesos-health-" });
    const master = await startPeloton(
      ["minicluster", "--port", "0", "--agents", "1", "--data-dir", `${dataDir}/master`],
      /Mesos master emulator at (http:\/\/\S+) /,
    );
    const up = await startUp(`${dataDir}/peloton`, ["--backend", "mesos", "--mesos-master", master.url]);
    let other: RawSubscription | undefined;
    try {
      const health = async () => {
        const res = await fetch(`${up.url}/health`);
        return { code: res.status, body: await res.json() };
      };
      assert.equal((await health()).code, 200);
      const id = await waitFor("the framework to subscribe", async () => {
        const res = await fetch(`${master.url}/api/v1`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ type: "GET_FRAMEWORKS" }),
        });
        const frameworks = (await res.json()).get_frameworks?.frameworks ?? [];
        return frameworks[0]?.framework_info?.id?.value as string | undefined;
      }, 30_000);
      // Another scheduler subscribes with the same id: the master sends ours ERROR "Framework failed over".
      other = await RawSubscription.open(master.url, {
        type: "SUBSCRIBE",
        framework_id: { value: id },
        subscribe: { framework_info: { ...frameworkInfo(), id: { value: id } } },
      });
      await other.nextOf("SUBSCRIBED");
      const sick = await waitFor("/health to say unhealthy", async () => {
        const h = await health();
        return h.code === 503 ? h : undefined;
      }, 30_000);
      assert.equal(sick.body.status, "unhealthy");
      assert.match(sick.body.problem, /Framework failed over/);
    } finally {
      await other?.close();
      await up.stop();
      await master.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
