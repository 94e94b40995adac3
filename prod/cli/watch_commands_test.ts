/** `peloton watch pod|job|cancel` against `peloton up`: a job's pods and the job itself seen changing as they do. */
import assert from "node:assert/strict";
import { ApiError, PelotonClient } from "./client.ts";
import { cli, ROOT, startUp, waitFor } from "../testing.ts";

const SPECS = `${ROOT}/core/model/testdata/peloton/tests/integration/test_configs`;
const POOL = `${ROOT}/scenarios/jobs/default_respool.yaml`;
const WATCH = "peloton.api.v1alpha.watch.svc.WatchService::Watch";

/** A `peloton watch ...` process, its stdout lines as they come. */
function spawnWatch(url: string, ...args: string[]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}/prod/cli/main.ts`, "watch", ...args, "-m", url],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "", err = "";
  const read = async (s: ReadableStream<Uint8Array>, add: (t: string) => void) => {
    for await (const t of s.pipeThrough(new TextDecoderStream())) add(t);
  };
  const pumps = Promise.all([read(child.stdout, (t) => out += t), read(child.stderr, (t) => err += t)]);
  return {
    child,
    lines: () => out.split("\n").filter(Boolean),
    err: () => err,
    /** The first line (the watch id), once it came. */
    first: () =>
      waitFor("the watch's first line", () => Promise.resolve(/^.+$/m.exec(out)?.[0]), 20_000).catch((e) => {
        throw new Error(`${(e as Error).message}; stdout: ${out}; stderr: ${err}`);
      }),
    async exit(): Promise<number> {
      const { code } = await child.status;
      await pumps;
      return code;
    },
  };
}

Deno.test({
  name:
    "watch pod sees a job's pods go RUNNING, then KILLED when it is stopped; watch cancel ends it, exit 0",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-watch-" });
    const up = await startUp(`${dir}/peloton`, ["--agents", "3"]);
    const children: Deno.ChildProcess[] = [];
    try {
      assert.equal((await cli(up.url, "respool", "create", "/DefaultResPool", POOL)).code, 0);
      // The job's id is chosen here, so that the watch is open before the job exists and misses nothing.
      const job = crypto.randomUUID();
      const pods = spawnWatch(up.url, "pod", job);
      children.push(pods.child);
      const podWatch = /^Watch (pod-\d+@jobmgr)$/.exec(await pods.first())?.[1];
      assert.ok(podWatch, pods.lines()[0]);
      const jobs = spawnWatch(up.url, "job", "--job-ids", job, "-l", "testKey0=testVal0", "-j");
      children.push(jobs.child);
      const jobWatch = JSON.parse(await jobs.first()).watchId;
      assert.match(jobWatch, /^job-\d+@jobmgr$/);
      // Labels the job does not have: this watch sees nothing of it.
      const other = spawnWatch(up.url, "job", "-l", "testKey0=other");
      children.push(other.child);
      const otherWatch = (await other.first()).replace(/^Watch /, "");

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
      for await (const r of client.stream<{ watchId: string }>(WATCH, { podFilter: {} }, leave.signal)) {
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
          for await (const _ of client.stream(WATCH, body)) return "streamed";
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
      for (const c of children) {
        try {
          c.kill("SIGKILL");
        } catch { /* exited */ }
      }
      await up.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
