/** A task no host can hold says why while it is still PLACING: the CLI over real HTTP against `peloton up`. */
import assert from "node:assert/strict";
import { cli, createDefaultPool, startUp, waitFor } from "../testing.ts";

const JOB = `name: too-big
owningteam: team6
instancecount: 1
sla: { priority: 1, preemptible: false }
defaultconfig:
  resource: { cpulimit: 6, memlimitmb: 2, disklimitmb: 10 }
  command: { shell: true, value: "sleep 1" }
`;

Deno.test("task list, get and events say why a task needing 6 cpus on 4-cpu hosts is still PLACING", async () => {
  const dataDir = await Deno.makeTempDir();
  const up = await startUp(dataDir, ["--agents", "2"]);
  try {
    await createDefaultPool(up.url);
    const file = `${dataDir}/too_big.yaml`;
    await Deno.writeTextFile(file, JOB);
    const created = await cli(up.url, "job", "create", "/DefaultResPool", file);
    assert.equal(created.code, 0, created.err);
    const job = /Job (\S+) created/.exec(created.out)![1];

    // The first failed round already says why (the engine hands the task back only after 500 s). Before
    // it is admitted (PENDING), the message is why its pool does not admit it yet.
    const runtime = await waitFor("a reason in task list", async () => {
      const r = await cli(up.url, "task", "list", job, "-j");
      const rt = JSON.parse(r.out).result.value["0"].runtime;
      return rt.state === "PLACING" && rt.message ? rt : undefined;
    }, 10_000);
    assert.equal(runtime.state, "PLACING");
    assert.match(runtime.message, /^no host with 6 free cpus: insufficient cpu on 2 hosts/);

    const table = await cli(up.url, "task", "list", job);
    assert.match(table.out, /PLACING\|.*no host with 6 free cpus: insufficient cpu on 2 hosts/);
    const get = await cli(up.url, "task", "get", job, "0", "-j");
    assert.equal(JSON.parse(get.out).result.runtime.message, runtime.message);
    const events = JSON.parse((await cli(up.url, "task", "events", job, "0", "-j")).out).result;
    assert.deepEqual([events[0].actualState, events[0].message], ["PLACING", runtime.message]);
  } finally {
    await up.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
