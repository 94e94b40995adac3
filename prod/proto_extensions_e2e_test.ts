/**
 * Replies of a real `peloton up` follow Peloton's protos unless the call asks for `Peloton-Extensions: true`:
 * every path of prod/proto_extensions.ts's table is checked both ways (a strict proto3 JSON reader refuses a
 * whole reply with a field it does not know).
 */
import assert from "node:assert/strict";
import { routeProcedure } from "../core/api/procedures.ts";
import { HOST_SERVICE } from "../core/hostmgr/host_api.ts";
import { JOB_SERVICE, TASK_SERVICE } from "../core/jobmgr/job_api.ts";
import { STATELESS_SERVICE } from "../core/jobmgr/stateless_api.ts";
import { UPDATE_SERVICE } from "../core/jobmgr/update_api.ts";
import { WATCH_SERVICE } from "../core/jobmgr/watch.ts";
import { RESPOOL_SERVICE } from "../core/resmgr/respool_api.ts";
import { RESMGR_SERVICE } from "../core/resmgr/task_inspect.ts";
import { EXTENSIONS, shapeReply, WARNINGS_HEADER } from "./proto_extensions.ts";
import { apiCall, createStatelessJob, waitFor, withUp } from "./testing.ts";

const JOB = JOB_SERVICE, TASK = TASK_SERVICE, UPDATE = UPDATE_SERVICE, STATELESS = STATELESS_SERVICE;
const RESPOOL = RESPOOL_SERVICE, RESMGR_PRIVATE = RESMGR_SERVICE, HOST = HOST_SERVICE;
const WATCH = `${WATCH_SERVICE}::Watch`;

type Body = Record<string, unknown>;

/** The values at `path` (a table path: `a.b`, `list[].c`) of `body`, wherever it reaches. */
function valuesAt(body: unknown, path: string): unknown[] {
  let here: unknown[] = [body];
  for (const step of path.split(".")) {
    const list = step.endsWith("[]"), key = list ? step.slice(0, -2) : step;
    const next: unknown[] = [];
    for (const v of here) {
      if (!v || typeof v !== "object" || Array.isArray(v) || !(key in v)) continue;
      const inner = (v as Body)[key];
      if (inner === undefined) continue;
      if (list) next.push(...(Array.isArray(inner) ? inner : []));
      else next.push(inner);
    }
    here = next;
  }
  return here;
}

Deno.test("every procedure the extension table names is a canonical one, so that each alias is covered", () => {
  for (const procedure of Object.keys(EXTENSIONS)) {
    assert.equal(routeProcedure(procedure)?.procedure, procedure);
  }
});

Deno.test("shapeReply cuts a table path without changing the body it was given", () => {
  const body = {
    orphanTasks: [{
      id: { value: "j-0" },
      state: "RUNNING",
      respool: "/p",
      held: true,
      kind: "K",
      reason: "r",
    }],
  };
  const shaped = shapeReply(`${RESMGR_PRIVATE}::GetOrphanTasks`, body, false);
  assert.deepEqual(shaped, { orphanTasks: [{ id: { value: "j-0" } }] });
  assert.equal(body.orphanTasks[0].kind, "K");
  assert.equal(shapeReply(`${RESMGR_PRIVATE}::GetOrphanTasks`, body, true), body);
});

