/** CLI error reporting over real HTTP against a real `peloton up`. */
import assert from "node:assert/strict";
import { cli, ROOT, startUp, waitFor } from "../testing.ts";

const JOBS = `${ROOT}/scenarios/jobs`;

Deno.test("CLI against a real server: bad arguments are errors, not crashes or empty tables", async (t) => {
  const dataDir = await Deno.makeTempDir();
  const up = await startUp(dataDir, ["--agents", "1"]);
  try {
    const pool = await cli(up.url, "respool", "create", "/DefaultResPool", `${JOBS}/default_respool.yaml`);
    assert.equal(pool.code, 0, pool.err);
    const created = await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/testjob.yaml`);
    assert.equal(created.code, 0, created.err);
    const job = /Job (\S+) created/.exec(created.out)![1];

    await t.step(
      "task get|events|logs: an instance past the end names the job's instance count",
      async () => {
        for (const cmd of ["get", "events", "logs"]) {
          const r = await cli(up.url, "task", cmd, job, "99");
          assert.equal(r.code, 1, `task ${cmd}: ${r.out}`);
          assert.equal(
            r.err,
            `peloton task ${cmd}: instance 99 is out of range: job ${job} has 10 instances`,
          );
        }
        const ok = await cli(up.url, "task", "get", job, "3");
        assert.equal(ok.code, 0, ok.err);
      },
    );

    await t.step(
      "respool create|validate: a file without resources is an error naming the field",
      async () => {
        for (const argv of [["create", "/X"], ["validate"]]) {
          const r = await cli(up.url, "respool", ...argv, `${JOBS}/testjob.yaml`);
          assert.equal(r.code, 1, `respool ${argv[0]}: ${r.out}`);
          assert.match(
            r.err,
            /testjob\.yaml:\d+: resources: missing, expected a list of cpu, memory, disk and gpu/,
          );
        }
        const dump = await cli(up.url, "respool", "dump", "--format", "json");
        assert.doesNotMatch(dump.out, /"name": "X"/);
      },
    );

    await t.step("update list, volume list: an unknown job is not found, not an empty table", async () => {
      const unknown = "00000000-0000-4000-8000-000000000000";
      for (const argv of [["update", "list"], ["volume", "list"]]) {
        const r = await cli(up.url, ...argv, unknown);
        assert.equal(r.code, 1, `${argv.join(" ")}: ${r.out}`);
        assert.match(r.err, new RegExp(`not-found: job ${unknown} not found`));
      }
      const known = await cli(up.url, "update", "list", job);
      assert.equal(known.code, 0, known.err);
    });

    await t.step("job query -s: an unknown state names the valid ones", async () => {
      const r = await cli(up.url, "job", "query", "-s", "BOGUS");
      assert.equal(r.code, 2);
      assert.match(r.err, /--states: got "BOGUS", expected one of UNKNOWN, INITIALIZED, PENDING, RUNNING/);
      const ok = await cli(up.url, "job", "query", "-s", "pending,succeeded,running");
      assert.equal(ok.code, 0, ok.err);
    });

    await t.step("update create --batch-percentage takes decimals, as Peloton's double does", async () => {
      const svc = await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/service.yaml`);
      assert.equal(svc.code, 0, svc.err);
      const id = /Job (\S+) created/.exec(svc.out)![1];
      const createUpdate = (percentage: string) =>
        cli(up.url, "update", "create", id, `${JOBS}/service_v2.yaml`, "1", "--batch-percentage", percentage);
      const bad = await createUpdate("120");
      assert.equal(bad.code, 2);
      assert.match(bad.err, /--batch-percentage: got "120", expected a percentage from 0 to 100/);
      const r = await createUpdate("12.5");
      assert.equal(r.code, 0, r.err);
      const list = await cli(up.url, "update", "list", id, "-j");
      assert.equal(JSON.parse(list.out).updateInfo[0].config.batchPercentage, 12.5);
    });

    await t.step(
      "job stateless workflow pause|resume|abort: no workflow is an error naming the job",
      async () => {
        const before = JSON.parse((await cli(up.url, "job", "stateless", "get", job, "-j")).out);
        for (const word of ["pause", "resume", "abort"]) {
          const r = await cli(up.url, "job", "stateless", "workflow", word, job);
          assert.equal(r.code, 1, `workflow ${word}: ${r.out}`);
          assert.match(r.err, new RegExp(`not-found: job ${job} has no active workflow$`));
        }
        const after = JSON.parse((await cli(up.url, "job", "stateless", "get", job, "-j")).out);
        assert.equal(after.jobInfo.status.version.value, before.jobInfo.status.version.value);
      },
    );

    await t.step("host maintenance start: a host already DRAINED is an error naming its state", async () => {
      const hosts = JSON.parse((await cli(up.url, "host", "query", "-j")).out).hostInfos;
      const host = hosts[0].hostname as string;
      const start = await cli(up.url, "host", "maintenance", "start", host);
      assert.equal(start.code, 0, start.err);
      await waitFor("the host to drain", async () => {
        const q = await cli(up.url, "host", "query", "-s", "HOST_STATE_DRAINED", "-j");
        return JSON.parse(q.out).hostInfos.length === 1 || undefined;
      });
      const again = await cli(up.url, "host", "maintenance", "start", host);
      assert.equal(again.code, 1, again.out);
      assert.match(
        again.err,
        new RegExp(`failed-precondition: cannot start maintenance on host ${host}: it is HOST_STATE_DRAINED`),
      );
      const done = await cli(up.url, "host", "maintenance", "complete", host);
      assert.equal(done.code, 0, done.err);
    });
  } finally {
    await up.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
