/**
 * `job query` sends Peloton's pagination: -n limit, -o offset, -q total (maxLimit), --sort and -a (orderBy);
 * its tables, and the stateless ones, show the owning team (what --owner matches) as Owner.
 */
import assert from "node:assert/strict";
import { cli } from "../testing.ts";

Deno.test("job query -o/--offset, -q/--total, --sort and -a page and order Query as Peloton's CLI does", async () => {
  const specs: unknown[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    specs.push((await req.json()).spec);
    return Response.json({ results: [], pagination: { offset: 0, limit: 0, total: 0 } });
  });
  try {
    const url = `http://127.0.0.1:${server.addr.port}`;
    const argvs = [["-n", "5", "-o", "10", "-q", "50"], ["--offset", "3", "--total", "7"], [], [
      "--sort",
      "name,owner",
      "-a",
      "asc",
    ]];
    for (const argv of argvs) {
      const r = await cli(url, "job", "query", ...argv);
      assert.equal(r.code, 0, r.err);
    }
    assert.deepEqual(specs, [
      { pagination: { limit: 5, offset: 10, maxLimit: 50 } },
      { pagination: { limit: 100, offset: 3, maxLimit: 7 } },
      { pagination: { limit: 100, offset: 0 } },
      {
        pagination: {
          limit: 100,
          offset: 0,
          orderBy: [{ order: "ASC", property: { value: "name" } }, {
            order: "ASC",
            property: { value: "owner" },
          }],
        },
      },
    ]);
    const bad = await cli(url, "job", "query", "-o", "x");
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--offset: got "x", expected a whole number/);
  } finally {
    await server.shutdown();
  }
});

Deno.test("job query and job stateless query|list show the owning team, which --owner matches, as Owner", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const procedure = req.headers.get("Rpc-Procedure") ?? "";
    const job = { name: "web", owner: "alice", owningTeam: "team-web", instanceCount: 1 };
    if (procedure.endsWith("JobManager::Query")) {
      return Response.json({
        results: [{ ...job, id: { value: "j1" }, type: "SERVICE", runtime: { state: "RUNNING" } }],
        pagination: { offset: 0, limit: 100, total: 1 },
      });
    }
    const summary = {
      ...job,
      jobId: { value: "j1" },
      status: { state: "JOB_STATE_RUNNING", desiredState: "JOB_STATE_RUNNING", version: { value: "1-1-1" } },
    };
    return Response.json(
      procedure.endsWith("::ListJobs")
        ? { jobs: [summary] }
        : { records: [summary], pagination: { offset: 0, limit: 100, total: 1 } },
    );
  });
  try {
    const url = `http://127.0.0.1:${server.addr.port}`;
    for (
      const argv of [
        ["job", "query", "--owner", "team-web"],
        ["job", "stateless", "query", "--owner", "team-web"],
        ["job", "stateless", "list"],
      ]
    ) {
      const r = await cli(url, ...argv);
      const [header, row] = r.out.split("\n").map((l) => l.split("|").map((c) => c.trim()));
      const at = header.indexOf("Owner");
      assert.equal(row[at], "team-web", `${argv.join(" ")}: ${r.out}`);
    }
  } finally {
    await server.shutdown();
  }
});
