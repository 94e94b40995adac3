/**
 * Peloton's CLI flags against a real `peloton up`: `update create` and `job stateless replace` refuse to
 * abort a running update unless -o/--override, `job stop --progress` waits for the tasks to end, `pod logs
 * -p`, `pod events-v1alpha -p` and `pod get --currentonly` pick runs, and `job query -k/-d` filter.
 */
import assert from "node:assert/strict";
import { cli, createStatelessJob, STATELESS_SPECS as SPECS, waitFor, withUp } from "../testing.ts";

const RESOURCE = "resource: { cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10 }";

/** A service of 2 instances printing `label` and running until stopped. */
const service = (label: string) =>
  `name: flags-service\ntype: SERVICE\nowningTeam: team-flags\ninstanceCount: 2\nsla: { priority: 1 }\n` +
  `defaultConfig:\n  ${RESOURCE}\n  killGracePeriodSeconds: 1\n` +
  `  command: { shell: true, value: 'echo ${label}; while true; do sleep 1; done' }\n`;

/** A batch task that prints its run's id and fails twice (its `maxFailures`): runs 1 and 2, both FAILED. */
const TWO_RUNS = `name: flags-keywordzebra\ninstanceCount: 1\nsla: { priority: 1 }\n` +
  `defaultConfig:\n  ${RESOURCE}\n  restartPolicy: { maxFailures: 2 }\n` +
  `  command: { shell: true, value: 'echo "run $MESOS_TASK_ID"; exit 3' }\n`;

/** Writes `text` to `dir/name` and creates a job of it in /DefaultResPool; its id. */
async function createJob(url: string, dir: string, name: string, text: string): Promise<string> {
  await Deno.writeTextFile(`${dir}/${name}`, text);
  const r = await cli(url, "job", "create", "/DefaultResPool", `${dir}/${name}`);
  assert.equal(r.code, 0, r.err);
  return /Job (\S+) created/.exec(r.out)![1];
}

