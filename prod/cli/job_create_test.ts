/**
 * `job create` and `job stateless create` pick the job's id, so a create whose answer was lost can be sent
 * again with `-i ID` without making a second job: against `peloton up`, and against a server that never
 * answers the create.
 */
import assert from "node:assert/strict";
import { startResmgr } from "../daemons/resmgr_daemon.ts";
import { jsonLogger } from "../log.ts";
import { cli, type CliResult, createDefaultPool, STATELESS_SPECS, withUp } from "../testing.ts";

/** A UUID v4 in lower case, as the CLI picks one. */
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const JOB = "name: create-once\ninstanceCount: 1\n" +
  "defaultConfig:\n  resource: {cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10}\n  command: {value: 'true'}\n";

const STATELESS = `${STATELESS_SPECS}/test_stateless_job_spec.yaml`;

/**
 * A job manager that answers the pool lookup and never answers a create (as one whose store is down): the
 * bodies of the creates it got, and `close` to let them go.
 */
function silentServer(): { url: string; creates: Record<string, unknown>[]; close(): Promise<void> } {
  const creates: Record<string, unknown>[] = [];
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const procedure = req.headers.get("rpc-procedure") ?? "";
    const body = await req.json();
    if (procedure.endsWith("::LookupResourcePoolID")) return Response.json({ id: { value: "pool-1" } });
    creates.push(body);
    await released;
    return new Response("too late", { status: 504 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    creates,
    async close() {
      release();
      await server.shutdown();
    },
  };
}

const advice = (command: string, get: string, id: string) =>
  `peloton ${command}: job ${id} may still be created: check with \`peloton ${get} ${id}\`, or run the ` +
  `same command with -i ${id} (a retry of a job that was created is refused as already existing)`;

Deno.test("job create and job stateless create: a create left unanswered names the id it sent and how to retry", async () => {
  const server = silentServer();
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(file, JOB);
    const create = (...extra: string[]) =>
      cli(server.url, "-t", "200ms", "job", "create", "/DefaultResPool", file, ...extra);
    const givenId = crypto.randomUUID();
    // At once: each waits out its timeout.
    const [picked, pickedAgain, given, stateless] = await Promise.all([
      create(),
      create(),
      create("-i", givenId),
      cli(server.url, "-t", "200ms", "job", "stateless", "create", "/DefaultResPool", STATELESS, "0"),
    ]);
    const adviceId = (r: CliResult) => /job (\S+) may still be created/.exec(r.err)?.[1] ?? "";
    for (const r of [picked, pickedAgain, given]) {
      assert.equal(r.code, 1, r.out);
      const [error, hint] = r.err.split("\n");
      assert.match(error, /^peloton job create: peloton\.api\.job\.JobManager::Create: deadline-exceeded: /);
      assert.equal(hint, advice("job create", "job get", adviceId(r)));
    }
    assert.equal(stateless.code, 1, stateless.out);
    const [error, hint] = stateless.err.split("\n");
    assert.match(error, /^peloton job stateless create: \S+::CreateJob: deadline-exceeded: /);
    assert.equal(hint, advice("job stateless create", "job stateless get", adviceId(stateless)));

    // The id each names is the one it sent: a new UUID each, or the one given with -i.
    const sent = server.creates.map((b) => ((b.id ?? b.jobId) as { value: string }).value).sort();
    const named = [picked, pickedAgain, given, stateless].map(adviceId);
    assert.deepEqual(sent, [...named].sort());
    assert.equal(named[2], givenId);
    for (const id of [named[0], named[1], named[3]]) assert.match(id, UUID_V4);
    assert.equal(new Set(named).size, 4);
  } finally {
    await server.close();
    await Deno.remove(file);
  }
});

Deno.test({
  name:
    "job create and job stateless create: the id is a fresh UUID; sent again with -i, refused as existing",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-create-once-", async (up) => {
      const file = await Deno.makeTempFile({ suffix: ".yaml" });
      try {
        await Deno.writeTextFile(file, JOB);
        const create = (...extra: string[]) =>
          cli(up.url, "job", "create", "/DefaultResPool", file, ...extra);
        const first = await create();
        assert.equal(first.code, 0, first.err);
        const id = /^Job (\S+) created$/.exec(first.out)![1];
        assert.match(id, UUID_V4);
        const second = await create();
        assert.equal(second.code, 0, second.err);
        assert.notEqual(/^Job (\S+) created$/.exec(second.out)![1], id);

        // The retry the advice says to make, of a create that went through: refused, and no second job.
        const retried = await create("-i", id);
        assert.equal(retried.code, 1, retried.out);
        assert.equal(
          retried.err,
          `peloton job create: peloton.api.job.JobManager::Create: alreadyExists: job ${id} already exists`,
        );
        const fresh = crypto.randomUUID();
        const given = await create("-i", fresh);
        assert.equal(given.out, `Job ${fresh} created`);
        assert.match((await create("-i", fresh)).err, /alreadyExists: job \S+ already exists$/);
        const listed = await cli(up.url, "job", "query", "--name", "create-once", "-j");
        assert.equal(listed.code, 0, listed.err);
        assert.equal(JSON.parse(listed.out).results.length, 3);

        const stateless = (...extra: string[]) =>
          cli(up.url, "job", "stateless", "create", "/DefaultResPool", STATELESS, "0", ...extra);
        const made = await stateless();
        assert.equal(made.code, 0, made.err);
        const statelessId = /^Job (\S+) created, version \S+$/.exec(made.out)![1];
        assert.match(statelessId, UUID_V4);
        const refused = await stateless("-i", statelessId);
        assert.equal(refused.code, 1, refused.out);
        assert.match(
          refused.err,
          new RegExp(`::CreateJob: already-exists: jobId: job ${statelessId} already exists$`),
        );
      } finally {
        await Deno.remove(file);
      }
    });
  },
});

Deno.test({
  name: "job create: unavailable before any job manager got the call (none runs) is a definite failure, " +
    "said without the retry advice",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-create-no-jobmgr-" });
    const d = await startResmgr({
      host: "127.0.0.1",
      port: 0,
      store: `sqlite:${dir}/peloton.sqlite`,
      dataDir: dir,
      leaseTtlMs: 500,
      log: jsonLogger({ daemon: "resmgr" }, () => {}),
    });
    try {
      await createDefaultPool(d.process.url);
      const file = `${dir}/job.yaml`;
      await Deno.writeTextFile(file, JOB);
      const r = await cli(d.process.url, "job", "create", "/DefaultResPool", file);
      assert.equal(r.code, 1, r.out);
      assert.equal(
        r.err,
        "peloton job create: peloton.api.job.JobManager::Create: unavailable: no job manager is running",
      );
    } finally {
      await d.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
