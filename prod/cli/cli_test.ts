import assert from "node:assert/strict";
import { cli, ROOT } from "../testing.ts";
import { displayWidth } from "./display_width.ts";

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

/** Runs `<noun> validate` on a temporary file holding `text`; `FILE` in the result stands for its path. */
async function validate(noun: "job" | "respool", text: string) {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(file, text);
    const r = await cli(NOWHERE, noun, "validate", file);
    return { ...r, err: r.err.replaceAll(file, "FILE") };
  } finally {
    await Deno.remove(file);
  }
}

Deno.test("job validate: lists every problem of a file at once, whatever its kind", async () => {
  const r = await validate(
    "job",
    `name: several
instanceCount: 2
sla:
  priority: high
  maximumRunningInstances: 3
defaultConfig:
  command: {value: run}
  container: {type: DOCKR}
  ports:
  - name: http
  constraint:
    type: AND_CONSTRAINT
    labelConstraint: {kind: RACK, condition: EQUAL, label: {key: zone, value: a}}
instanceConfig:
  1: {controller: true}
`,
  );
  assert.equal(r.code, 1);
  assert.equal(r.out, "");
  assert.deepEqual(r.err.split("\n"), [
    'FILE:4: sla.priority: got "high", expected a whole number (0 or more)',
    "FILE:5: sla.maximumRunningInstances: got 3, expected at most instanceCount (2)",
    'FILE:8: defaultConfig.container.type: got "DOCKR", expected one of DOCKER (1) or MESOS (2)',
    'FILE:10: defaultConfig.ports[0].envName: missing, expected an envName for dynamic port "http" ' +
    "(value 0 is picked at launch)",
    "FILE:11: defaultConfig.constraint.andConstraint: missing, expected an andConstraint, as type is " +
    "AND_CONSTRAINT",
    'FILE:13: defaultConfig.constraint.labelConstraint.kind: got "RACK", expected one of TASK (1) or HOST (2)',
    "FILE:15: instanceConfig.1.controller: got true, expected false: only instance 0 may be a controller",
  ]);
});

