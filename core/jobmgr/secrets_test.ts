import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { JOB_SERVICE, jobConfigJson } from "./job_api.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";
import { MAX_SECRET_BYTES, parseSecrets } from "./secrets.ts";
import type { JobConfig } from "../model/config_types.ts";

const b64 = (s: string) => btoa(s);
const KEY = b64("s3cr3t-key"), CERT = b64("-----BEGIN CERTIFICATE-----");

/** Calls the v0 JobManager Create with `secrets`; returns the reply (the resmgr's pool lookup answered). */
function create(rig: JobmgrRig, secrets: unknown, config: Partial<JobConfig> = {}, jobId = JOB_ID) {
  rig.api("job", "Create", { id: { value: jobId }, config: jobConfigJson(makeJobConfig(config)), secrets });
  if (rig.transport.peek("api", "resmgr").length) rig.answerPool();
  rig.store.settle();
  rig.tick();
  return rig.replies()[0];
}

/** Launches instance 0 and returns its launch spec's secrets. */
function launchedSecrets(rig: JobmgrRig, instance = 0) {
  return rig.launch([instance]).tasks[0].secrets;
}

Deno.test("secrets: a Create's secrets are stored apart from the config, written into every launch, and Get answers id and path only", async () => {
  const rig = new JobmgrRig();
  const reply = create(rig, [
    { path: "/etc/app/key", value: { data: KEY } },
    { id: { value: "cert-1" }, path: "certs/ca.pem", value: { data: CERT } },
  ], { instanceCount: 2 });
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  const stored = rig.store.secretRows.read(JOB_ID);
  assert.deepEqual(stored.map((s) => [s.path, s.data, s.version]), [
    ["/etc/app/key", KEY, 1],
    ["certs/ca.pem", CERT, 1],
  ]);
  assert.equal(stored[1].secretId, "cert-1", "a given id is kept");
  assert.match(stored[0].secretId, /^[0-9a-f-]{36}$/, "a missing one is made");
  for (const batch of rig.store.batches) {
    for (const w of batch) {
      if (w.kind !== "secret.put") {
        assert.doesNotMatch(JSON.stringify(w), /czNjcjN0|BEGIN/, `${w.kind} holds no data`);
      }
    }
  }

  assert.deepEqual(launchedSecrets(rig), [
    { path: "/etc/app/key", data: KEY },
    { path: "certs/ca.pem", data: CERT },
  ]);

  rig.api("job", "Get", { id: { value: JOB_ID } });
  await rig.reads();
  const got = rig.replies()[0].body as { secrets: unknown };
  assert.deepEqual(got.secrets, [
    { id: { value: stored[0].secretId }, path: "/etc/app/key" },
    { id: { value: "cert-1" }, path: "certs/ca.pem" },
  ]);
  assert.doesNotMatch(JSON.stringify(got), new RegExp(`${KEY}|${CERT}`), "no data in the answer");

  // A restarted job manager reads them back with the job.
  rig.transport.drain();
  const jm = await rig.restartJobManager();
  assert.deepEqual(jm.jobs.get(JOB_ID)!.secrets.map((s) => s.path), ["/etc/app/key", "certs/ca.pem"]);
  rig.tick();
  const tasks = [{ taskId: rig.taskId(1), ports: {} }];
  const poll = rig.transport.take("get-placements", "resmgr").at(-1)!;
  jm.receive({
    kind: "placements",
    reqId: poll.reqId,
    placements: [{ leaseId: "h1#2", hostname: "h1", agentId: "agent-h1", tasks }],
    changes: [],
    preemptions: [],
  });
  rig.tick();
  rig.store.settle();
  const launch = rig.transport.take("launch-tasks", "hostmgr").at(-1)!;
  assert.deepEqual(launch.tasks[0].secrets?.map((s) => s.data), [KEY, CERT], "after a restart too");
});

