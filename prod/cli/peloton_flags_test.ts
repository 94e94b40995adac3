/**
 * Peloton's short flags and global flags against a stub server: `-p` is `--sort` or `--id` by command, `-t`
 * the call timeout, `-u`/`-v` the host and resource managers' addresses (accepted, said to be ignored), and
 * the credentials are `--username`/`--password` alone.
 */
import assert from "node:assert/strict";
import { cli } from "../testing.ts";
import { runCli } from "./main.ts";

type Call = { procedure: string; headers: Headers; body: Record<string, unknown> };

/** A server answering every call with `answer(procedure)` (or `{}`), keeping what it was sent. */
function stub(answer: (procedure: string) => unknown = () => ({})) {
  const calls: Call[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const procedure = req.headers.get("rpc-procedure") ?? "";
    calls.push({ procedure, headers: req.headers, body: await req.json() });
    return Response.json(answer(procedure) ?? {});
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, calls, close: () => server.shutdown() };
}

const JOB_GET = { jobInfo: { id: { value: "j" }, config: { name: "j" }, runtime: { state: "RUNNING" } } };

Deno.test("-t/--timeout (or $TIMEOUT) is each call's deadline, as Go writes a duration; a bad one calls nothing", async () => {
  const s = stub(() => JOB_GET);
  try {
    for (
      const [flags, ttl] of [[[], "20000"], [["-t", "300ms"], "300"], [
        ["--timeout", "1m30s"],
        "90000",
      ]] as const
    ) {
      const r = await cli(s.url, "job", "get", "j", ...flags);
      assert.equal(r.code, 0, r.err);
      assert.equal(s.calls.pop()!.headers.get("context-ttl-ms"), ttl, flags.join(" "));
    }
    const out: string[] = [], err: string[] = [];
    const code = await runCli(["job", "get", "j", "-m", s.url], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      env: (n) => n === "TIMEOUT" ? "2.5s" : undefined,
    });
    assert.equal(code, 0, err.join("\n"));
    assert.equal(s.calls.pop()!.headers.get("context-ttl-ms"), "2500", "$TIMEOUT");
    for (const bad of ["20", "0s", "5 s", "fast"]) {
      const r = await cli(s.url, "job", "get", "j", "-t", bad);
      assert.equal(r.code, 2, `-t ${bad}: ${r.out}`);
      assert.equal(
        r.err,
        `peloton job get: -t/--timeout: got "${bad}", expected a duration of 1ms or more such as 20s, 500ms or 1m30s`,
      );
    }
    assert.deepEqual(s.calls, [], "a bad --timeout calls nothing");
  } finally {
    await s.close();
  }
});

