import assert from "node:assert/strict";
import { cli, ROOT } from "../testing.ts";

const PELOTON = `${ROOT}/core/model/testdata/peloton`;
const NOWHERE = "http://127.0.0.1:9"; // offline commands must not need a server

Deno.test("job validate: exit 0 for Peloton's example job, warning about unknown keys", async () => {
  const r = await cli(NOWHERE, "job", "validate", `${PELOTON}/example/testjob.yaml`);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /valid BATCH job "TestPelotonJob_123" with 10 instances/);
  assert.match(r.err, /testjob\.yaml:\d+: sla\.minimuminstancecount: unknown key/);
});

Deno.test("job validate: non-zero with file, line, path, value and expectation for a bad file", async () => {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(
    file,
    "name: bad\ninstancecount: 3\ndefaultconfig:\n  resource:\n    cpulimit: -2\n  command:\n    value: x\n",
  );
  const r = await cli(NOWHERE, "job", "validate", file);
  await Deno.remove(file);
  assert.equal(r.code, 1);
  assert.match(r.err, new RegExp(`${file}:5: defaultconfig\\.resource\\.cpulimit: got -2, expected`));
});

Deno.test("respool validate: Peloton's default pool is valid; limit below reservation is not", async () => {
  const ok = await cli(NOWHERE, "respool", "validate", `${PELOTON}/example/default_respool.yaml`);
  assert.equal(ok.code, 0, ok.err);
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(
    file,
    "name: p\nresources:\n- kind: cpu\n  reservation: 10\n  limit: 5\n  share: 1\n",
  );
  const bad = await cli(NOWHERE, "respool", "validate", file);
  await Deno.remove(file);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /:5: resources\[0\]\.limit: got 5, expected/);
});

Deno.test("respool entitlement: the user guide's numbers as a table and as JSON", async () => {
  const file = `${ROOT}/core/resmgr/testdata/whatif_guide.yaml`;
  const table = await cli(NOWHERE, "respool", "entitlement", file);
  assert.equal(table.code, 0, table.err);
  assert.match(table.out, /\/rp2\s+45\.00/);
  const json = await cli(NOWHERE, "respool", "entitlement", file, "-j");
  const pools = JSON.parse(json.out).pools;
  assert.deepEqual(Object.keys(pools), ["/", "/rp1", "/rp2", "/rp3"]);
  assert.equal(pools["/rp1"].entitlement.cpu, 10);
  assert.deepEqual(Object.keys(pools["/rp1"]), ["entitlement", "nonSlackEntitlement", "slackEntitlement"]);
});

Deno.test("usage errors exit 2 and say what was wrong", async () => {
  const unknown = await cli(NOWHERE, "job", "explode");
  assert.equal(unknown.code, 2);
  assert.match(unknown.err, /unknown command "job explode"/);
  const missing = await cli(NOWHERE, "job", "create", "/pool");
  assert.equal(missing.code, 2);
  assert.match(missing.err, /missing FILE/);
  const flag = await cli(NOWHERE, "task", "list", "x", "--bogus");
  assert.equal(flag.code, 2);
  assert.match(flag.err, /bogus/);
  const range = await cli(NOWHERE, "task", "list", "x", "-r", "a:b");
  assert.equal(range.code, 2);
  assert.match(range.err, /--range: got "a:b"/);
});

Deno.test("server commands report an unreachable server as an error, exit 1", async () => {
  const r = await cli(NOWHERE, "job", "get", "00000000-0000-4000-8000-000000000000");
  assert.equal(r.code, 1);
  assert.match(r.err, /cannot reach http:\/\/127\.0\.0\.1:9/);
});

Deno.test("--store: a malformed value is a usage error (exit 2), an unreachable MySQL a failure (exit 1)", async () => {
  const dataDir = await Deno.makeTempDir();
  try {
    for (const cmd of [["up"], ["jobmgr"], ["resmgr"]]) {
      const bogus = await cli(NOWHERE, ...cmd, "--port", "0", "--data-dir", dataDir, "--store", "bogus://x");
      assert.equal(bogus.code, 2, bogus.err);
      assert.equal(
        bogus.err,
        `peloton ${cmd[0]}: --store: got "bogus://x", expected a SQLite path (sqlite:PATH or PATH) ` +
          "or mysql://user[:pass]@host:port/db",
      );
      const noDb = await cli(NOWHERE, ...cmd, "--data-dir", dataDir, "--store", "mysql://root@127.0.0.1:1/");
      assert.equal(noDb.code, 2, noDb.err);
      assert.match(noDb.err, /--store: Cannot parse MySQL URL .*database name "" must be/);
      const down = await cli(NOWHERE, ...cmd, "--data-dir", dataDir, "--store", "mysql://root@127.0.0.1:1/x");
      assert.equal(down.code, 1, down.err);
      assert.match(down.err, /^peloton \w+: --store: Cannot connect to MySQL as root@127\.0\.0\.1:1: /);
      assert.doesNotMatch(down.err, /\n/, "one line");
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