Deno.test("secrets: bad ones are refused naming the field, and nothing is created", () => {
  const cases: [unknown, RegExp][] = [
    ["nope", /^secrets: got "nope", expected a list of secrets$/],
    [[{ value: { data: KEY } }], /^secrets\[0\]\.path: got undefined, expected the path to write it at$/],
    [[{ path: "../../etc/passwd", value: { data: KEY } }], /^secrets\[0\]\.path: .*without "\.\." parts$/],
    [
      [{ path: "a", value: { data: KEY } }, { path: "a", value: { data: KEY } }],
      /^secrets\[1\]\.path: "a" is given twice$/,
    ],
    [
      [{ path: "a", value: { data: "not base64!" } }],
      /^secrets\[0\]\.value\.data: expected the secret's bytes in base64$/,
    ],
    [[{ path: "a" }], /^secrets\[0\]\.value\.data: expected/],
    [
      [{ path: "./stdout", value: { data: KEY } }],
      /^secrets\[0\]\.path: got "\.\/stdout", the task's own log file/,
    ],
    [
      [{ path: "p".repeat(4097), value: { data: KEY } }],
      /^secrets\[0\]\.path: 4097 characters, expected at most 4096$/,
    ],
    [
      [{ id: { value: "i".repeat(256) }, path: "a", value: { data: KEY } }],
      /^secrets\[0\]\.id: 256 characters/,
    ],
    [
      [{ path: "a", value: { data: "A".repeat(Math.ceil((MAX_SECRET_BYTES + 1) / 3) * 4) } }],
      /bytes, expected at most 1048576$/,
    ],
  ];
  for (const [secrets, message] of cases) {
    const parsed = parseSecrets(secrets);
    assert.ok(
      !parsed.ok && message.test(parsed.message),
      `${JSON.stringify(secrets).slice(0, 60)}: ${JSON.stringify(parsed)}`,
    );
    const rig = new JobmgrRig();
    const reply = create(rig, secrets);
    assert.equal(reply.error?.code, "invalid-argument");
    assert.match(reply.error!.message, message);
    assert.equal(rig.store.jobs.size, 0, "no job");
    assert.equal(rig.store.secretRows.read(JOB_ID).length, 0);
  }
  const rig = new JobmgrRig();
  const docker = create(rig, [{ path: "a", value: { data: KEY } }], {
    defaultConfig: {
      ...makeJobConfig().defaultConfig,
      container: { type: "DOCKER", docker: { image: "x" } },
    },
  });
  assert.deepEqual(docker.error, {
    code: "invalid-argument",
    message:
      "secrets: the job's defaultConfig.container.type is DOCKER; secrets need the Mesos containerizer (MESOS)",
  });
  assert.doesNotMatch(
    JSON.stringify(parseSecrets([{ path: "a", value: { data: "c2VjcmV0!" } }])),
    /c2VjcmV0/,
  );
});