Deno.test({
  name: "Peloton's flags against a real server: -o/--override, --progress, -p/--id, --currentonly, -k, -d",
  sanitizeResources: false,
  async fn(t) {
    await withUp("peloton-flags-", async (up, dir) => {
      await t.step(
        "update create refuses to abort a running update, changing nothing; -o aborts it",
        async () => {
          const job = await createJob(up.url, dir, "v1.yaml", service("v1"));
          for (const v of ["v2", "v3"]) await Deno.writeTextFile(`${dir}/${v}.yaml`, service(v));
          const update = (v: string, ...flags: string[]) =>
            cli(up.url, "update", "create", job, `${dir}/${v}.yaml`, "1", "/DefaultResPool", ...flags);
          const updates = async () =>
            (JSON.parse((await cli(up.url, "update", "list", job, "-j")).out).updateInfo as {
              updateId: { value: string };
              status: { state: string };
            }[]).map((u) => [u.updateId.value, u.status.state]);
          const first = await update("v2", "--start-paused");
          assert.equal(first.code, 0, first.err);
          const paused = /^Update (\S+) created$/.exec(first.out)![1];
          assert.deepEqual(await updates(), [[paused, "PAUSED"]]);

          const refused = await update("v3");
          assert.equal(refused.code, 1, refused.out);
          assert.equal(
            refused.err,
            `peloton update create: cannot create a new update as another update is already running: update ` +
              `${paused} of job ${job} is PAUSED (0 instances done, 2 remaining); give -o/--override to abort ` +
              `it and start this one, or abort it with \`peloton update abort ${paused}\``,
          );
          assert.deepEqual(await updates(), [[paused, "PAUSED"]], "nothing changed");

          const override = await update("v3", "-o", "--start-paused");
          assert.equal(override.code, 0, override.err);
          const second = /^Update (\S+) created$/.exec(override.out)![1];
          assert.deepEqual(await updates(), [[second, "PAUSED"], [paused, "ABORTED"]]);
        },
      );

      await t.step(
        "job stateless replace and patch: the same refusal and -o/--override; a rolling create is no update to refuse over",
        async () => {
          const { job } = await createStatelessJob(up.url, undefined, "1");
          const version = async () =>
            JSON.parse((await cli(up.url, "job", "stateless", "get", job, "--summaryonly", "-j")).out).summary
              .status.version.value as string;
          const workflows = async () =>
            JSON.parse((await cli(up.url, "job", "stateless", "list-updates", job, "-j")).out).workflowInfos
              .length as number;
          const replace = (...flags: string[]) =>
            cli(
              up.url,
              "job",
              "stateless",
              "replace",
              job,
              `${SPECS}/test_update_stateless_job_spec.yaml`,
              "1",
              "--start-paused",
              ...flags,
            );
          // Right after the create (a pod at a time), its rolling start runs: an update takes it over, unrefused.
          const [create] = JSON.parse((await cli(up.url, "update", "list", job, "-j")).out).updateInfo;
          assert.deepEqual([create.type, create.status.state], ["START", "ROLLING_FORWARD"]);
          const first = await replace();
          assert.equal(first.code, 0, first.err);
          const [at, count] = [await version(), await workflows()];
          const refused = await replace();
          assert.equal(refused.code, 1, refused.out);
          assert.match(
            refused.err,
            new RegExp(
              `^peloton job stateless replace: cannot create a new update as another update is already ` +
                `running: update \\S+ of job ${job} is PAUSED .*; give -o/--override to abort it`,
            ),
          );
          assert.deepEqual([await version(), await workflows()], [at, count], "nothing changed");
          // A bad argument is still a usage error, checked before the running update is.
          const bad = await replace("--maxInstanceRetries", "x");
          assert.equal(bad.code, 2, bad.out);
          const override = await replace("--override");
          assert.equal(override.code, 0, override.err);
          assert.equal(await workflows(), count + 1);
          // A patch is an update too: refused the same way over the one now paused, unless overridden.
          const patchFile = await Deno.makeTempFile({ suffix: ".yaml" });
          await Deno.writeTextFile(patchFile, "description: patched\n");
          const patch = (...flags: string[]) =>
            cli(up.url, "job", "stateless", "patch", job, patchFile, "1", "--start-paused", ...flags);
          const [at2, count2] = [await version(), await workflows()];
          const refusedPatch = await patch();
          assert.equal(refusedPatch.code, 1, refusedPatch.out);
          assert.match(
            refusedPatch.err,
            new RegExp(
              `^peloton job stateless patch: cannot create a new update as another update is already ` +
                `running: update \\S+ of job ${job} is PAUSED .*; give -o/--override to abort it`,
            ),
          );
          assert.deepEqual([await version(), await workflows()], [at2, count2], "nothing changed");
          const overridePatch = await patch("-o");
          assert.equal(overridePatch.code, 0, overridePatch.err);
          assert.equal(await workflows(), count2 + 1);
          await Deno.remove(patchFile);
        },
      );

      await t.step("job stop --progress returns once every task has ended, saying so", async () => {
        const job = await createJob(up.url, dir, "stop.yaml", service("stopping"));
        await waitFor("both tasks running", async () => {
          const stats = JSON.parse((await cli(up.url, "job", "status", job, "-j")).out).taskStats;
          return stats?.RUNNING === 2 ? true : undefined;
        });
        const r = await cli(up.url, "job", "stop", job, "--progress");
        assert.equal(r.code, 0, r.err);
        assert.equal(r.out.split("\n").at(-1), `Job ${job} stopped, total_tasks:2 terminated_tasks:2`);
        const status = JSON.parse((await cli(up.url, "job", "status", job, "-j")).out);
        const stats = Object.entries(status.taskStats as Record<string, number>).filter(([, n]) => n > 0);
        assert.ok(
          stats.every(([s]) => ["KILLED", "SUCCEEDED", "FAILED", "LOST"].includes(s)),
          `every task ended: ${JSON.stringify(stats)}`,
        );
      });

      await t.step(
        "pod logs|events-v1alpha -p/--id pick an earlier run; pod get --currentonly the current one",
        async () => {
          const job = await createJob(up.url, dir, "runs.yaml", TWO_RUNS);
          const [name, run1, run2] = [`${job}-0`, `${job}-0-1`, `${job}-0-2`];
          await waitFor("the second run to fail", async () => {
            const r = await cli(up.url, "task", "get", job, "0", "-j");
            const runtime = r.code === 0 ? JSON.parse(r.out).result.runtime : undefined;
            return runtime?.mesosTaskId?.value === run2 && runtime.state === "FAILED" ? true : undefined;
          });
          for (const flag of ["-p", "--id"]) {
            const logs = await cli(up.url, "pod", "logs", name, flag, run1);
            assert.equal(logs.code, 0, logs.err);
            assert.equal(logs.out, `run ${run1}`, `${flag}: the first run's stdout`);
          }
          assert.equal((await cli(up.url, "pod", "logs", name)).out, `run ${run2}`);
          const events = await cli(up.url, "pod", "events-v1alpha", name, "-p", run1, "-j");
          assert.equal(events.code, 0, events.err);
          const ids = new Set(
            JSON.parse(events.out).events.map((e: { podId: { value: string } }) => e.podId.value),
          );
          assert.deepEqual([...ids], [run1]);

          const current = await cli(up.url, "pod", "get", name, "--currentonly", "--statusonly", "-j");
          assert.equal(current.code, 0, current.err);
          const got = JSON.parse(current.out);
          assert.equal(got.current.status.podId.value, run2);
          assert.deepEqual(got.previous ?? [], []);
          const all = JSON.parse((await cli(up.url, "pod", "get", name, "--statusonly", "-j")).out);
          assert.equal(all.previous.length, 1, "without it, the run before too");
          const both = await cli(up.url, "pod", "get", name, "--currentonly", "--limit", "0");
          assert.equal(both.code, 2, both.out);
          assert.match(
            both.err,
            /--currentonly: shows the current run alone, but --limit 0 asks for all runs/,
          );
        },
      );

      await t.step("job query -k/--keywords and -d/--timerange filter; -p sorts", async () => {
        const query = async (...flags: string[]) => {
          const r = await cli(up.url, "job", "query", "-j", ...flags);
          assert.equal(r.code, 0, r.err);
          return (JSON.parse(r.out).results as { name: string }[]).map((j) => j.name);
        };
        assert.deepEqual(await query("-k", "KEYWORDZEBRA"), ["flags-keywordzebra"]);
        assert.deepEqual(await query("--keywords", "keywordzebra,nothing-has-this"), []);
        const recent = await query("-d", "1", "-p", "name", "-a", "ASC");
        assert.ok(recent.includes("flags-keywordzebra"), `created today: ${recent}`);
        assert.deepEqual(recent, [...recent].sort(), "-p name -a ASC");
      });
    });
  },
});
