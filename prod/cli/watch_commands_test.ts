/** `peloton watch pod|job|cancel` against `peloton up`: a job's pods and the job itself seen changing as they do. */
import assert from "node:assert/strict";
import { ApiError, PelotonClient } from "./client.ts";
import { WATCH_PROCEDURE } from "../watch_stream.ts";
import { cli, type CliProcess, createDefaultPool, ROOT, spawnCli, startUp, waitFor } from "../testing.ts";

const SPECS = `${ROOT}/core/model/testdata/peloton/tests/integration/test_configs`;

Deno.test({
  name:
    "watch pod sees a job's pods go RUNNING, then KILLED when it is stopped; watch cancel ends it, exit 0",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-watch-" });
    const up = await startUp(`${dir}/peloton`, ["--agents", "3"]);
    const children: CliProcess[] = [];
    try {
      await createDefaultPool(up.url);
      // The job's id is chosen here, so that the watch is open before the job exists and misses nothing.
      const job = crypto.randomUUID();
      const pods = spawnCli(up.url, "watch", "pod", job);
      children.push(pods);
      const podWatch = /^Watch (pod-\d+@jobmgr)$/.exec(await pods.waitLine(/^.+$/))?.[1];
      assert.ok(podWatch, pods.lines()[0]);
      const jobs = spawnCli(up.url, "watch", "job", "--job-ids", job, "-l", "testKey0=testVal0", "-j");
      children.push(jobs);
      const jobWatch = JSON.parse(await jobs.waitLine(/^.+$/)).watchId;
      assert.match(jobWatch, /^job-\d+@jobmgr$/);
      // Labels the job does not have: this watch sees nothing of it.
      const other = spawnCli(up.url, "watch", "job", "-l", "testKey0=other");
      children.push(other);
      const otherWatch = (await other.waitLine(/^.+$/)).replace(/^Watch /, "");

      const created = await cli(
        up.url,
        "job",
        "stateless",
        "create",
        "/DefaultResPool",
        `${SPECS}/test_stateless_job_spec.yaml`,
        "0",
        "-i",
        job,
      );
      assert.equal(created.code, 0, created.err);
      const names = [0, 1, 2].map((i) => `${job}-${i}`);
      // One line per change: time, pod, state, host (once it has one).
      const seen = (state: string) =>
        names.every((n) =>
          pods.lines().some((l) => new RegExp(`^\\S+Z  ${n}  POD_STATE_${state}(  \\S+)?$`).test(l))
        );
      await waitFor("the three pods RUNNING", () => Promise.resolve(seen("RUNNING") || undefined));
      const running = pods.lines().filter((l) => l.includes("POD_STATE_RUNNING"));
      for (const l of running) assert.match(l, /POD_STATE_RUNNING {2}\S+$/, "a running pod has a host");
      assert.equal((await cli(up.url, "job", "stop", job)).code, 0);
      await waitFor("the three pods KILLED", () => Promise.resolve(seen("KILLED") || undefined));
      for (const n of names) {
        const states = pods.lines().filter((l) => l.includes(`  ${n}  `)).map((l) => l.split("  ")[2]);
        assert.ok(
          states.lastIndexOf("POD_STATE_RUNNING") < states.indexOf("POD_STATE_KILLED"),
          `${n}: ${states.join(", ")}`,
        );
      }
      // The stateless job watch (-j: the raw lines) saw the job's summary change, running then killed.
      await waitFor(
        "the job KILLED in the job watch",
        () => Promise.resolve(jobs.lines().some((l) => l.includes("JOB_STATE_KILLED")) || undefined),
      );
      const summaries = jobs.lines().slice(1).map((l) => JSON.parse(l));
      assert.ok(summaries.every((r) => r.watchId === jobWatch && r.statelessJobs[0].jobId.value === job));
      assert.ok(summaries.some((r) => r.statelessJobs[0].status.state === "JOB_STATE_RUNNING"));
      assert.deepEqual(other.lines().length, 1, `only its id: ${other.lines().join("\n")}`);

      // Cancelled: the stream's last line says so and the watch exits 0.
      const cancel = await cli(up.url, "watch", "cancel", podWatch);
      assert.equal(cancel.code, 0, cancel.err);
      assert.equal(cancel.out, `Watch ${podWatch} cancelled`);
      assert.equal(await pods.exit(), 0, pods.err());
      assert.equal(pods.lines().at(-1), `watch cancelled: ${podWatch}`);
      assert.equal((await cli(up.url, "watch", "cancel", jobWatch)).code, 0);
      assert.equal(await jobs.exit(), 0, jobs.err());
      assert.deepEqual(JSON.parse(jobs.lines().at(-1)!), {
        error: { code: "cancelled", message: `watch cancelled: ${jobWatch}` },
      });

      // Ctrl-C ends a watch with exit 0, and the server cancels it: there is nothing left to cancel.
      other.child.kill("SIGINT");
      assert.equal(await other.exit(), 0, other.err());
      await waitFor("the server to cancel the watch its client left", async () => {
        const r = await cli(up.url, "watch", "cancel", otherWatch);
        return r.code === 1 && /not-found: watch \S+ not found/.test(r.err) ? true : undefined;
      }, 5_000);

      // So does a client of the API that stops reading.
      const client = new PelotonClient({ url: up.url });
      const leave = new AbortController();
      let leftId = "";
      for await (
        const r of client.stream<{ watchId: string }>(WATCH_PROCEDURE, { podFilter: {} }, leave.signal)
      ) {
        leftId = r.watchId;
        leave.abort();
      }
      assert.match(leftId, /^pod-\d+@jobmgr$/);
      await waitFor("the server to cancel the watch its client left", async () => {
        const r = await cli(up.url, "watch", "cancel", leftId);
        return r.code === 1 ? true : undefined;
      }, 5_000);

      // A bad filter is refused before any stream, naming the field.
      const refused = async (body: unknown) => {
        try {
          for await (const _ of client.stream(WATCH_PROCEDURE, body)) return "streamed";
        } catch (e) {
          if (e instanceof ApiError) return `${e.code}: ${e.detail}`;
          throw e;
        }
        return "ended";
      };
      assert.match(
        await refused({ podFilter: { jobId: { value: job }, labels: "testKey0" } }),
        /^invalid-argument: podFilter\.labels: got "testKey0"/,
      );
      assert.match(
        await refused({ podFilter: {}, statelessJobFilter: {} }),
        /^invalid-argument: podFilter, statelessJobFilter: expected exactly one of them/,
      );
      const usage = await cli(up.url, "watch", "pod", job, "--pod-names", "web-0");
      assert.equal(usage.code, 2);
      assert.match(usage.err, /--pod-names: got "web-0", expected pod names <jobId>-<instanceId>/);
    } catch (err) {
      console.error(up.output());
      throw err;
    } finally {
      for (const c of children) await c.stop();
      await up.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
