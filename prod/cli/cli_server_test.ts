/** CLI error reporting over real HTTP against a real `peloton up`. */
import assert from "node:assert/strict";
import { cli, createDefaultPool, ROOT, startUp, waitFor } from "../testing.ts";
import { runCli } from "./main.ts";

const JOBS = `${ROOT}/scenarios/jobs`;
const STATELESS = "peloton.api.v1alpha.job.stateless.svc.JobService";

Deno.test("CLI against a real server: bad arguments are errors, not crashes or empty tables", async (t) => {
  const dataDir = await Deno.makeTempDir();
  const up = await startUp(dataDir, ["--agents", "1"]);
  try {
    await createDefaultPool(up.url);
    const created = await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/testjob.yaml`);
    assert.equal(created.code, 0, created.err);
    const job = /Job (\S+) created/.exec(created.out)![1];

    await t.step(
      "task get|events|logs: an instance past the end names the job's instance count",
      async () => {
        for (const cmd of ["get", "events", "logs"]) {
          const r = await cli(up.url, "task", cmd, job, "99");
          assert.equal(r.code, 1, `task ${cmd}: ${r.out}`);
          assert.equal(
            r.err,
            `peloton task ${cmd}: instance 99 is out of range: job ${job} has 10 instances`,
          );
        }
        const ok = await cli(up.url, "task", "get", job, "3");
        assert.equal(ok.code, 0, ok.err);
      },
    );

    await t.step(
      "task stop|start|restart -r past the end: an error naming the instances, nothing done",
      async () => {
        const before = JSON.parse((await cli(up.url, "task", "list", job, "-j")).out).result.value;
        const stop = await cli(up.url, "task", "stop", job, "-r", "20:30");
        assert.equal(stop.code, 1, stop.out);
        assert.equal(
          stop.err,
          `peloton task stop: peloton.api.task.TaskManager::Stop: outOfRange: instances 20-29 are out of range: ` +
            `job ${job} has 10 instances`,
        );
        const restart = await cli(up.url, "task", "restart", job, "-r", "9:11");
        assert.equal(restart.code, 1, restart.out);
        assert.equal(
          restart.err,
          `peloton task restart: instance 10 is out of range: job ${job} has 10 instances`,
        );
        const after = JSON.parse((await cli(up.url, "task", "list", job, "-j")).out).result.value;
        const goals = (tasks: Record<string, { runtime: { goalState: string } }>) =>
          Object.values(tasks).map((t) => t.runtime.goalState);
        assert.deepEqual(goals(after), goals(before));
        assert.ok(goals(after).every((g) => g === "SUCCEEDED"));
      },
    );

    await t.step(
      "respool create|validate: a file without resources is an error naming the field",
      async () => {
        for (const argv of [["create", "/X"], ["validate"]]) {
          const r = await cli(up.url, "respool", ...argv, `${JOBS}/testjob.yaml`);
          assert.equal(r.code, 1, `respool ${argv[0]}: ${r.out}`);
          assert.match(
            r.err,
            /testjob\.yaml:\d+: resources: missing, expected a list of cpu, memory, disk and gpu/,
          );
        }
        const dump = await cli(up.url, "respool", "dump", "--format", "json");
        assert.doesNotMatch(dump.out, /"name": "X"/);
      },
    );

    await t.step(
      "update list, volume list, task *: an unknown job is not found, not an empty table",
      async () => {
        const unknown = "00000000-0000-4000-8000-000000000000";
        const commands = [
          ["update", "list", unknown],
          ["volume", "list", unknown],
          ["job", "get", unknown],
          ["job", "status", unknown],
          ["task", "list", unknown],
          ["task", "get", unknown, "0"],
          ["task", "events", unknown, "0"],
          ["task", "logs", unknown, "0"],
        ];
        for (const argv of commands) {
          const r = await cli(up.url, ...argv);
          assert.equal(r.code, 1, `${argv.join(" ")}: ${r.out}`);
          assert.match(r.err, new RegExp(`not-found: job ${unknown} not found`));
        }
        const known = await cli(up.url, "update", "list", job);
        assert.equal(known.code, 0, known.err);
      },
    );

    await t.step(
      "JobManager::Get, TaskManager::List|Get|BrowseSandbox of an unknown job: HTTP 200 with Peloton's in-body notFound",
      async () => {
        const unknown = "00000000-0000-4000-8000-000000000000";
        const notFound = { id: { value: unknown }, message: `job ${unknown} not found` };
        const calls: [string, unknown, unknown][] = [
          ["job.JobManager::Get", { id: { value: unknown } }, { error: { notFound } }],
          ["task.TaskManager::List", { jobId: { value: unknown } }, { notFound }],
          ["task.TaskManager::Get", { jobId: { value: unknown }, instanceId: 0 }, { notFound }],
          ["task.TaskManager::BrowseSandbox", { jobId: { value: unknown }, instanceId: 0 }, {
            error: { notFound },
          }],
        ];
        for (const [procedure, request, answer] of calls) {
          const res = await fetch(`${up.url}/api/v1`, {
            method: "POST",
            headers: { "content-type": "application/json", "rpc-procedure": `peloton.api.${procedure}` },
            body: JSON.stringify(request),
          });
          assert.equal(res.status, 200, procedure);
          assert.deepEqual(await res.json(), answer, procedure);
        }
      },
    );

    await t.step("job query -s: an unknown state names the valid ones", async () => {
      const r = await cli(up.url, "job", "query", "-s", "BOGUS");
      assert.equal(r.code, 2);
      assert.match(r.err, /--states: got "BOGUS", expected one of UNKNOWN, INITIALIZED, PENDING, RUNNING/);
      const ok = await cli(up.url, "job", "query", "-s", "pending,succeeded,running");
      assert.equal(ok.code, 0, ok.err);
      assert.match(ok.out, new RegExp(`${job}\\|\\s+TestPelotonJob_123\\|`), "listed from the job summaries");
      // Under the table: which matches the page holds, of how many, and where the next page starts.
      const all = JSON.parse((await cli(up.url, "job", "query", "-j")).out).pagination.total as number;
      assert.ok(all >= 1);
      const first = await cli(up.url, "job", "query", "-n", "1");
      assert.match(first.out, new RegExp(`^jobs 1-1 of ${all}${all > 1 ? "; next page: -o 1" : ""}$`, "m"));
      const past = await cli(up.url, "job", "query", "-o", String(all));
      assert.match(past.out, new RegExp(`^no jobs at offset ${all}; ${all} match$`, "m"));
      const none = await cli(up.url, "job", "query", "--name", "no-such-job");
      assert.match(none.out, /^no jobs match$/m);
      // -r POOL: the jobs of that pool (its id goes in `respoolID`, as Peloton's CLI sends it).
      const inPool = JSON.parse((await cli(up.url, "job", "query", "-r", "/DefaultResPool", "-j")).out);
      assert.ok(inPool.results.some((j: { id: { value: string } }) => j.id.value === job));
    });

    await t.step("job query and job stateless query --sort PROPS -a ASC|DESC: Peloton's order", async () => {
      const file = await Deno.makeTempFile({ suffix: ".yaml" });
      const ids: string[] = [];
      for (const [name, team] of [["sort-b", "team-a"], ["sort-a", "team-b"], ["sort-c", "team-a"]]) {
        await Deno.writeTextFile(
          file,
          `name: ${name}\nowningTeam: ${team}\nlabels: [{key: sortcheck, value: "yes"}]\ninstanceCount: 1\n` +
            "defaultConfig:\n  resource: {cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10}\n" +
            "  command: {value: 'true'}\n",
        );
        const r = await cli(up.url, "job", "create", "/DefaultResPool", file);
        assert.equal(r.code, 0, r.err);
        ids.push(/Job (\S+) created/.exec(r.out)![1]);
        // Creation times a few ms apart, so that no tie goes by the (random) job ids.
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await Deno.remove(file);
      const v0 = async (...flags: string[]) => {
        const r = await cli(up.url, "job", "query", "-l", "sortcheck=yes", "-j", ...flags);
        assert.equal(r.code, 0, r.err);
        return JSON.parse(r.out).results.map((j: { id: { value: string } }) => ids.indexOf(j.id.value));
      };
      assert.deepEqual(await v0(), [2, 1, 0], "neither flag: the server's order, newest first");
      assert.deepEqual(await v0("--sort", "name", "-a", "ASC"), [1, 0, 2]);
      assert.deepEqual(await v0("--sort", "name"), [2, 0, 1], "--sort alone: DESC, as Peloton's CLI");
      assert.deepEqual(await v0("-a", "asc"), [0, 1, 2], "-a alone: by creation_time, as Peloton's CLI");
      // The owner is the owning team; each key in turn.
      assert.deepEqual(await v0("--sort", "owner,name", "-a", "ASC"), [0, 2, 1]);
      assert.deepEqual(await v0("--sort", "owner,name", "-a", "ASC", "-n", "2", "-o", "1"), [2, 1], "a page");
      assert.deepEqual(await v0("--sort", "owner,creation_time", "-a", "DESC"), [1, 2, 0]);
      const table = await cli(up.url, "job", "query", "-l", "sortcheck=yes", "--sort", "name", "-a", "ASC");
      assert.deepEqual(
        table.out.split("\n").slice(1, 4).map((l) => l.split("|")[1].trim()),
        ["sort-a", "sort-b", "sort-c"],
        table.out,
      );
      const v1Flags = ["-l", "sortcheck=yes", "--sort", "name", "-a", "desc", "-j"];
      const v1 = await cli(up.url, "job", "stateless", "query", ...v1Flags);
      assert.equal(v1.code, 0, v1.err);
      assert.deepEqual(
        JSON.parse(v1.out).records.map((j: { jobId: { value: string } }) => ids.indexOf(j.jobId.value)),
        [2, 0, 1],
      );
      for (const command of [["job", "query"], ["job", "stateless", "query"]]) {
        const bad: [string[], RegExp][] = [
          [
            ["--sort", "instanceId"],
            /--sort: got "instanceId", expected one of creation_time, completion_time, name, owner, state/,
          ],
          [["--sort", "name", "-a", "UP"], /--sortorder: got "UP", expected ASC or DESC/],
        ];
        for (const [args, message] of bad) {
          const r = await cli(up.url, ...command, ...args);
          assert.equal(r.code, 2, `${command.join(" ")} ${args.join(" ")}`);
          assert.match(r.err, message);
        }
      }
    });

    await t.step(
      "task query, cache and refresh: Peloton's flags, checked before anything is sent",
      async () => {
        const q = await cli(
          up.url,
          "task",
          "query",
          job,
          "--sort",
          "instanceId",
          "-a",
          "desc",
          "-n",
          "3",
          "-j",
        );
        assert.equal(q.code, 0, q.err);
        const res = JSON.parse(q.out);
        assert.deepEqual(res.records.map((r: { instanceId: number }) => r.instanceId), [9, 8, 7]);
        assert.deepEqual(res.pagination, { offset: 0, limit: 3, total: 10 });
        const table = await cli(up.url, "task", "query", job, "-o", "8");
        assert.equal(table.code, 0, table.err);
        assert.match(table.out, /^tasks 9-10 of 10$/m);
        const none = await cli(up.url, "task", "query", job, "--hosts", "no-such-host");
        assert.match(none.out, /^tasks 0 of 0$/m);
        const bad: [string[], RegExp][] = [
          [["-s", "BOGUS"], /--states: got "BOGUS", expected task states among UNKNOWN, INITIALIZED/],
          [["--sort", "cpu"], /--sort: got "cpu", expected one of creation_time, host, instanceId/],
          [["--sort", "state", "-a", "UP"], /--sortorder: got "UP", expected ASC or DESC/],
          [["-n", "0"], /--limit: got "0", expected an integer >= 1/],
        ];
        for (const [args, message] of bad) {
          const r = await cli(up.url, "task", "query", job, ...args);
          assert.equal(r.code, 2, args.join(" "));
          assert.match(r.err, message);
        }
        const cache = await cli(up.url, "task", "cache", job, "3");
        assert.equal(cache.code, 0, cache.err);
        assert.equal(JSON.parse(cache.out).runtime.mesosTaskId.value.startsWith(`${job}-3-`), true);
        const refresh = await cli(up.url, "task", "refresh", job, "-r", "0:2");
        assert.equal(refresh.code, 0, refresh.err);
        assert.equal(refresh.out, `Refreshed the tasks of job ${job}`);
      },
    );

    await t.step("update create --batch-percentage takes decimals, as Peloton's double does", async () => {
      const svc = await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/service.yaml`);
      assert.equal(svc.code, 0, svc.err);
      const id = /Job (\S+) created/.exec(svc.out)![1];
      const createUpdate = (percentage: string) =>
        cli(up.url, "update", "create", id, `${JOBS}/service_v2.yaml`, "1", "--batch-percentage", percentage);
      const bad = await createUpdate("120");
      assert.equal(bad.code, 2);
      assert.match(bad.err, /--batch-percentage: got "120", expected a percentage from 0 to 100/);
      const r = await createUpdate("12.5");
      assert.equal(r.code, 0, r.err);
      const list = await cli(up.url, "update", "list", id, "-j");
      assert.equal(JSON.parse(list.out).updateInfo[0].config.batchPercentage, 12.5);
      // --opaque-data on update pause (and create, resume, abort) reaches the update.
      const updateId = /^Update (\S+) created$/.exec(r.out)![1];
      const paused = await cli(up.url, "update", "pause", updateId, "--opaque-data", "held by bridge");
      assert.equal(paused.code, 0, paused.err);
      const after = JSON.parse((await cli(up.url, "update", "list", id, "-j")).out).updateInfo[0];
      assert.deepEqual([after.status.state, after.opaqueData], ["PAUSED", { data: "held by bridge" }]);
    });

    await t.step(
      "update create --update-config: its warnings are printed; where it and the command line both set a " +
        "field they must agree, else nothing is sent; flags set the fields it leaves out",
      async () => {
        const svc = await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/service.yaml`);
        assert.equal(svc.code, 0, svc.err);
        const id = /Job (\S+) created/.exec(svc.out)![1];
        const uc = await Deno.makeTempFile({ suffix: ".yaml" });
        await Deno.writeTextFile(uc, "batchSize: 2\nmaxInstanceRetries: 3\nbogus: 1\n");
        const update = (...argv: string[]) =>
          cli(up.url, "update", "create", id, `${JOBS}/service_v2.yaml`, ...argv, "--update-config", uc);
        const updates = async () =>
          JSON.parse((await cli(up.url, "update", "list", id, "-j")).out).updateInfo;
        try {
          const warning = new RegExp(`^warning: ${uc}:3: bogus: unknown key, ignored \\(known keys: `, "m");
          const clash = await update("3", "--maxattempts", "4", "--start-paused");
          assert.equal(clash.code, 1, clash.out);
          assert.match(clash.err, warning);
          const clashes = clash.err.split("\n").filter((l) => !l.startsWith("warning: "));
          assert.deepEqual(clashes, [
            `peloton update create: batchSize: BATCH-SIZE gives 3, ${uc} gives 2; where the command line and ` +
            "--update-config both set a field they must agree",
            `peloton update create: maxInstanceAttempts: --maxattempts gives 4, ${uc} gives 3; where the ` +
            "command line and --update-config both set a field they must agree",
          ]);
          assert.deepEqual(await updates(), [], "nothing sent");

          const agreed = await update("2", "--maxattempts", "3", "--start-paused");
          assert.equal(agreed.code, 0, agreed.err);
          assert.match(agreed.err, warning);
          const [created] = await updates();
          assert.deepEqual(
            [created.config.batchSize, created.config.maxInstanceAttempts, created.config.startPaused],
            [2, 3, true],
          );
          assert.equal(created.status.state, "PAUSED", "the flag the file leaves out applies");
        } finally {
          await Deno.remove(uc);
        }
      },
    );

    await t.step("job rolling-restart: a RESTART workflow of BATCH-SIZE instances at a time", async () => {
      const svc = await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/service.yaml`);
      assert.equal(svc.code, 0, svc.err);
      const id = /Job (\S+) created/.exec(svc.out)![1];
      const r = await cli(up.url, "job", "rolling-restart", id, "3");
      assert.equal(r.code, 0, r.err);
      const [workflow] = JSON.parse((await cli(up.url, "update", "list", id, "-j")).out).updateInfo;
      assert.equal(workflow.type, "RESTART");
      assert.equal(workflow.config.batchSize, 3, "the batch size reached the job manager (restartConfig)");
    });

    await t.step(
      "update create JOB CONFIG BATCH-SIZE RESPOOL: Peloton's form, the pool must be the job's",
      async () => {
        const other = await Deno.makeTempFile({ suffix: ".yaml" });
        const pool = (await Deno.readTextFile(`${JOBS}/default_respool.yaml`)).replace(
          "name: DefaultResPool",
          "name: Other",
        );
        await Deno.writeTextFile(other, pool);
        const made = await cli(up.url, "respool", "create", "/Other", other);
        await Deno.remove(other);
        assert.equal(made.code, 0, made.err);
        const svc = await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/service.yaml`);
        const id = /Job (\S+) created/.exec(svc.out)![1];
        const update = (pool: string) =>
          cli(up.url, "update", "create", id, `${JOBS}/service_v2.yaml`, "2", pool);
        const moved = await update("/Other");
        assert.equal(moved.code, 1, moved.out);
        assert.match(moved.err, /jobConfig\.respoolID: cannot move a job to another pool in an update/);
        const missing = await update("/Nowhere");
        assert.equal(missing.code, 1, missing.out);
        assert.match(missing.err, /\/Nowhere/);
        const ok = await update("/DefaultResPool");
        assert.equal(ok.code, 0, ok.err);
        assert.match(ok.out, /^Update \S+ created$/);
      },
    );

    await t.step(
      "job stop --owner/-l: Peloton's form stops every active job matching, once confirmed",
      async () => {
        const file = await Deno.makeTempFile({ suffix: ".yaml" });
        const create = async (owner: string, labels: string) => {
          await Deno.writeTextFile(
            file,
            `name: stop-${owner}\nowner: ${owner}\nowningTeam: team-${owner}\nlabels: ${labels}\ninstanceCount: 1\n` +
              "defaultConfig:\n  resource: {cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10}\n" +
              "  command: {value: 'sleep 60'}\n",
          );
          const r = await cli(up.url, "job", "create", "/DefaultResPool", file);
          assert.equal(r.code, 0, r.err);
          return /Job (\S+) created/.exec(r.out)![1];
        };
        const labelled = await create("stopper", "[{key: team, value: x}]");
        const plain = await create("stopper", "[]");
        const other = await create("keeper", "[{key: team, value: x}]");
        await Deno.remove(file);
        const goal = async (id: string) =>
          JSON.parse((await cli(up.url, "job", "status", id, "-j")).out).goalState;

        const none = await cli(up.url, "job", "stop");
        assert.equal(none.code, 2);
        assert.match(none.err, /--owner: required without JOB; give JOB, or --owner O/);
        // --owner is the owning team, as Peloton's Query matches it; the job's owner field is not.
        const byOwnerField = await cli(up.url, "job", "stop", "--owner", "stopper", "-f");
        assert.equal(byOwnerField.out, "No matching job(s) found");
        const unconfirmed = await cli(up.url, "job", "stop", "--owner", "team-stopper");
        assert.equal(unconfirmed.code, 1);
        for (const id of [labelled, plain]) assert.match(unconfirmed.out, new RegExp(id), "listed");
        assert.match(unconfirmed.err, /nothing stopped: confirm on a terminal, or give -f\/--force/);
        assert.deepEqual([await goal(labelled), await goal(plain)], ["SUCCEEDED", "SUCCEEDED"]);

        const byBoth = await cli(up.url, "job", "stop", "--owner", "team-stopper", "-l", "team=x", "-f");
        assert.equal(byBoth.code, 0, byBoth.err);
        assert.match(byBoth.out, new RegExp(`Job ${labelled} stopping: 1 instances`));
        assert.deepEqual([await goal(labelled), await goal(plain), await goal(other)], [
          "KILLED",
          "SUCCEEDED",
          "SUCCEEDED",
        ]);
        // Confirmed on the terminal: the question says how many jobs.
        const asked: string[] = [], out: string[] = [];
        const code = await runCli(["job", "stop", "--owner", "team-stopper", "-j", "-m", up.url], {
          out: (l) => out.push(l),
          err: (l) => out.push(l),
          env: () => undefined,
          confirm: (q) => (asked.push(q), Promise.resolve(true)),
        });
        assert.equal(code, 0, out.join("\n"));
        assert.deepEqual(asked, ["Stop this job?"]);
        assert.deepEqual(JSON.parse(out.at(-1)!), {
          stopped: [{ id: plain, instances: 1 }],
          failed: [],
          matched: 1,
        });

        // JOB with --owner/-l, as Peloton's JobStopAction: --owner is the owning team, any one label is enough,
        // and a job that does not match is left alone with "No matching job found", exit 0.
        for (const args of [["--owner", "keeper"], ["--owner", "team-keeper", "-l", "team=y"]]) {
          const mismatch = await cli(up.url, "job", "stop", other, ...args);
          assert.equal(mismatch.code, 0, mismatch.err);
          assert.equal(mismatch.out, "No matching job found");
        }
        assert.equal(await goal(other), "SUCCEEDED");
        const byId = await cli(up.url, "job", "stop", other, "--owner", "team-keeper", "-l", "team=y,team=x");
        assert.equal(byId.code, 0, byId.err);
        assert.equal(await goal(other), "KILLED");
        // No active job of that owner with those labels: Peloton's message, exit 0, nothing stopped.
        const nothing = await cli(up.url, "job", "stop", "--owner", "team-keeper", "-l", "team=x", "-f");
        assert.equal(nothing.code, 0, nothing.err);
        assert.equal(nothing.out, "No matching job(s) found");
        const nothingJson = await cli(
          up.url,
          "job",
          "stop",
          "--owner",
          "team-keeper",
          "-l",
          "team=x",
          "-f",
          "-j",
        );
        assert.deepEqual(JSON.parse(nothingJson.out), { stopped: [], failed: [], matched: 0 });
        // Stopped, `other` ends KILLED; stopping it again leaves it alone, as Peloton's CLI does.
        await waitFor(
          "the stopped job to end",
          async () =>
            JSON.parse((await cli(up.url, "job", "status", other, "-j")).out).state === "KILLED" || undefined,
        );
        const again = await cli(up.url, "job", "stop", other);
        assert.equal(again.code, 0, again.err);
        assert.equal(again.out, "Job is in terminal state: KILLED");
      },
    );

    await t.step(
      "job stateless get --summaryonly|--jobversion: Peloton's GetJob options reach the server",
      async () => {
        const full = await cli(up.url, "job", "stateless", "get", job, "-j");
        assert.equal(full.code, 0, full.err);
        const version = JSON.parse(full.out).jobInfo.status.version.value;

        const summary = await cli(up.url, "job", "stateless", "get", job, "--summaryonly", "-j");
        assert.equal(summary.code, 0, summary.err);
        const s = JSON.parse(summary.out);
        assert.deepEqual(Object.keys(s), ["summary"]);
        assert.equal(s.summary.jobId.value, job);
        const summaryYaml = await cli(up.url, "job", "stateless", "get", job, "--summaryonly");
        assert.equal(summaryYaml.code, 0, summaryYaml.err);
        assert.match(summaryYaml.out, new RegExp(`^jobId:\n  value: ${job}$`, "m"));

        const atVersion = await cli(up.url, "job", "stateless", "get", job, "--jobversion", version, "-j");
        assert.equal(atVersion.code, 0, atVersion.err);
        const v = JSON.parse(atVersion.out);
        assert.deepEqual(Object.keys(v.jobInfo).sort(), ["jobId", "spec"]);
        assert.equal(v.jobInfo.spec.name, JSON.parse(full.out).jobInfo.spec.name);

        const missing = await cli(up.url, "job", "stateless", "get", job, "--jobversion", "99-1-1");
        assert.equal(missing.code, 1);
        assert.match(missing.err, /not-found: version: job \S+ has no config version 99$/);
      },
    );

    await t.step(
      "job stateless workflow pause|resume|abort: no workflow is an error naming the job",
      async () => {
        const before = JSON.parse((await cli(up.url, "job", "stateless", "get", job, "-j")).out);
        for (const word of ["pause", "resume", "abort"]) {
          const r = await cli(up.url, "job", "stateless", "workflow", word, job);
          assert.equal(r.code, 1, `workflow ${word}: ${r.out}`);
          assert.match(r.err, new RegExp(`not-found: job ${job} has no active workflow$`));
        }
        const after = JSON.parse((await cli(up.url, "job", "stateless", "get", job, "-j")).out);
        assert.equal(after.jobInfo.status.version.value, before.jobInfo.status.version.value);
      },
    );

    await t.step(
      "job rolling-*|stateless restart|start|stop of a batch job: Peloton's InvalidArgument, nothing done",
      async () => {
        const status = async () => JSON.parse((await cli(up.url, "job", "stateless", "get", job, "-j")).out);
        const before = await status();
        const commands: [string, string[], string, string][] = [
          ["job rolling-restart", [job, "1"], "peloton.api.job.JobManager::Restart", "RESTART"],
          ["job rolling-start", [job, "1"], "peloton.api.job.JobManager::Start", "START"],
          ["job rolling-stop", [job, "1"], "peloton.api.job.JobManager::Stop", "STOP"],
          ["job stateless restart", [job], `${STATELESS}::RestartJob`, "RESTART"],
          ["job stateless start", [job], `${STATELESS}::StartJob`, "START"],
          ["job stateless stop", [job], `${STATELESS}::StopJob`, "STOP"],
        ];
        for (const [name, args, procedure, type] of commands) {
          const r = await cli(up.url, ...name.split(" "), ...args);
          assert.equal(r.code, 1, `${name}: ${r.out}`);
          assert.equal(
            r.err,
            `peloton ${name}: ${procedure}: invalid-argument: ${type} supported only for service jobs: ` +
              `job ${job} is a BATCH job`,
          );
        }
        // What a call could have changed (the job's tasks run on meanwhile): its version, goal and workflow.
        const asked = (s: { jobInfo: { status: Record<string, unknown> }; workflowInfo?: unknown }) => {
          const { version, desiredState, workflowId } = s.jobInfo.status;
          return { version, desiredState, workflowId, workflowInfo: s.workflowInfo };
        };
        assert.deepEqual(asked(await status()), asked(before));
      },
    );

    await t.step("job update to a smaller instanceCount says which instances it stops", async () => {
      const created = await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/testjob.yaml`);
      const id = /Job (\S+) created/.exec(created.out)![1];
      const file = await Deno.makeTempFile({ suffix: ".yaml" });
      await Deno.writeTextFile(
        file,
        (await Deno.readTextFile(`${JOBS}/testjob.yaml`)).replace("instancecount: 10", "instancecount: 7"),
      );
      const r = await cli(up.url, "job", "update", id, file);
      await Deno.remove(file);
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out, `job ${id} now has 7 instances; stopping instances 7-9, past the new count`);
    });

    await t.step(
      "job stateless list|query: v1alpha summaries, filtered and paged by the server",
      async () => {
        const list = await cli(up.url, "job", "stateless", "list", "-j");
        assert.equal(list.code, 0, list.err);
        const listed = JSON.parse(list.out).jobs as { jobId: { value: string }; name: string }[];
        assert.ok(listed.some((j) => j.jobId.value === job && j.name === "TestPelotonJob_123"), list.out);
        const table = await cli(up.url, "job", "stateless", "list");
        assert.match(table.out, /^\s*ID\|\s+Name\|\s+Owner\|\s+Instances\|\s+State\|/);
        assert.match(table.out, new RegExp(`${job}\\|\\s+TestPelotonJob_123\\|`));

        const query = (...args: string[]) => cli(up.url, "job", "stateless", "query", "-j", ...args);
        const ids = async (...args: string[]) => {
          const r = await query(...args);
          assert.equal(r.code, 0, r.err);
          return (JSON.parse(r.out).records as { jobId: { value: string } }[]).map((j) => j.jobId.value);
        };
        assert.ok((await ids("--name", "pelotonjob", "-l", "testKey0=testVal0")).includes(job));
        assert.deepEqual(await ids("--name", "no-such-job"), []);
        assert.deepEqual(await ids("-r", "/DefaultResPool", "-n", "1", "-o", "0").then((x) => x.length), 1);
        const paged = await query("-n", "1", "-o", "0");
        assert.equal(JSON.parse(paged.out).pagination.limit, 1);
        const total = JSON.parse(paged.out).pagination.total as number;
        const pagedTable = await cli(up.url, "job", "stateless", "query", "-n", "1", "-o", "0");
        assert.match(
          pagedTable.out,
          new RegExp(`^jobs 1-1 of ${total}${total > 1 ? "; next page: -o 1" : ""}$`, "m"),
        );
        const badState = await query("-s", "NOPE");
        assert.equal(badState.code, 2);
        assert.match(badState.err, /--states: got "NOPE", expected one of /);
        const badPool = await query("-r", "/NoSuchPool");
        assert.equal(badPool.code, 1, badPool.out);
        assert.match(badPool.err, /spec\.respool/);
      },
    );

    await t.step(
      "task list and get say why a PENDING task waits: here, a GPU its pool may never hold",
      async () => {
        const gpu = await cli(
          up.url,
          "job",
          "create",
          "/DefaultResPool",
          `${ROOT}/core/model/testdata/peloton/example/testjob_gpu_mesos_containerizer.yaml`,
        );
        assert.equal(gpu.code, 0, gpu.err);
        const id = /Job (\S+) created/.exec(gpu.out)![1];
        const why =
          "the task asks for more than resource pool /DefaultResPool may ever hold: gpu 1 (its limit: 0); " +
          "it will not be admitted unless the pool's limit is raised";
        // The job manager enqueues the task at once; it stays PENDING.
        await waitFor("the GPU task PENDING with its reason", async () => {
          const list = JSON.parse((await cli(up.url, "task", "list", id, "-j")).out).result.value;
          return list["0"].runtime.state === "PENDING" && list["0"].runtime.message === why
            ? true
            : undefined;
        });
        const table = await cli(up.url, "task", "get", id, "0");
        assert.equal(table.code, 0, table.err);
        assert.ok(table.out.includes(why), table.out);
      },
    );

    await t.step("host maintenance start: a host already DOWN is an error naming its state", async () => {
      const hosts = JSON.parse((await cli(up.url, "host", "query", "-j")).out).hostInfos;
      const host = hosts[0].hostname as string;
      const start = await cli(up.url, "host", "maintenance", "start", host);
      assert.equal(start.code, 0, start.err);
      try {
        await waitFor("the host to drain and its machine to go down", async () => {
          const q = await cli(up.url, "host", "query", "-s", "HOST_STATE_DOWN", "-j");
          return JSON.parse(q.out).hostInfos.length === 1 || undefined;
        }, 60_000);
      } catch (e) {
        // What still holds the host, for whoever reads the failure (once seen under a loaded CI machine).
        const hostsNow = (await cli(up.url, "host", "query")).out;
        const active = (await cli(up.url, "resmgr", "tasks", "active")).out;
        throw new Error(`${(e as Error).message}
hosts:
${hostsNow}
active tasks:
${active}`);
      }
      const again = await cli(up.url, "host", "maintenance", "start", host);
      assert.equal(again.code, 1, again.out);
      assert.match(
        again.err,
        new RegExp(`failed-precondition: cannot start maintenance on host ${host}: it is HOST_STATE_DOWN`),
      );
      const done = await cli(up.url, "host", "maintenance", "complete", host);
      assert.equal(done.code, 0, done.err);
    });
  } finally {
    await up.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