Deno.test("respool validate: lists every problem of a file at once, whatever its kind", async () => {
  const r = await validate(
    "respool",
    `name: pool
resources:
- {kind: tpu, reservation: 1}
- {kind: cpu, reservation: lots, limit: 4}
- {kind: memory, reservation: 10, limit: 5}
- {kind: cpu, limit: 1}
controllerLimit: {maxPercent: 150}
slackLimit: {maxPercent: half}
`,
  );
  assert.equal(r.code, 1);
  assert.deepEqual(r.err.split("\n"), [
    'FILE:3: resources[0].kind: got "tpu", expected one of cpu, memory, disk or gpu',
    'FILE:4: resources[1].reservation: got "lots", expected a number',
    "FILE:5: resources[2].limit: got 5, expected a limit of at least the reservation (10)",
    'FILE:6: resources[3].kind: got "cpu", expected each kind once (also resources[1])',
    "FILE:7: controllerLimit.maxPercent: got 150, expected a percentage between 0 and 100",
    'FILE:8: slackLimit.maxPercent: got "half", expected a number',
  ]);
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

Deno.test("respool entitlement: a table of wide or control-character pool names stays aligned", async () => {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(
      file,
      (await Deno.readTextFile(`${ROOT}/core/resmgr/testdata/whatif_guide.yaml`))
        .replace("name: rp1", "name: 批处理").replace("name: rp2", 'name: "r\\tp"'),
    );
    const table = await cli(NOWHERE, "respool", "entitlement", file);
    assert.equal(table.code, 0, table.err);
    const lines = table.out.split("\n");
    assert.equal(lines[2].split(/\s+/)[0], "/批处理");
    assert.equal(lines[3].split(/\s+/)[0], "/r\\tp", "a tab in a name is shown escaped");
    // Every row's CPU column ends in the same terminal column: "/批处理" takes 7 columns, not 4.
    const cpuEnd = (line: string) => displayWidth(line.slice(0, line.indexOf(".00") + 3));
    assert.deepEqual(
      new Set(lines.slice(1, 5).map(cpuEnd)),
      new Set([cpuEnd(lines[0].replace("CPU", ".00"))]),
    );
  } finally {
    await Deno.remove(file);
  }
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
  // A path with an empty part names no pool: "//a" would be created as "/a" and reported at "//a".
  for (const path of ["/", "//a", "/a//b", "a/b"]) {
    const pool = await cli(NOWHERE, "respool", "create", path, `${ROOT}/scenarios/jobs/default_respool.yaml`);
    assert.equal(pool.code, 2, `${path}: ${pool.err}`);
    assert.match(pool.err, new RegExp(`PATH: got "${path}", expected a pool path such as /a/b`));
  }
});

Deno.test("job stateless replace: [RESPOOL] [ENTITY-VERSION], RESPOOL a path; a version then more is a usage error", async () => {
  const spec = `${PELOTON}/tests/integration/test_configs/test_update_stateless_job_spec.yaml`;
  const extra = await cli(NOWHERE, "job", "stateless", "replace", "x", spec, "1", "1-1-1", "2-2-2");
  assert.equal(extra.code, 2);
  assert.match(
    extra.err,
    /unexpected argument "2-2-2": expected \[RESPOOL\] \[ENTITY-VERSION\], RESPOOL a path starting with \//,
  );
  // Peloton's form gets past the arguments: it fails only on reaching for the server.
  const peloton = await cli(NOWHERE, "job", "stateless", "replace", "x", spec, "1", "/Pool", "1-1-1");
  assert.equal(peloton.code, 1, peloton.err);
  assert.match(peloton.err, /cannot reach/);
});

Deno.test("Peloton's RESPOOL forms: a bad count is a usage error before the pool is looked up", async () => {
  const spec = `${PELOTON}/tests/integration/test_configs/test_update_stateless_job_spec.yaml`;
  const v2 = `${ROOT}/scenarios/jobs/service_v2.yaml`;
  for (
    const [argv, field] of [
      [["update", "create", "x", v2, "two", "/Pool"], "BATCH-SIZE"],
      [["update", "create", "x", v2, "2", "/Pool", "--maxattempts", "many"], "--maxattempts"],
      [["job", "stateless", "replace", "x", spec, "two", "/Pool", "1-1-1"], "BATCH-SIZE"],
      [
        ["job", "stateless", "replace", "x", spec, "1", "/Pool", "--maxInstanceRetries", "x"],
        "--maxInstanceRetries",
      ],
    ] as const
  ) {
    const r = await cli(NOWHERE, ...argv);
    assert.equal(r.code, 2, `${argv.join(" ")}: ${r.err}`);
    assert.match(r.err, new RegExp(`${field}: got "[^"]+", expected a whole number`));
  }
});

Deno.test("a reversed or empty instance range is a usage error naming it, for every command taking -r", async () => {
  for (
    const argv of [
      ["task", "list", "x", "-r", "3:1"],
      ["task", "stop", "x", "-r", "3:1"],
      ["task", "start", "x", "-r", "0:2", "-r", "5:5"],
      ["job", "rolling-restart", "x", "1", "-r", "9:0"],
    ]
  ) {
    const r = await cli(NOWHERE, ...argv);
    assert.equal(r.code, 2, argv.join(" "));
    const bad = argv.findLast((a) => a.includes(":"))!;
    assert.match(
      r.err,
      new RegExp(`--range: got "${bad}", expected FROM:TO with FROM below TO \\(TO is exclusive: `),
      argv.join(" "),
    );
  }
  const ok = await cli(NOWHERE, "task", "list", "x", "-r", "3:4");
  assert.equal(ok.code, 1, "a one-instance range passes the check (and then finds no server)");
});

Deno.test("server commands report an unreachable server as an error, exit 1", async () => {
  const r = await cli(NOWHERE, "job", "get", "00000000-0000-4000-8000-000000000000");
  assert.equal(r.code, 1);
  assert.match(r.err, /cannot reach http:\/\/127\.0\.0\.1:9/);
});

Deno.test("--store: no message shows a MySQL password, whatever it holds", async () => {
  const dataDir = await Deno.makeTempDir();
  try {
    const urls = [
      "mysql://root:Se/cretPART2@127.0.0.1:3306/xk_a",
      "mysql://root:Se@cretPART2@127.0.0.1:3306/bad-name",
      "mysql://root:Se:cretPART2@127.0.0.1:3306/bad-name",
      "MySQL://root:SecretPART2@127.0.0.1:3306/xk_a",
    ];
    for (const url of urls) {
      const r = await cli(NOWHERE, "up", "--port", "0", "--data-dir", dataDir, "--store", url);
      assert.notEqual(r.code, 0, r.err);
      assert.doesNotMatch(r.out + r.err, /cretPART2/, r.err);
      assert.match(r.err, /--store: .*root:\*\*\*@127\.0\.0\.1:/);
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("--store: a malformed value is a usage error (exit 2), an unreachable MySQL a failure of up (exit 1)", async () => {
  const dataDir = await Deno.makeTempDir();
  try {
    for (const cmd of [["up"], ["jobmgr"], ["resmgr"]]) {
      const bogus = await cli(NOWHERE, ...cmd, "--port", "0", "--data-dir", dataDir, "--store", "bogus://x");
      assert.equal(bogus.code, 2, bogus.err);
      assert.equal(
        bogus.err,
        `peloton ${cmd[0]}: --store: got "bogus://x", expected a SQLite path (sqlite:PATH or PATH) ` +
          "or mysql://user[:pass]@host:port/db[?statementTimeout=MS&connectTimeout=MS]",
      );
      const param = await cli(
        NOWHERE,
        ...cmd,
        "--data-dir",
        dataDir,
        "--store",
        "mysql://u:pw@h/x?timeout=5",
      );
      assert.equal(param.code, 2, param.err);
      assert.equal(
        param.err,
        `peloton ${cmd[0]}: --store: MySQL URL "mysql://u:***@h/x?timeout=5": unknown parameter "timeout"; ` +
          "expected statementTimeout or connectTimeout (milliseconds)",
      );
      const noDb = await cli(NOWHERE, ...cmd, "--data-dir", dataDir, "--store", "mysql://root@127.0.0.1:1/");
      assert.equal(noDb.code, 2, noDb.err);
      assert.match(noDb.err, /--store: Cannot parse MySQL URL .*database name "" must be/);
      // A daemon waits for its store (prod/failover_e2e_test.ts); `up` refuses to start without it.
      if (cmd[0] !== "up") continue;
      const down = await cli(NOWHERE, ...cmd, "--data-dir", dataDir, "--store", "mysql://root@127.0.0.1:1/x");
      assert.equal(down.code, 1, down.err);
      assert.match(down.err, /^peloton \w+: --store: Cannot connect to MySQL as root@127\.0\.0\.1:1: /);
      assert.doesNotMatch(down.err, /\n/, "one line");
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("job stateless get --jobversion: a malformed entity version is a usage error naming the flag", async () => {
  for (const v of ["2", "x-1-1", "1-1-1-1", "-1-1-1"]) {
    const r = await cli(NOWHERE, "job", "stateless", "get", "x", `--jobversion=${v}`);
    assert.equal(r.code, 2, `${v}: ${r.err}`);
    assert.match(
      r.err,
      new RegExp(`--jobversion: got "${v}", expected an entity version CONFIG-DESIRED-WORKFLOW`),
    );
  }
  const flag = await cli(NOWHERE, "job", "stateless", "get", "x", "--summaryonly=yes");
  assert.equal(flag.code, 2);
  assert.match(flag.err, /summaryonly/);
  // Well-formed, both get past the arguments: they fail only on reaching for the server.
  const ok = await cli(NOWHERE, "job", "stateless", "get", "x", "--jobversion", "2-1-1", "--summaryonly");
  assert.equal(ok.code, 1, ok.err);
  assert.match(ok.err, /cannot reach/);
});

Deno.test("job stateless workflow events|list-updates: a bad instance or limit is a usage error naming it", async () => {
  const cases = [
    [["workflow", "events", "x", "one"], /INSTANCE: got "one", expected a whole number/],
    [["workflow", "events", "x", "0", "--limit=-1"], /--limit: got "-1", expected a whole number/],
    [["list-updates", "x", "--limit", "all"], /--limit: got "all", expected a whole number/],
    [
      ["list-updates", "x", "--instance-events", "--instance-events-limit", "1.5"],
      /--instance-events-limit: got "1.5", expected a whole number/,
    ],
  ] as const;
  for (const [argv, message] of cases) {
    const r = await cli(NOWHERE, "job", "stateless", ...argv);
    assert.equal(r.code, 2, `${argv.join(" ")}: ${r.err}`);
    assert.match(r.err, message);
  }
  // Well-formed, they get past the arguments: they fail only on reaching for the server.
  const ok = await cli(NOWHERE, "job", "stateless", "workflow", "events", "x", "3", "--limit", "2");
  assert.equal(ok.code, 1, ok.err);
  assert.match(ok.err, /cannot reach/);
});

Deno.test("a file that is not UTF-8 is refused, naming it, the byte offset and line of its first bad byte; nothing is sent", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/bad.yaml`;
    const spec = `${PELOTON}/tests/integration/test_configs/test_update_stateless_job_spec.yaml`;
    // "t\xff\xfe" as a job's name, on the second line: read leniently it was the name "t\u{fffd}\u{fffd}".
    const job = await Deno.readTextFile(`${ROOT}/scenarios/jobs/testjob.yaml`);
    const bytes = (text: string) => new TextEncoder().encode(text);
    const before = bytes("# é\nname: t");
    await Deno.writeFile(file, new Uint8Array([...before, 0xff, 0xfe, ...bytes(`\n${job}`)]));
    const at = `not valid UTF-8 at byte offset ${before.length} (line 2, byte 0xff); expected UTF-8 text`;
    for (
      const argv of [
        ["job", "validate", file],
        ["job", "create", "/DefaultResPool", file],
        ["respool", "validate", file],
        ["job", "stateless", "create", "/DefaultResPool", file, "0"],
        ["update", "create", "x", file, "1"],
        ["update", "create", "x", `${ROOT}/scenarios/jobs/service_v2.yaml`, "1", "--update-config", file],
        ["job", "stateless", "replace", "x", file, "1", "1-1-1"],
        ["--basic-auth-config", file, "job", "get", "x"],
        ["job", "validate", spec, "--basic-auth-config", file],
      ]
    ) {
      const r = await cli(NOWHERE, ...argv);
      assert.equal(r.code, 2, `${argv.join(" ")}: ${r.err}`);
      assert.match(r.err, new RegExp(`cannot read ${file}: ${at.replace(/[()]/g, "\\$&")}`), argv.join(" "));
    }
    const patch = await cli(NOWHERE, "job", "stateless", "patch", "x", file, "0");
    assert.equal(patch.code, 1, patch.err);
    assert.ok(patch.err.endsWith(at), patch.err);
    // A character cut short at the end is refused at its first byte; well-formed UTF-8 is read as it is.
    await Deno.writeFile(file, new Uint8Array([...bytes(`${job}\ndescription: caf`), 0xc3]));
    const cut = await cli(NOWHERE, "job", "validate", file);
    assert.equal(cut.code, 2, cut.err);
    const offset = bytes(`${job}\ndescription: caf`).length, line = job.split("\n").length + 1;
    assert.match(cut.err, new RegExp(`at byte offset ${offset} \\(line ${line}, byte 0xc3\\)`));
    await Deno.writeTextFile(file, `${job}\ndescription: café\n`);
    const ok = await cli(NOWHERE, "job", "validate", file);
    assert.equal(ok.code, 0, ok.err);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every query refuses -n 0 alike: a query for no rows is a usage error, never the server's default", async () => {
  for (
    const argv of [
      ["job", "query", "-n", "0"],
      ["job", "stateless", "query", "-n", "0"],
      ["task", "query", "x", "-n", "0"],
      ["pod", "query", "x", "-n", "0"],
    ]
  ) {
    const r = await cli(NOWHERE, ...argv);
    assert.equal(r.code, 2, argv.join(" "));
    assert.match(r.err, /--limit: got "0", expected an integer >= 1/, argv.join(" "));
  }
});

Deno.test("a count, limit, offset, batch size or instance id past the API's uint32 is a usage error stating the bound", async () => {
  const BIG = "99999999999999999999";
  const v2 = `${ROOT}/scenarios/jobs/service_v2.yaml`;
  const spec = `${PELOTON}/tests/integration/test_configs/test_update_stateless_job_spec.yaml`;
  const pod = "00000000-0000-4000-8000-000000000000";
  const cases: [string[], string][] = [
    [["task", "query", "x", `--limit=${BIG}`], "--limit"],
    [["task", "query", "x", "-o", "4294967296"], "--offset"],
    [["pod", "get", `${pod}-0`, `--limit=${BIG}000`], "--limit"],
    [["pod", "query", "x", "-n", BIG], "--limit"],
    [["pod", "events", "x", "0", "--limit", BIG], "--limit"],
    [["resmgr", "tasks", "pending", "/p", "-n", BIG], "--limit"],
    [["resmgr", "tasks", "active", "-n", BIG], "--limit"],
    [["job", "query", "-n", BIG], "--limit"],
    [["job", "query", "-q", BIG], "--total"],
    [["job", "stateless", "query", "-o", BIG], "--offset"],
    [["job", "stop", "--owner", "o", "--limit", BIG], "--limit"],
    [["update", "create", "x", v2, BIG], "BATCH-SIZE"],
    [["update", "create", "x", v2, "1", "--maxattempts", BIG], "--maxattempts"],
    [["update", "create", "x", v2, "1", "--maxfailureInstances", BIG], "--maxfailureInstances"],
    [["job", "rolling-restart", "x", BIG], "BATCH-SIZE"],
    [["job", "stateless", "replace", "x", spec, BIG, "1-1-1"], "BATCH-SIZE"],
    [["job", "stateless", "restart", "x", "--batch-size", BIG], "--batch-size"],
    [["job", "stateless", "workflow", "events", "x", BIG], "INSTANCE"],
    [["job", "stateless", "list-updates", "x", "--limit", BIG], "--limit"],
    [["task", "get", "x", BIG], "INSTANCE"],
    [["task", "list", "x", "-r", `0:${BIG}`], "--range"],
    [["pod", "get", `${pod}-${BIG}`], "NAME"],
    [["jobmgr", "instance-availability", "x", "-i", `0,${BIG}`], "--instances"],
    [["host", "pool", "move", "a", "b", BIG], "COUNT"],
  ];
  for (const [argv, name] of cases) {
    const r = await cli(NOWHERE, ...argv);
    assert.equal(r.code, 2, `${argv.join(" ")}: ${r.err}`);
    assert.match(r.err, new RegExp(`${name}: got "[^"]+", expected .*4294967295`), argv.join(" "));
  }
  // Versions are uint64s, exact in JSON up to 2^53.
  for (
    const argv of [["update", "create", "x", v2, "1", "-c", BIG], [
      "job",
      "rolling-start",
      "x",
      "1",
      "--resourceVersion",
      BIG,
    ]]
  ) {
    const r = await cli(NOWHERE, ...argv);
    assert.equal(r.code, 2, `${argv.join(" ")}: ${r.err}`);
    assert.match(r.err, /: got "99999999999999999999", expected a whole number from 0 to 9007199254740991$/);
  }
  // At the bound, each gets past the arguments: it fails only on reaching for the server.
  const ok = await cli(NOWHERE, "task", "query", "x", "--limit", "4294967295");
  assert.equal(ok.code, 1, ok.err);
  assert.match(ok.err, /cannot reach/);
});

Deno.test("a file of another kind is refused naming what it is and the command that takes it; nothing is sent", async () => {
  const configs = `${PELOTON}/tests/integration/test_configs`;
  const spec = `${configs}/test_update_stateless_job_spec.yaml`;
  const specSaid = `${spec}:16: defaultSpec: expected a v0 job config (defaultConfig, instanceCount, ...); ` +
    "this file is a v1alpha JobSpec (it has defaultSpec): create it with `job stateless create`, or update a " +
    "job to it with `job stateless replace`";
  for (
    const argv of [
      ["job", "create", "/Pool", spec],
      ["job", "validate", spec],
      ["update", "create", "x", spec, "1"],
    ]
  ) {
    const r = await cli(NOWHERE, ...argv);
    assert.deepEqual([r.code, r.out, r.err], [1, "", specSaid], argv.join(" "));
  }
  const specs = [
    ...[...Deno.readDirSync(configs)].map((e) => `${configs}/${e.name}`).filter((f) =>
      f.endsWith("_spec.yaml")
    ),
    `${PELOTON}/example/stateless/testspec.yaml`,
  ];
  for (const file of specs) {
    const r = await cli(NOWHERE, "job", "validate", file);
    assert.equal(r.code, 1, file);
    assert.match(
      r.err,
      /^[^\n]*; this file is a v1alpha JobSpec \(it has defaultSpec\): create it with [^\n]*$/,
      file,
    );
  }

  const job = `${PELOTON}/example/testjob_stateless_service.yaml`;
  const stateless = await cli(NOWHERE, "job", "stateless", "create", "/Pool", job, "1");
  assert.equal(stateless.code, 1);
  assert.match(
    stateless.err,
    /^[^\n]*testjob_stateless_service\.yaml:\d+: \w+: expected a v1alpha JobSpec \(defaultSpec, instanceCount, \.\.\.\); this file is a v0 job config \(it has (defaultConfig|type: SERVICE)\): create it with `job create`, or update a job to it with `update create`$/,
  );

  const pool = `${PELOTON}/example/default_respool.yaml`;
  const r = await cli(NOWHERE, "job", "validate", pool);
  assert.deepEqual([r.code, r.out], [1, ""]);
  assert.equal(
    r.err,
    `${pool}:9: resources: expected a v0 job config (defaultConfig, instanceCount, ...); this file is a resource ` +
      "pool config (it has resources of kind, reservation, limit and share): create it with " +
      "`respool create PATH FILE`",
  );
});

Deno.test("respool validate refuses a parent in the file, as respool create does, with the same message", async () => {
  const configs = `${PELOTON}/tests/integration/test_configs`;
  const pools = [...Deno.readDirSync(configs)].map((e) => e.name).filter((n) =>
    /^test_.*pool.*\.yaml$/.test(n)
  );
  assert.ok(pools.length >= 6, pools.join(", "));
  for (const name of pools) {
    const file = `${configs}/${name}`;
    const said = `${file}: parent: the parent comes from PATH; remove it from the file`;
    const create = await cli(NOWHERE, "respool", "create", "/X", file);
    assert.equal(create.err, `peloton respool create: ${said}`, name);
    const validate = await cli(NOWHERE, "respool", "validate", file);
    assert.deepEqual([validate.code, validate.out, validate.err], [1, "", said], name);
  }
});

Deno.test("job validate of a DAEMON job: its instanceCount is said to be ignored; the count comes from its hosts", async () => {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(
      file,
      "name: d\ntype: DAEMON\ninstanceCount: 5\ndefaultConfig:\n  command: {value: x}\n",
    );
    const warning = `warning: ${file}:3: instanceCount: ignored for a DAEMON job (its instances follow its ` +
      "hosts: one on each UP host its constraint matches)";
    const r = await cli(NOWHERE, "job", "validate", file);
    assert.deepEqual([r.code, r.err], [0, warning]);
    assert.equal(
      r.out,
      `${file}: valid DAEMON job "d" with one instance on each UP host its constraint matches`,
    );
    for (const argv of [["job", "create", "/Pool", file], ["update", "create", "x", file, "1"]]) {
      const sent = await cli(NOWHERE, ...argv);
      assert.equal(sent.err.split("\n")[0], warning, argv.join(" "));
    }
  } finally {
    await Deno.remove(file);
  }
});