Deno.test("-u/--hostmgr and -v/--resmgr are Peloton's addresses: accepted, said to be ignored, never a user", async () => {
  const s = stub(() => JOB_GET);
  try {
    const r = await cli(s.url, "-u", "localhost:5391", "job", "get", "j", "--resmgr", "localhost:5394");
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(r.err.split("\n"), [
      `peloton: -u/--hostmgr localhost:5391 ignored: every call goes to ${s.url} (-m/--jobmgr), which passes ` +
      "host manager calls on; the user is --username",
      `peloton: -v/--resmgr localhost:5394 ignored: every call goes to ${s.url} (-m/--jobmgr), which passes ` +
      "resource manager calls on",
    ]);
    const [call] = s.calls.splice(0);
    assert.equal(call.procedure, "peloton.api.job.JobManager::Get");
    assert.equal(call.headers.get("authorization"), null, "-u is no user");

    const auth = await cli(s.url, "job", "get", "j", "--username", "alice", "--password", "s3cret");
    assert.equal(auth.code, 0, auth.err);
    assert.equal(s.calls.pop()!.headers.get("authorization"), `Basic ${btoa("alice:s3cret")}`);

    // -p is no longer the password: a command without a -p of its own says so, and calls nothing.
    const p = await cli(s.url, "job", "get", "j", "-p", "s3cret");
    assert.equal(p.code, 2, p.out);
    assert.match(
      p.err,
      /^peloton job get: -p: not an option of this command \(Peloton's -p is --sort or --id where a command has one\); credentials are --basic-auth-config FILE, \$PELOTON_USERNAME\/\$PELOTON_PASSWORD or --username\/--password\n/,
    );
    for (const [flag, name] of [["-z", "zkservers"], ["-e", "clusterName"], ["--zkroot", "zkroot"]]) {
      const zk = await cli(s.url, "job", "get", "j", flag, "x");
      assert.equal(zk.code, 2, `${flag}: ${zk.out}`);
      assert.match(
        zk.err,
        new RegExp(`^peloton job get: --${name}: not supported: this CLI finds no daemon`),
      );
    }
    assert.deepEqual(s.calls, []);
    // A command's own -v wins: `up -v` is still verbose.
    const up = await cli(s.url, "up", "-v", "--help");
    assert.equal(up.code, 0, up.err);
    assert.match(up.out, /\[-v\/--verbose\]/);
  } finally {
    await s.close();
  }
});

Deno.test("-p is --sort for job|job stateless|task|pod query, as Peloton's; job query takes -k/--keywords and -d/--timerange", async () => {
  const s = stub((procedure) =>
    procedure.endsWith("JobManager::Query")
      ? { results: [], pagination: { offset: 0, limit: 100, total: 0 } }
      : procedure.endsWith("::QueryJobs")
      ? { records: [], pagination: { offset: 0, limit: 100, total: 0 } }
      : procedure.endsWith("::QueryPods")
      ? { pods: [], pagination: { offset: 0, limit: 100, total: 0 } }
      : { result: [], pagination: { offset: 0, limit: 100, total: 0 } }
  );
  try {
    const orderOf = (call: Call) => {
      const spec = (call.body.spec ?? call.body) as { pagination: { orderBy?: unknown } };
      return call.body.pagination
        ? (call.body.pagination as { orderBy?: unknown }).orderBy
        : spec.pagination.orderBy;
    };
    const runs: [string[], unknown][] = [
      [["job", "query", "-p", "name"], [{ order: "DESC", property: { value: "name" } }]],
      [["job", "stateless", "query", "-p", "state", "-a", "ASC"], [{
        order: "ORDER_BY_ASC",
        property: { value: "state" },
      }]],
      [["task", "query", "j", "-p", "state"], [{ order: "ASC", property: { value: "state" } }]],
      [["pod", "query", "j", "-p", "host", "-a", "DESC"], [{
        order: "ORDER_BY_DESC",
        property: { value: "host" },
      }]],
    ];
    for (const [argv, orderBy] of runs) {
      const r = await cli(s.url, ...argv);
      assert.equal(r.code, 0, `${argv.join(" ")}: ${r.err}`);
      assert.deepEqual(orderOf(s.calls.pop()!), orderBy, argv.join(" "));
    }
    const bad = await cli(s.url, "task", "query", "j", "-p", "colour");
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--sort: got "colour", expected one of/);

    const before = Date.now();
    const r = await cli(s.url, "job", "query", "-k", "web, api,,", "-d", "2");
    assert.equal(r.code, 0, r.err);
    const spec = s.calls.pop()!.body.spec as {
      keywords: string[];
      creationTimeRange: { min: string; max: string };
    };
    assert.deepEqual(spec.keywords, ["web", "api"]);
    const min = Date.parse(spec.creationTimeRange.min), max = Date.parse(spec.creationTimeRange.max);
    assert.ok(max >= before && max <= Date.now(), `max is now: ${spec.creationTimeRange.max}`);
    assert.equal(max - min, 2 * 86_400_000, "two days before it");
    const none = await cli(s.url, "job", "query", "--timerange", "0", "--keywords", "");
    assert.equal(none.code, 0, none.err);
    assert.deepEqual(
      s.calls.pop()!.body.spec,
      { pagination: { limit: 100, offset: 0 } },
      "0 days is any time",
    );
    // `job stateless query` takes it too (its QuerySpec has the same creationTimeRange).
    const stateless = await cli(s.url, "job", "stateless", "query", "-d", "1");
    assert.equal(stateless.code, 0, stateless.err);
    const range = (s.calls.pop()!.body.spec as { creationTimeRange: { min: string; max: string } })
      .creationTimeRange;
    assert.equal(Date.parse(range.max) - Date.parse(range.min), 86_400_000, "one day before now");
    const days = await cli(s.url, "job", "query", "-d", "a week");
    assert.equal(days.code, 2);
    assert.match(days.err, /--timerange: got "a week", expected a whole number/);
    assert.deepEqual(s.calls, []);
  } finally {
    await s.close();
  }
});