Deno.test("secrets: an Update must name the job's secrets; it replaces their data and adds new ones for later launches", () => {
  const rig = new JobmgrRig();
  create(rig, [{ path: "key", value: { data: KEY } }], { instanceCount: 1 });
  const [old] = rig.store.secretRows.read(JOB_ID);
  assert.deepEqual(launchedSecrets(rig), [{ path: "key", data: KEY }]);
  const update = (secrets: unknown, instanceCount = 2) => {
    rig.api("job", "Update", {
      id: { value: JOB_ID },
      config: jobConfigJson(makeJobConfig({ instanceCount })),
      secrets,
    });
    return rig.replies()[0];
  };

  const without = update(undefined);
  assert.equal(without.error?.code, "invalid-argument");
  assert.match(without.error!.message, /^secrets: got 0, expected every one of the job's 1 secrets/);
  const other = update([{ path: "other", value: { data: KEY } }]);
  assert.equal(other.error?.message, `secrets: missing the job's secret with id ${old.secretId} path key`);
  assert.equal(rig.job().config.instanceCount, 1, "a refused update changes nothing");

  const NEW = b64("rotated"), EXTRA = b64("extra");
  const ok = update([{ path: "key", value: { data: NEW } }, { path: "extra", value: { data: EXTRA } }]);
  assert.equal(ok.error, undefined, JSON.stringify(ok));
  assert.deepEqual(
    rig.store.secretRows.read(JOB_ID).map((s) => [s.secretId === old.secretId, s.path, s.data, s.version]),
    [[false, "extra", EXTRA, 1], [true, "key", NEW, 2]],
  );
  assert.deepEqual(launchedSecrets(rig, 1), [{ path: "extra", data: EXTRA }, { path: "key", data: NEW }]);
});

Deno.test("secrets: the v1alpha JobService takes them on CreateJob and ReplaceJob, and GetJob answers ids and paths", async () => {
  const rig = new JobmgrRig();
  const spec = (cmd: string) => ({
    name: "s",
    instanceCount: 1,
    defaultSpec: {
      containers: [{ name: "c", entrypoint: { value: cmd }, resource: { cpuLimit: 0.1, memLimitMb: 8 } }],
    },
    respoolId: { value: "pool-a" },
  });
  rig.call(STATELESS_SERVICE, "CreateJob", {
    jobId: { value: JOB_ID },
    spec: spec("sleep 60"),
    secrets: [{ secretId: { value: "tok" }, path: "/run/token", value: { data: KEY } }],
  });
  rig.answerPool();
  rig.store.settle();
  const created = rig.replies()[0];
  assert.equal(created.error, undefined, JSON.stringify(created));
  assert.deepEqual(launchedSecrets(rig), [{ path: "/run/token", data: KEY }]);

  rig.call(STATELESS_SERVICE, "GetJob", { jobId: { value: JOB_ID } });
  await rig.reads();
  const got = rig.replies()[0].body as {
    secrets: unknown;
    jobInfo: { status: { version: { value: string } } };
  };
  assert.deepEqual(got.secrets, [{ secretId: { value: "tok" }, path: "/run/token" }]);

  rig.call(STATELESS_SERVICE, "ReplaceJob", {
    jobId: { value: JOB_ID },
    version: got.jobInfo.status.version,
    spec: spec("sleep 61"),
    secrets: [{ secretId: { value: "tok" }, path: "/run/token", value: { data: CERT } }],
  });
  const replaced = rig.replies()[0];
  assert.equal(replaced.error, undefined, JSON.stringify(replaced));
  assert.deepEqual(rig.store.secretRows.read(JOB_ID).map((s) => [s.data, s.version]), [[CERT, 2]]);
  assert.deepEqual(rig.job().secrets.map((s) => s.data), [CERT]);

  // A ReplaceJob without secrets (a rollback: no read gives their data back) keeps the job's.
  rig.call(STATELESS_SERVICE, "ReplaceJob", {
    jobId: { value: JOB_ID },
    version: (replaced.body as { version: { value: string } }).version,
    spec: spec("sleep 62"),
  });
  const kept = rig.replies()[0];
  assert.equal(kept.error, undefined, JSON.stringify(kept));
  assert.deepEqual(rig.job().secrets.map((s) => [s.path, s.data, s.version]), [["/run/token", CERT, 2]]);

  rig.call(JOB_SERVICE, "Get", { id: { value: JOB_ID } });
  await rig.reads();
  assert.doesNotMatch(JSON.stringify(rig.replies()), new RegExp(`${KEY}|${CERT}`));
});

Deno.test("secrets: a path the sandbox cannot hold as a file is refused at create and update, naming the field", () => {
  const one = (...paths: string[]) => paths.map((path) => ({ path, value: { data: KEY } }));
  const cases: [unknown, RegExp][] = [
    // An absolute path lands below the sandbox: these are the task's own logs.
    [one("/stdout"), /^secrets\[0\]\.path: got "\/stdout", the task's own log file in its sandbox$/],
    [one("//stderr"), /^secrets\[0\]\.path: got "\/\/stderr", the task's own log file/],
    [one("/./stdout"), /^secrets\[0\]\.path: got "\/\.\/stdout", the task's own log file/],
    [one(".//stderr"), /^secrets\[0\]\.path: got "\.\/\/stderr", the task's own log file/],
    // A directory's path would be written as a file of that name.
    [one("sec/"), /^secrets\[0\]\.path: got "sec\/", expected a file's path, not a directory's/],
    [one("/etc/app/."), /^secrets\[0\]\.path: got "\/etc\/app\/\.", expected a file's path/],
    [one("/"), /^secrets\[0\]\.path: got "\/", expected a path naming a file$/],
    [one("./"), /^secrets\[0\]\.path: got "\.\/", expected a path naming a file$/],
    [one("a\0b"), /^secrets\[0\]\.path: got "a\\u0000b", expected a path without NUL characters$/],
    // One file at two spellings, and a file that another secret needs as its directory.
    [
      one("sec/a", "/sec/a"),
      /^secrets\[1\]\.path: "\/sec\/a" is given twice: secrets\[0\]\.path "sec\/a" is the same file$/,
    ],
    [
      one("sec/a", "sec/a-x", "sec/a/b"),
      /^secrets\[2\]\.path: "sec\/a\/b" is below secrets\[0\]\.path "sec\/a", a file, not a directory$/,
    ],
    [
      one("/sec/a/b", "sec/a"),
      /^secrets\[1\]\.path: "sec\/a" is a directory holding secrets\[0\]\.path "\/sec\/a\/b", not a file$/,
    ],
  ];
  for (const [secrets, message] of cases) {
    const parsed = parseSecrets(secrets);
    assert.ok(
      !parsed.ok && message.test(parsed.message),
      `${JSON.stringify(secrets)}: ${JSON.stringify(parsed)}`,
    );
    const rig = new JobmgrRig();
    const reply = create(rig, secrets);
    assert.equal(reply.error?.code, "invalid-argument", JSON.stringify(secrets));
    assert.match(reply.error!.message, message);
    assert.equal(rig.store.jobs.size, 0, "no job");
  }
  // Neighbours that are not each other's directories are fine.
  assert.ok(parseSecrets(one("sec/a", "sec/ab", "sec/a-b", "sec/b/a", "/etc/stdout", "stdout.txt")).ok);

  // An update that would add a file below one of the job's secrets is refused, and changes nothing.
  const rig = new JobmgrRig();
  create(rig, one("key"), { instanceCount: 1 });
  rig.api("job", "Update", {
    id: { value: JOB_ID },
    config: jobConfigJson(makeJobConfig({ instanceCount: 2 })),
    secrets: one("key", "key/nested"),
  });
  const [reply] = rig.replies();
  assert.equal(reply.error?.code, "invalid-argument");
  assert.match(reply.error!.message, /^secrets\[1\]\.path: "key\/nested" is below secrets\[0\]\.path "key"/);
  assert.equal(rig.job().config.instanceCount, 1);
});

Deno.test("secrets: data in URL-safe or unpadded base64, as the proto3 JSON mapping allows, is stored standard and padded", () => {
  const rig = new JobmgrRig();
  // "??>" is "Pz8+" in standard base64: "Pz8-" URL-safe; "hello" is "aGVsbG8=", "aGVsbG8" unpadded.
  const reply = create(rig, [
    { path: "a", value: { data: "Pz8-" } },
    { path: "b", value: { data: "aGVsbG8" } },
  ]);
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  assert.deepEqual(rig.store.secretRows.read(JOB_ID).map((s) => s.data), ["Pz8+", "aGVsbG8="]);
});
