/**
 * `job stop` against a stub job manager: a stop capped at -n/--total says how many matched; a job that has
 * ended is left alone; without JOB, --owner is required.
 */
import assert from "node:assert/strict";
import { cli } from "../testing.ts";

type StubJob = {
  state: string;
  owner?: string;
  owningTeam: string;
  labels: { key: string; value: string }[];
};

/**
 * A job manager whose Query matches `matching` active jobs, whose Get knows `known`, and which answers Stop
 * for any job; `calls` lists every procedure called.
 */
function stubJobManager(matching: number, known: Record<string, StubJob> = {}) {
  const queries: unknown[] = [], stopped: string[] = [], calls: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const procedure = req.headers.get("Rpc-Procedure");
    const body = await req.json();
    calls.push(procedure!);
    if (procedure === "peloton.api.job.JobManager::Get") {
      const job = known[body.id.value];
      if (!job) {
        return Response.json({ code: "not-found", message: `job ${body.id.value} not found` }, {
          status: 404,
        });
      }
      const { state, ...config } = job;
      return Response.json({ jobInfo: { id: body.id, config, runtime: { state, goalState: state } } });
    }
    if (procedure === "peloton.api.job.JobManager::Query") {
      queries.push(body.spec);
      const { offset = 0, limit = 100, maxLimit } = body.spec.pagination;
      // The active jobs match; no FAILED job is in a crash loop.
      const failed = body.spec.jobStates.length === 1 && body.spec.jobStates[0] === "FAILED";
      const considered = failed ? 0 : Math.min(matching, maxLimit || Infinity);
      const ids = Array.from(
        { length: Math.max(0, Math.min(limit, considered - offset)) },
        (_, i) => i + offset,
      );
      return Response.json({
        results: ids.map((i) => ({
          id: { value: `job-${i}` },
          name: `j${i}`,
          owner: "someone",
          owningTeam: "o",
          runtime: { state: "RUNNING" },
        })),
        pagination: { offset, limit, total: considered },
      });
    }
    if (procedure === "peloton.api.task.TaskManager::Stop") {
      stopped.push(body.jobId.value);
      return Response.json({ stoppedInstanceIds: [0] });
    }
    return Response.json({ error: `unexpected ${procedure}` }, { status: 500 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    queries,
    stopped,
    calls,
    close: () => server.shutdown(),
  };
}

Deno.test("job stop --owner: more matches than -n/-q stops that many and says how many matched, exit 0", async () => {
  const jm = stubJobManager(250);
  try {
    const r = await cli(jm.url, "job", "stop", "--owner", "o", "-f");
    assert.equal(r.code, 0, r.err);
    assert.equal(jm.stopped.length, 100);
    assert.equal(
      r.err,
      "peloton job stop: stopped 100 of 250 matching jobs (--limit 100, --total 100); run again, or pass " +
        "--limit 250 --total 250, to stop the rest",
    );
    // The page Peloton's CLI asks for (min of --limit and --total), counted without a cap.
    // Then every FAILED job, a page at a time, for services in a crash loop (none here).
    assert.deepEqual(jm.queries, [
      { jobStates: ["INITIALIZED", "PENDING", "RUNNING"], pagination: { limit: 100 }, owner: "o" },
      { jobStates: ["FAILED"], pagination: { limit: 500, offset: 0 }, owner: "o" },
    ]);

    const json = await cli(
      jm.url,
      "job",
      "stop",
      "--owner",
      "o",
      "-l",
      "a=b",
      "-f",
      "-j",
      "-n",
      "10",
      "-q",
      "500",
    );
    assert.equal(json.code, 0, json.err);
    const answer = JSON.parse(json.out);
    assert.equal(answer.stopped.length, 10);
    assert.equal(answer.matched, 250);
    assert.equal(
      json.err,
      "peloton job stop: stopped 10 of 250 matching jobs (--limit 10); run again, or pass --limit 250, " +
        "to stop the rest",
    );
  } finally {
    await jm.close();
  }
});

Deno.test("job stop --owner: every match within --total is stopped without a warning", async () => {
  const jm = stubJobManager(250);
  try {
    const r = await cli(jm.url, "job", "stop", "--owner", "o", "-f", "--total", "250", "--limit", "300");
    assert.equal(r.code, 0, r.err);
    assert.equal(jm.stopped.length, 250);
    assert.equal(r.err, "");
  } finally {
    await jm.close();
  }
});

Deno.test("job stop --owner: the question asked says how many matched when not all are listed", async () => {
  const jm = stubJobManager(3);
  try {
    const { runCli } = await import("./main.ts");
    const asked: string[] = [], err: string[] = [];
    const code = await runCli(["job", "stop", "--owner", "o", "-q", "2", "-m", jm.url], {
      out: () => {},
      err: (l) => err.push(l),
      env: () => undefined,
      confirm: (q) => (asked.push(q), Promise.resolve(true)),
    });
    assert.equal(code, 0, err.join("\n"));
    assert.deepEqual(asked, ["Stop these 2 jobs (of 3 matching)?"]);
    assert.deepEqual(jm.stopped, ["job-0", "job-1"]);
    assert.deepEqual(err, [
      "peloton job stop: stopped 2 of 3 matching jobs (--total 2); run again, or pass --total 3, to stop the rest",
    ]);
  } finally {
    await jm.close();
  }
});

const LABELS = [{ key: "a", value: "b" }];

Deno.test("job stop JOB leaves a job that has ended alone, as Peloton's 'Job is in terminal state', exit 0", async () => {
  const jm = stubJobManager(0, {
    done: { state: "SUCCEEDED", owningTeam: "o", labels: LABELS },
    killed: { state: "KILLED", owningTeam: "o", labels: LABELS },
    failed: { state: "FAILED", owningTeam: "o", labels: [] },
    live: { state: "RUNNING", owningTeam: "o", labels: LABELS },
  });
  try {
    const byId = await cli(jm.url, "job", "stop", "killed");
    assert.equal(byId.code, 0, byId.err);
    assert.equal(byId.out, "Job is in terminal state: KILLED");
    assert.equal(byId.err, "");

    const byOwner = await cli(jm.url, "job", "stop", "done", "--owner", "o", "-l", "a=b", "-f");
    assert.equal(byOwner.code, 0, byOwner.err);
    assert.equal(byOwner.out, "Job is in terminal state: SUCCEEDED");

    const json = await cli(jm.url, "job", "stop", "failed", "-j");
    assert.equal(json.code, 0, json.err);
    assert.deepEqual(JSON.parse(json.out), {
      stopped: [],
      failed: [],
      terminal: { id: "failed", state: "FAILED" },
    });
    assert.deepEqual(jm.stopped, [], "no job that has ended is stopped again");

    const live = await cli(jm.url, "job", "stop", "live", "--owner", "o");
    assert.equal(live.code, 0, live.err);
    assert.deepEqual(jm.stopped, ["live"], "a running job is stopped");
  } finally {
    await jm.close();
  }
});

Deno.test("job stop without JOB requires --owner, as Peloton's CLI: labels alone are a usage error", async () => {
  const jm = stubJobManager(5);
  try {
    for (
      const [args, because] of [
        [["-l", "a=b", "-f"], " (-l/--labels alone is not enough)"],
        [["--owner", "", "-f"], ""],
        [[], ""],
      ] as const
    ) {
      const r = await cli(jm.url, "job", "stop", ...args);
      assert.equal(r.code, 2, JSON.stringify(args));
      assert.equal(
        r.err.split("\n")[0],
        `peloton job stop: --owner: required without JOB${because}; give JOB, or --owner O [-l k=v,...] ` +
          "to stop every active job of that owner",
      );
    }
    assert.deepEqual(jm.calls, [], "nothing asked of the job manager");
  } finally {
    await jm.close();
  }
});

Deno.test("job stop JOB --owner/-l checks the owning team and ANY one label, as Peloton; no match stops nothing, exit 0", async () => {
  const jm = stubJobManager(0, {
    web: {
      state: "RUNNING",
      owner: "alice",
      owningTeam: "team-web",
      labels: [{ key: " tier ", value: "front " }, { key: "env", value: "prod" }],
    },
  });
  try {
    for (
      const args of [
        ["--owner", "alice"], // the owner, not the owning team
        ["--owner", "team-web", "-l", "env=test"],
        ["-l", "tier=back,env=test"],
      ]
    ) {
      const r = await cli(jm.url, "job", "stop", "web", ...args);
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.err}`);
      assert.equal(r.out, "No matching job found", args.join(" "));
      assert.equal(r.err, "", args.join(" "));
    }
    const json = await cli(jm.url, "job", "stop", "web", "--owner", "alice", "-j");
    assert.equal(json.code, 0, json.err);
    assert.deepEqual(JSON.parse(json.out), { stopped: [], failed: [], matched: 0 });
    assert.deepEqual(jm.stopped, [], "nothing stopped when the job does not match");

    // One label of several is enough, and the job's labels are compared trimmed.
    const anyLabel = await cli(
      jm.url,
      "job",
      "stop",
      "web",
      "--owner",
      "team-web",
      "-l",
      "env=test,tier=front",
    );
    assert.equal(anyLabel.code, 0, anyLabel.err);
    assert.equal(anyLabel.out, "Job web stopping: 1 instances");
    assert.deepEqual(jm.stopped, ["web"]);
  } finally {
    await jm.close();
  }
});

Deno.test("job stop --owner lists the matching jobs with their owning team, which --owner matched, as Owner", async () => {
  const jm = stubJobManager(1);
  try {
    const r = await cli(jm.url, "job", "stop", "--owner", "o", "-f");
    assert.equal(r.code, 0, r.err);
    const [header, row] = r.out.split("\n").map((l) => l.split("|").map((c) => c.trim()));
    assert.deepEqual([header[2], row[2]], ["Owner", "o"]);
  } finally {
    await jm.close();
  }
});
