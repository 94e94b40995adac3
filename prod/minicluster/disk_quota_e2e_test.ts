/**
 * Disk quota end to end, in `peloton up`'s shape in this process: a job's task writing past its
 * `disklimitmb` is killed by its agent, and the job manager shows it FAILED with Mesos's reason and message
 * in `task get`.
 */
import assert from "node:assert/strict";
import { startPeloton } from "../server.ts";
import { cli, createDefaultPool, waitFor } from "../testing.ts";

const JOB = `name: disk_hog
owningteam: team6
instancecount: 1
defaultconfig:
  resource:
    cpulimit: 0.1
    memlimitmb: 32
    disklimitmb: 1
  command:
    shell: true
    value: "head -c 3000000 /dev/zero; sleep 60"
`;

interface TaskRuntime {
  state: string;
  message?: string;
  reason?: string;
}

Deno.test("a task over its disklimitmb ends FAILED, task get saying why with Mesos's reason", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "disk_quota_e2e_" });
  const up = await startPeloton({
    port: 0,
    dataDir,
    agents: 1,
    agentOptions: [{ containerDiskWatchIntervalMs: 100 }],
  });
  try {
    await createDefaultPool(up.url);
    await Deno.writeTextFile(`${dataDir}/job.yaml`, JOB);
    const created = await cli(up.url, "job", "create", "/DefaultResPool", `${dataDir}/job.yaml`);
    assert.equal(created.code, 0, created.err);
    const job = /Job (\S+) created/.exec(created.out)![1];
    const runtime = await waitFor("the task to fail", async () => {
      const got = await cli(up.url, "task", "get", job, "0", "-j");
      assert.equal(got.code, 0, got.err);
      const r: TaskRuntime = JSON.parse(got.out).results[0].runtime;
      return r.state === "FAILED" ? r : undefined;
    }, 20_000);
    assert.equal(runtime.reason, "REASON_CONTAINER_LIMITATION_DISK");
    assert.match(runtime.message ?? "", /^Disk usage \(\d+KB\) exceeds quota \(1MB\)/);
    const table = await cli(up.url, "task", "get", job, "0");
    assert.match(
      table.out,
      /\|\s+FAILED\|.*\|\s+Disk usage \(\d+KB\) exceeds quota \(1MB\)[^|]*\|\s+REASON_CONTAINER_LIMITATION_DISK\|/,
    );
  } finally {
    await up.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
