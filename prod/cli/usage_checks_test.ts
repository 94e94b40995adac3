/**
 * Command-line mistakes caught before anything is sent, against a stub server that records every call: a flag
 * given twice, a timeout past the server's longest, a `-m` the client would not reach as given, a missing or
 * mistyped subcommand, and arguments the server would answer with an empty table rather than an error.
 */
import assert from "node:assert/strict";
import { cli, ROOT } from "../testing.ts";
import { type CliIo, runCli } from "./main.ts";

type Call = { procedure: string; headers: Headers; body: Record<string, unknown> };

/** A server answering every call with `answer(procedure, body)` (or `{}`), keeping what it was sent. */
function stub(answer: (procedure: string, body: Record<string, unknown>) => unknown = () => ({})) {
  const calls: Call[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const procedure = req.headers.get("rpc-procedure") ?? "";
    const body = await req.json();
    calls.push({ procedure, headers: req.headers, body });
    return Response.json(answer(procedure, body) ?? {});
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, calls, close: () => server.shutdown() };
}

/** Runs the CLI with `argv` as given (no `-m` added) and the environment `env`. */
async function run(argv: string[], env: Record<string, string> = {}) {
  const out: string[] = [], err: string[] = [];
  const io: CliIo = { out: (l) => out.push(l), err: (l) => err.push(l), env: (n) => env[n] };
  const code = await runCli(argv, io);
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const JOB = "1c3a5e8e-0c1f-4c55-9d2b-3f7f4a1f0b11";
const TESTJOB = `${ROOT}/scenarios/jobs/testjob.yaml`;

Deno.test("a flag given twice is refused, naming it, and nothing is sent; -r and watch -l take several", async () => {
  const s = stub();
  try {
    const twice: [string[], string][] = [
      [
        [
          "job",
          "create",
          "/Pool",
          TESTJOB,
          "--secret-path",
          "/a",
          "--secret-data",
          "x",
          "--secret-path",
          "/b",
        ],
        "peloton job create: --secret-path: given twice; it takes one value",
      ],
      [
        ["job", "query", "-l", "nope=x", "-l", "testKey0=testVal0"],
        "peloton job query: -l/--labels: given twice; it takes one value",
      ],
      [
        ["job", "stop", "--owner", "O", "-l", "k=v", "--labels", "k2=v2", "-l", "k3=v3"],
        "peloton job stop: -l/--labels: given 3 times; it takes one value",
      ],
      [["-j", "job", "get", JOB, "--json"], "peloton job get: -j/--json: given twice; give it once"],
      [["job", "get", JOB, "-m", s.url], "peloton job get: -m/--jobmgr: given twice; it takes one value"],
      [
        ["job", "get", JOB, "-t", "1s", "-t", "2s"],
        "peloton job get: -t/--timeout: given twice; it takes one value",
      ],
    ];
    for (const [argv, message] of twice) {
      const r = await cli(s.url, ...argv);
      assert.equal(r.code, 2, `${argv.join(" ")}: ${r.out}`);
      assert.equal(r.err.split("\n")[0], message);
      assert.match(r.err.split("\n")[1], /^usage: peloton /);
    }
    assert.equal(s.calls.length, 0, "nothing is sent");

    // Peloton's repeatable flags: -r on task start|stop|restart and job stateless restart, watch's --labels.
    const stop = await cli(s.url, "task", "stop", JOB, "-r", "0:1", "-r", "2:3");
    assert.equal(stop.code, 0, stop.err);
    assert.deepEqual(s.calls.pop()!.body.ranges, [{ from: 0, to: 1 }, { from: 2, to: 3 }]);
    const watch = await cli(s.url, "watch", "pod", JOB, "-l", "a=1,b=2", "--labels", "c=3");
    assert.equal(watch.code, 0, watch.err);
    assert.deepEqual((s.calls.pop()!.body.podFilter as { labels: unknown }).labels, [
      { key: "a", value: "1" },
      { key: "b", value: "2" },
      { key: "c", value: "3" },
    ]);
  } finally {
    await s.close();
  }
});

Deno.test("-t/--timeout (and $TIMEOUT) past the server's day is refused naming the flag and the maximum", async () => {
  const s = stub(() => ({ jobInfo: { id: { value: JOB }, config: {}, runtime: { state: "RUNNING" } } }));
  try {
    for (const t of ["597h", "24h0m0.001s", "100000000h"]) {
      const r = await cli(s.url, "-t", t, "job", "status", JOB);
      assert.equal(r.code, 2, `-t ${t}: ${r.out}`);
      assert.equal(
        r.err,
        `peloton job status: -t/--timeout: got "${t}", expected at most 24h (the server waits a day at most for a call)`,
      );
    }
    const env = await run(["job", "status", JOB, "-m", s.url], { TIMEOUT: "25h" });
    assert.equal(env.code, 2);
    assert.match(env.err, /^peloton job status: \$TIMEOUT: got "25h", expected at most 24h/);
    assert.equal(s.calls.length, 0, "nothing is sent");
    const day = await cli(s.url, "--timeout", "24h", "job", "status", JOB);
    assert.equal(day.code, 0, day.err);
    assert.equal(s.calls.pop()!.headers.get("context-ttl-ms"), "86400000");
  } finally {
    await s.close();
  }
});

Deno.test("-m/--jobmgr and $JOBMGR_URL: http(s)://host:port or host:port; anything else is refused naming it", async () => {
  const s = stub(() => ({ results: [], pagination: { offset: 0, limit: 100, total: 0 } }));
  try {
    const form = "expected a daemon's address as http://host:port or host:port";
    const bad: [string, string][] = [
      [`${s.url}/api/v1`, `${form} with no path (the CLI adds /api/v1 itself)`],
      [`${s.url}/x?y=1`, `${form} with no path (the CLI adds /api/v1 itself)`],
      [`${s.url}#top`, `${form} with no path (the CLI adds /api/v1 itself)`],
      ["", form],
      ["   ", form],
      ["http://", form],
      ["ftp://127.0.0.1:21", `${form} (http or https, not ftp:)`],
      [s.url.replace("//", "//u:p@"), `${form} (credentials go in --username and --password)`],
    ];
    for (const [url, expected] of bad) {
      const flag = await run(["-m", url, "job", "query"]);
      assert.equal(flag.code, 2, `-m ${url}: ${flag.out}`);
      assert.equal(flag.err, `peloton job query: -m/--jobmgr: got "${url}", ${expected}`);
      const env = await run(["job", "query"], { JOBMGR_URL: url });
      assert.equal(env.code, 2, `JOBMGR_URL=${url}: ${env.out}`);
      assert.equal(env.err, `peloton job query: $JOBMGR_URL: got "${url}", ${expected}`);
    }
    assert.equal(s.calls.length, 0, "nothing is sent");
    // A trailing slash, Peloton's host:port, and -m over $JOBMGR_URL.
    for (
      const [argv, env] of [[["-m", `${s.url}/`], {}], [["-m", s.url.slice(7)], {}], [[], {
        JOBMGR_URL: s.url,
      }], [
        ["-m", s.url],
        { JOBMGR_URL: "" },
      ]] as const
    ) {
      const r = await run([...argv, "job", "query"], env);
      assert.equal(r.code, 0, `${argv.join(" ")} ${JSON.stringify(env)}: ${r.err}`);
      assert.equal(s.calls.pop()?.procedure, "peloton.api.job.JobManager::Query");
    }
    // An offline command reaches for no server: a bad $JOBMGR_URL is no matter to it.
    const offline = await run(["job", "validate", TESTJOB], { JOBMGR_URL: "" });
    assert.equal(offline.code, 0, offline.err);
  } finally {
    await s.close();
  }
});

Deno.test("a group without a command, or with one it lacks, names the group and its commands", async () => {
  const cases: [string[], string][] = [
    [["resmgr", "tasks"], "peloton resmgr tasks: expected one of active, pending, orphan"],
    [
      ["resmgr", "tasks", "bogus"],
      'peloton resmgr tasks: unknown command "resmgr tasks bogus", expected one of active, pending, orphan',
    ],
    [
      ["jobmgr", "throttled-pod"],
      'peloton jobmgr: unknown command "jobmgr throttled-pod", expected one of throttled-pods, ' +
      "query-job-cache, instance-availability, or none to run peloton jobmgr; did you mean " +
      "`peloton jobmgr throttled-pods`?",
    ],
    [
      ["job", "stateless", "workflow"],
      "peloton job stateless workflow: expected one of events, pause, resume, abort",
    ],
    [["host", "pool"], "peloton host pool: expected one of list, list-hosts, create, delete, change, move"],
    [["volume"], "peloton volume: expected one of list, delete"],
    [
      ["-j", "volume", "lsit", "x"],
      'peloton volume: unknown command "volume lsit", expected one of list, delete; did you mean ' +
      "`peloton volume list`?",
    ],
  ];
  for (const [argv, message] of cases) {
    const r = await cli("http://127.0.0.1:9", ...argv);
    assert.equal(r.code, 2, `${argv.join(" ")}: ${r.out}`);
    const group = message.slice("peloton ".length, message.indexOf(":"));
    assert.equal(r.err, `${message}\n(peloton ${group} -h lists their usage)`);
  }
  const help = await cli("http://127.0.0.1:9", "resmgr", "tasks", "-h");
  assert.equal(help.code, 0, help.err);
  assert.match(help.out, /^peloton resmgr tasks commands:\n {2}peloton resmgr tasks active /);
  assert.match(help.out, /\n {2}peloton resmgr tasks orphan /);
  // The daemon's own help lists the group's commands too.
  const daemon = await cli("http://127.0.0.1:9", "jobmgr", "--help");
  assert.equal(daemon.code, 0, daemon.err);
  assert.match(
    daemon.out,
    /^usage: peloton jobmgr .*\n.*\npeloton jobmgr commands:\n {2}peloton jobmgr throttled-pods/,
  );
});

Deno.test("list-updates checks --instance-events-limit without --instance-events; resmgr tasks active --job is a job id", async () => {
  const s = stub(() => ({ workflowInfos: [], tasksByState: {}, total: 0 }));
  try {
    const limit = await cli(s.url, "job", "stateless", "list-updates", JOB, "--instance-events-limit", "abc");
    assert.equal(limit.code, 2, limit.out);
    assert.equal(
      limit.err,
      'peloton job stateless list-updates: --instance-events-limit: got "abc", expected a whole number',
    );
    for (const job of ["bogus", "/Svc", ""]) {
      const r = await cli(s.url, "resmgr", "tasks", "active", "--job", job);
      assert.equal(r.code, 2, `--job ${job}: ${r.out}`);
      assert.equal(r.err, `peloton resmgr tasks active: --job: got "${job}", expected a job id`);
    }
    assert.equal(s.calls.length, 0, "nothing is sent");
    const ok = await cli(s.url, "resmgr", "tasks", "active", "--job", JOB.toUpperCase());
    assert.equal(ok.code, 0, ok.err);
    assert.equal(s.calls.pop()!.body.jobID, JOB);
    const all = await cli(s.url, "resmgr", "tasks", "active");
    assert.equal(all.code, 0, all.err);
    assert.equal(s.calls.pop()!.body.jobID, "");
  } finally {
    await s.close();
  }
});

Deno.test("workflow events of an instance the job does not have is an error, as task events says it", async () => {
  const missing = `instance 7 is out of range: job ${JOB} has 3 instances`;
  const s = stub((procedure, body) =>
    procedure.endsWith("::GetWorkflowEvents")
      ? { events: [] }
      : body.instanceId === 7
      ? { outOfRange: { instanceCount: 3, message: missing } }
      : { result: { instanceId: body.instanceId } }
  );
  try {
    const r = await cli(s.url, "job", "stateless", "workflow", "events", JOB, "7");
    assert.equal(r.code, 1, r.out);
    assert.equal(r.err, `peloton job stateless workflow events: ${missing}`);
    // An instance of the job the workflow left alone has no events: an empty table, not an error.
    const alone = await cli(s.url, "job", "stateless", "workflow", "events", JOB, "2");
    assert.equal(alone.code, 0, alone.err);
    assert.match(alone.out, /Workflow State/);
  } finally {
    await s.close();
  }
});

Deno.test("respool create|update|delete /a/b/: one trailing slash is dropped, as Peloton's CLI drops it", async () => {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  const s = stub((procedure, body) =>
    procedure.endsWith("::LookupResourcePoolID")
      ? { id: { value: (body.path as { value: string }).value === "/" ? "root" : "pool-1" } }
      : procedure.endsWith("::CreateResourcePool")
      ? { result: { value: "pool-1" } }
      : {}
  );
  try {
    const pool = await Deno.readTextFile(`${ROOT}/scenarios/jobs/default_respool.yaml`);
    await Deno.writeTextFile(file, pool.replace("name: DefaultResPool", "name: Child"));
    const created = await cli(s.url, "respool", "create", "/Child/", file);
    assert.equal(created.code, 0, created.err);
    assert.equal(created.out, "Resource Pool pool-1 created at /Child");
    const updated = await cli(s.url, "respool", "update", "/Child/", file);
    assert.equal(updated.code, 0, updated.err);
    assert.equal(updated.out, "Resource Pool pool-1 updated at /Child");
    const deleted = await cli(s.url, "respool", "delete", "/Child/");
    assert.equal(deleted.code, 0, deleted.err);
    assert.equal(deleted.out, "Resource Pool /Child deleted");
    const paths = s.calls.flatMap((c) => {
      const path = (c.body.path as { value?: string } | undefined)?.value;
      return path === undefined ? [] : [path];
    });
    assert.ok(paths.every((p) => p === "/" || p === "/Child"), paths.join(", "));
    s.calls.length = 0;
    for (const path of ["/Child//", "//", "/"]) {
      const r = await cli(s.url, "respool", "create", path, file);
      assert.equal(r.code, 2, `${path}: ${r.out}`);
      assert.match(r.err, new RegExp(`PATH: got "${path}", expected a pool path such as /a/b`));
    }
    assert.equal(s.calls.length, 0, "nothing is sent");
  } finally {
    await s.close();
    await Deno.remove(file);
  }
});