Deno.test({
  name: "replies carry only Peloton's fields unless the call sends Peloton-Extensions: true",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withUp("pj-ext-", async (up) => {
      /** Procedure → whether each of its table paths was seen with the header (and never without). */
      const seen = new Map<string, Set<string>>();
      const post = async (procedure: string, body: unknown, extensions: boolean) => {
        const res = await apiCall(up.url, procedure, body, { extensions });
        assert.equal(res.status, 200, `${procedure}: ${res.status}`);
        return { json: await res.json() as Body, headers: res.headers };
      };
      /** Calls `procedure` both ways (the second call's `body` may differ, for writes), checking its paths. */
      const both = async (procedure: string, plain: unknown, extended: unknown = plain, as = procedure) => {
        const canonical = routeProcedure(as)!.procedure;
        const paths = EXTENSIONS[canonical];
        const without = await post(as, plain, false);
        for (const path of paths) {
          assert.deepEqual(valuesAt(without.json, path), [], `${as} without the header: ${path}`);
        }
        const withIt = await post(as, extended, true);
        for (const path of paths) {
          if (valuesAt(withIt.json, path).length) {
            (seen.get(canonical) ?? seen.set(canonical, new Set()).get(canonical)!).add(path);
          }
        }
        return { without, withIt };
      };

      const pool =
        (await post(`${RESPOOL}::LookupResourcePoolID`, { path: { value: "/DefaultResPool" } }, false))
          .json.id as Body;
      const task = {
        resource: { cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10 },
        command: {
          shell: true,
          value: "sleep 300",
          environment: { variables: [{ name: "A", value: "1", type: "VALUE" }] },
        },
      };
      const config = (name: string, type = "BATCH", instanceCount = 2) => ({
        name,
        type,
        instanceCount,
        respoolID: pool,
        defaultConfig: task,
        // A key no config has: dropped, with a warning.
        someKeyFarFromAnyOther: 1,
      });

      // v0 Create: its warnings leave the body, and go in Peloton-Warnings either way.
      const created = await both(`${JOB}::Create`, { config: config("ext-a") }, { config: config("ext-b") });
      for (const { json, headers } of [created.without, created.withIt]) {
        const warnings = JSON.parse(headers.get(WARNINGS_HEADER) ?? "[]") as string[];
        assert.ok(warnings.length > 0, "the warnings are in Peloton-Warnings");
        assert.deepEqual(Object.keys(json).sort(), json.warnings ? ["jobId", "warnings"] : ["jobId"]);
      }
      assert.deepEqual(
        created.withIt.json.warnings,
        JSON.parse(created.withIt.headers.get(WARNINGS_HEADER)!),
      );
      const job = created.without.json.jobId as Body;
      const job2 = created.withIt.json.jobId as Body;
      await waitFor("the job's tasks placed", async () => {
        const r = await post(`${TASK}::Get`, { jobId: job, instanceId: 0 }, true);
        const runtime = ((r.json.result as Body | undefined)?.runtime ?? {}) as Body;
        return runtime.host ? true : undefined;
      }, 30_000);

      await both(`${JOB}::Get`, { id: job });
      // Under another of its names too.
      await both(`${JOB}::Get`, { id: job }, { id: job }, "JobManager.Get");
      await both(`${JOB}::Get`, { id: job }, { id: job }, "peloton.api.v0.job.JobManager::Get");
      await both(`${JOB}::Query`, { spec: {} });
      await both(`${JOB}::GetCache`, { id: job });
      // Resized (3, then 1 instance): the shrink names what it removes.
      await both(
        `${JOB}::Update`,
        { id: job2, config: { ...config("ext-b", "BATCH", 3), changeLog: { version: 1 } } },
        { id: job2, config: { ...config("ext-b", "BATCH", 1), changeLog: { version: 2 } } },
      );
      await both(`${TASK}::Get`, { jobId: job, instanceId: 9 });
      await both(`${TASK}::Restart`, { jobId: job, ranges: [{ from: 5, to: 9 }] });
      await both(`${TASK}::Stop`, { jobId: job, ranges: [{ from: 5, to: 9 }] });
      await both(`${TASK}::Start`, { jobId: job, ranges: [{ from: 5, to: 9 }] });
      await both(`${TASK}::BrowseSandbox`, { jobId: job, instanceId: 0 });
      await both(`${TASK}::BrowseSandbox`, { jobId: job, instanceId: 9 });

      // A service job's update through the v0 UpdateService.
      const service = (await post(`${JOB}::Create`, { config: config("ext-s", "SERVICE") }, false)).json
        .jobId as Body;
      const update = (await post(`${UPDATE}::CreateUpdate`, {
        jobId: service,
        jobConfig: { ...config("ext-s", "SERVICE", 3), changeLog: { version: 1 } },
        updateConfig: { batchSize: 1 },
      }, false)).json.updateID as Body;
      // Ended, so that it has a completion time.
      await waitFor("the update done", async () => {
        const info = (await post(`${UPDATE}::GetUpdate`, { updateId: update }, true)).json.updateInfo as Body;
        return (info.status as Body).state === "SUCCEEDED" ? true : undefined;
      }, 60_000);
      await both(`${UPDATE}::GetUpdate`, { updateId: update });
      await both(`${UPDATE}::ListUpdates`, { jobID: service });

      // v1alpha: a restart, a replace and the reads that show their workflow.
      const { job: a } = await createStatelessJob(up.url);
      const { job: b } = await createStatelessJob(up.url);
      const { job: c } = await createStatelessJob(up.url);
      const getJob = async (id: string) =>
        (await post(`${STATELESS}::GetJob`, { jobId: { value: id } }, true)).json;
      const versionOf = async (
        id: string,
      ) => ((((await getJob(id)).jobInfo as Body).status as Body).version as Body);
      const createDone = (id: string) =>
        waitFor(`job ${id}'s rolling create done`, async () => {
          const state = (((await getJob(id)).workflowInfo as Body | undefined)?.status as Body | undefined)
            ?.state;
          return state === "WORKFLOW_STATE_SUCCEEDED" ? true : undefined;
        }, 60_000);
      await createDone(a), await createDone(b);
      await both(
        `${STATELESS}::RestartJob`,
        { jobId: { value: a }, version: await versionOf(a) },
        { jobId: { value: b }, version: await versionOf(b) },
      );
      const spec = (await getJob(c)).jobInfo as Body;
      // The second one paused, so that the job's reads show it in progress.
      const replace = async (startPaused: boolean) => ({
        jobId: { value: c },
        version: await versionOf(c),
        spec: spec.spec,
        updateSpec: { batchSize: 1, startPaused },
      });
      const replaced = await post(`${STATELESS}::ReplaceJob`, await replace(false), false);
      assert.equal(replaced.json.workflowId, undefined);
      // A watch's lines: the job summaries a change sends (the second replace, made while both watch).
      const watchLines = async (extensions: boolean) => {
        const res = await apiCall(up.url, WATCH, { statelessJobFilter: { jobIds: [{ value: c }] } }, {
          extensions,
          headers: { "context-ttl-ms": "3000" },
        });
        const text = await res.text();
        return text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Body);
      };
      const watching = Promise.all([watchLines(false), watchLines(true)]);
      await new Promise((r) => setTimeout(r, 500));
      const replacedWith = await post(`${STATELESS}::ReplaceJob`, await replace(true), true);
      assert.ok(replacedWith.json.workflowId, "ReplaceJob's workflowId with the header");
      seen.set(`${STATELESS}::ReplaceJob`, new Set(["workflowId"]));
      const [plainLines, extendedLines] = await watching;
      const path = EXTENSIONS[WATCH][0];
      assert.ok(plainLines.some((l) => valuesAt(l, "statelessJobs[]").length), JSON.stringify(plainLines));
      assert.deepEqual(plainLines.flatMap((l) => valuesAt(l, path)), []);
      assert.ok(extendedLines.some((l) => valuesAt(l, path).length), JSON.stringify(extendedLines));
      seen.set(WATCH, new Set([path]));
      await both(`${STATELESS}::GetJob`, { jobId: { value: c } });
      await both(`${STATELESS}::GetJob`, { jobId: { value: c }, summaryOnly: true });
      await both(`${STATELESS}::QueryJobs`, { spec: {} });
      await both(`${STATELESS}::ListJobs`, {});
      await both(`${STATELESS}::GetJobCache`, { jobId: { value: c } });
      await both("peloton.private.jobmgr.JobManagerService::GetJobCache", { jobId: { value: c } });
      await both(`${STATELESS}::ListJobWorkflows`, { jobId: { value: c } });

      await both(`${RESPOOL}::GetResourcePool`, { id: pool, includeChildPools: true });
      await both(`${RESPOOL}::GetResourcePool`, { id: { value: "root" }, includeChildPools: true });
      await both(`${RESPOOL}::Query`, {});
      await both(`${RESMGR_PRIVATE}::GetActiveTasks`, {});
      await both(`${HOST}::QueryHosts`, {});

      // Every path of the table was seen with the header, but GetOrphanTasks' (no orphan to make here:
      // see the shapeReply test above).
      const missing = Object.entries(EXTENSIONS)
        .filter(([p]) => p !== `${RESMGR_PRIVATE}::GetOrphanTasks`)
        .flatMap(([p, paths]) =>
          paths.filter((path) => !seen.get(p)?.has(path)).map((path) => `${p} ${path}`)
        );
      assert.deepEqual(missing, []);
    });
  },
});
