/**
 * The web UI in headless Chromium against a real `peloton up` (two local agents, basic auth on): sign in,
 * see the job and the pool the API created with their state, page to a job past the first page of the job
 * list and filter it, open a pool's queue to see a job's waiting instances in line, stop the job, see a job's
 * secrets by path and id but never their data, take a host through maintenance, move it to another host pool
 * and move hosts between pools (MoveHosts) from the UI, and check each change through the API;
 * follow a rolling update instance by instance; page, sort and filter the tasks of a job of 150 (by several
 * states, by names, by hosts, keeping what is typed across refreshes); all with nothing unexpected on the
 * console.
 * Needs Chromium at /usr/bin/chromium (or PELOTON_TEST_CHROMIUM); without it the test fails, it does not skip.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { launchChromium } from "../../tools/chromium_testing.ts";
import { loadJobConfig, loadRespoolConfig } from "../../core/model/load.ts";
import { PelotonClient } from "../cli/client.ts";
import { ROOT, startUp, waitFor } from "../testing.ts";
import { batchJobYaml } from "../testing_cluster.ts";

const AUTH = `${ROOT}/prod/auth/testdata/security_example.yaml`;
const ROOT_USER = { username: "peloton", password: "password1" };
const JOB = "peloton.api.job.JobManager";
const RESPOOL = "peloton.api.respool.ResourceManager";
const RESMGR = "peloton.private.resmgr.ResourceManagerService";
const HOST = "peloton.api.v0.host.svc.HostService";
const UPDATE = "peloton.api.v0.update.svc.UpdateService";
const TASK = "peloton.api.task.TaskManager";
const WAIT_MS = 10_000;

/**
 * A pool with two jobs in it, made through the API as the CLI makes them: a two-task batch job, and a
 * two-task service with an update that starts paused (a workflow in progress for the job page to show).
 */
async function createPoolAndJobs(client: PelotonClient) {
  const pool = loadRespoolConfig(
    (await Deno.readTextFile(`${ROOT}/scenarios/jobs/default_respool.yaml`)).replace(
      "name: DefaultResPool",
      "name: UiPool",
    ),
    "default_respool.yaml",
  );
  assert.ok(pool.ok);
  const created = await client.call<{ result: { value: string } }>(`${RESPOOL}::CreateResourcePool`, {
    config: { ...pool.value, parent: { value: "root" } },
  });
  const respoolID = { value: created.result.value };
  const createJob = async (yaml: string) => {
    const job = loadJobConfig(yaml, "job.yaml");
    assert.ok(job.ok);
    const res = await client.call<{ jobId: { value: string } }>(`${JOB}::Create`, {
      config: { ...job.value, respoolID },
    });
    return res.jobId.value;
  };
  const jobId = await createJob(batchJobYaml("ui-job", 2, "sleep 60"));
  const serviceId = await createJob(`type: SERVICE\n${batchJobYaml("ui-service", 2, "sleep 60")}`);
  const v2 = loadJobConfig(`type: SERVICE\n${batchJobYaml("ui-service", 2, "sleep 61")}`, "v2.yaml");
  assert.ok(v2.ok);
  const update = await client.call<{ updateID: { value: string } }>(`${UPDATE}::CreateUpdate`, {
    jobId: { value: serviceId },
    jobConfig: { ...v2.value, respoolID, changeLog: { version: 1 } },
    updateConfig: { batchSize: 1, startPaused: true },
  });
  return { jobId, serviceId, updateId: update.updateID.value, createJob, respoolID };
}

/** Console errors, page errors and failed requests, checked phase by phase. */
class ConsoleWatch {
  readonly seen: string[] = [];
  constructor(page: Page) {
    page.on("console", (m) => {
      if (m.type() === "error") this.seen.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (e) => this.seen.push(`page error: ${e.message}`));
    page.on("requestfailed", (r) => {
      const why = r.failure()?.errorText;
      // A request still out when the test navigates or reloads (the 0.5 s refresh keeps one out often, more
      // so on a loaded machine) is dropped by the browser: the test's doing, not the page's. Any other
      // failure (refused, reset, timed out) counts.
      if (why === "net::ERR_ABORTED") return;
      this.seen.push(`request failed: ${r.url()} ${why}`);
    });
  }

  /** Everything seen since the last check must be an HTTP error answer of `status` (none when omitted). */
  expectOnly(what: string, status?: number): void {
    const unexpected = this.seen.filter((e) =>
      status === undefined || !e.includes(`the server responded with a status of ${status}`)
    );
    assert.deepEqual(unexpected, [], `${what}: unexpected console errors`);
    this.seen.length = 0;
  }
}

/** Presses an action button, then Confirm in the confirm step; returns the result line's text. */
async function act(page: Page, scope: ReturnType<Page["locator"]>, label: string): Promise<string> {
  await scope.locator(`button[data-action="${label}"]:not([aria-disabled])`).click({ timeout: WAIT_MS });
  const confirm = page.locator("#confirm");
  await confirm.waitFor({ state: "visible" });
  assert.match(await page.locator("#confirm-text").innerText(), /\?/);
  await page.locator("#confirm-yes").click();
  await confirm.waitFor({ state: "hidden" });
  // The click set "<label>: sending…"; the answer replaces it.
  const result = page.locator("#result-text", { hasNotText: /sending/ });
  await result.waitFor({ timeout: WAIT_MS });
  return await result.innerText();
}

function cellTexts(page: Page, selector: string): Promise<string[]> {
  return page.locator(selector).allInnerTexts();
}

Deno.test({
  name: "web UI in Chromium against a real server: sign in, views, stop a job, host maintenance, workflows",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-ui-" });
    const [up, browser] = await Promise.all([
      startUp(dataDir, ["--agents", "2", "--auth-config", AUTH]),
      launchChromium("test the web UI"),
    ]);
    const client = new PelotonClient({ url: up.url, credentials: ROOT_USER });
    try {
      await t.step("the server serves the page at /ui/ and redirects / to it", async () => {
        const root = await fetch(`${up.url}/`, { redirect: "manual" });
        await root.body?.cancel();
        assert.equal(root.status, 302);
        assert.equal(root.headers.get("location"), "/ui/");
        const page = await fetch(`${up.url}/ui/`);
        assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
        assert.match(await page.text(), /<title>Peloton<\/title>/);
      });

      const { jobId, serviceId, updateId, createJob, respoolID } = await createPoolAndJobs(client);
      const page = await browser.newPage();
      const watch = new ConsoleWatch(page);

      await t.step(
        "without credentials the API's 401 is shown and the sign-in form asks for them",
        async () => {
          await page.goto(`${up.url}/ui/?refresh=0.5`, { waitUntil: "load" });
          await page.locator("#login").waitFor({ state: "visible", timeout: WAIT_MS });
          assert.match(
            await page.locator("#errors").innerText(),
            /unauthenticated: calls without credentials/,
          );
          watch.expectOnly("before signing in", 401);
          await page.locator("#username").fill(ROOT_USER.username);
          await page.locator("#password").fill(ROOT_USER.password);
          await page.locator("#login button[type=submit]").click();
          await page.locator("#login").waitFor({ state: "hidden", timeout: WAIT_MS });
          await page.locator("#errors").waitFor({ state: "hidden" });
          watch.expectOnly("signing in", 401);
        },
      );

      await t.step(
        "signed out, then refused a wrong password: no Sign out shows while nobody is signed in",
        async () => {
          const signOut = page.locator("#sign-out");
          await signOut.waitFor({ state: "visible", timeout: WAIT_MS });
          await signOut.click();
          await page.locator("#login").waitFor({ state: "visible", timeout: WAIT_MS });
          await signOut.waitFor({ state: "hidden", timeout: WAIT_MS });
          await page.locator("#username").fill(ROOT_USER.username);
          await page.locator("#password").fill(`${ROOT_USER.password}-wrong`);
          await page.locator("#login button[type=submit]").click();
          await page.locator("#login-why", { hasText: "The server refused these credentials" }).waitFor({
            timeout: WAIT_MS,
          });
          await page.locator("#status", { hasText: "Auto-refresh waits for sign-in" }).waitFor({
            timeout: WAIT_MS,
          });
          assert.equal(await signOut.isVisible(), false, "Sign out beside the sign-in form");
          // Signed in again: Sign out is back.
          await page.locator("#password").fill(ROOT_USER.password);
          await page.locator("#login button[type=submit]").click();
          await page.locator("#login").waitFor({ state: "hidden", timeout: WAIT_MS });
          await signOut.waitFor({ state: "visible", timeout: WAIT_MS });
          await page.locator("#errors").waitFor({ state: "hidden" });
          watch.expectOnly("signing out and in again", 401);
        },
      );

      await t.step(
        "the jobs view lists the jobs RUNNING in their pool, the header sums the cluster",
        async () => {
          const row = page.locator("table.jobs tbody tr", { hasText: jobId });
          for (const id of [jobId, serviceId]) {
            const r = page.locator("table.jobs tbody tr", { hasText: id });
            await r.locator('.stat[data-state="RUNNING"]', { hasText: "RUNNING 2" }).waitFor({
              timeout: WAIT_MS,
            });
          }
          const cells = await row.locator("td").allInnerTexts();
          assert.deepEqual(cells.slice(0, 7), [
            "ui-job",
            jobId,
            "BATCH",
            "RUNNING",
            "SUCCEEDED",
            "/UiPool",
            "2",
          ]);
          assert.match(await page.locator("#summary-hosts").innerText(), /^hosts\s+2\s+UP 2$/i);
          assert.match(await page.locator("#summary-cpu").innerText(), /0\.4 \/ 8 cores/);
          assert.match(await page.locator("#summary-pools").innerText(), /1$/);
        },
      );

      await t.step(
        "the job list pages through the API: the job past the first page is a Next away; filters narrow it",
        async () => {
          // A page of one job: the newer job (the service) on page 1, the batch job past it on page 2.
          await page.goto(`${up.url}/ui/?refresh=0.5#/jobs?size=1`);
          const rows = page.locator("table.jobs tbody tr");
          const pager = page.locator(".pager-top");
          await pager.locator(".page-of", { hasText: "jobs 1–1 of 2 · page 1 of 2" }).waitFor({
            timeout: WAIT_MS,
          });
          assert.equal(await rows.count(), 1);
          assert.match(await rows.innerText(), new RegExp(serviceId));
          assert.equal(await pager.locator('[data-page="previous"]').getAttribute("aria-disabled"), "true");
          assert.match(await page.locator("#summary-jobs").innerText(), /^jobs\s+2\s+RUNNING 2$/i);

          await pager.locator('a[data-page="next"]').click();
          await pager.locator(".page-of", { hasText: "jobs 2–2 of 2 · page 2 of 2" }).waitFor({
            timeout: WAIT_MS,
          });
          assert.match(page.url(), /#\/jobs\?size=1&page=2$/);
          assert.equal(await rows.count(), 1);
          assert.match(await rows.innerText(), new RegExp(jobId));
          assert.equal(await pager.locator('[data-page="next"]').getAttribute("aria-disabled"), "true");
          await rows.locator("a.job-link", { hasText: "ui-job" }).click();
          await page.locator(`#job[data-job-id="${jobId}"]`).waitFor({ timeout: WAIT_MS });
          await page.goBack();
          await page.locator("table.jobs tbody tr", { hasText: jobId }).waitFor({ timeout: WAIT_MS });
          assert.equal(
            await page.locator("#job-size").inputValue(),
            "1",
            "the form shows the URL's page size",
          );

          // The filters go to the API (a part of the name in any case, the owning team exactly, as Peloton's
          // Query takes them), from page 1.
          await page.locator("#job-name").fill("ui-job");
          await page.locator("#job-query button[type=submit]").click();
          await page.locator("h2", { hasText: "Jobs matching the filter (1)" }).waitFor({ timeout: WAIT_MS });
          assert.match(page.url(), /#\/jobs\?name=ui-job&size=1$/);
          assert.match(await rows.innerText(), new RegExp(jobId));
          await page.locator("#job-state").selectOption("SUCCEEDED");
          await page.locator("h2", { hasText: "Jobs matching the filter (0)" }).waitFor({ timeout: WAIT_MS });
          assert.equal(await rows.innerText(), "No job matches the filter");
          await page.locator("#job-state").selectOption("ACTIVE");
          await page.locator("h2", { hasText: "Jobs matching the filter (1)" }).waitFor({ timeout: WAIT_MS });
        },
      );

      await t.step("the pools view shows the pool's config and its allocation", async () => {
        await page.locator("#nav-pools").click();
        const cpu = 'tr[data-pool="/UiPool"][data-kind="cpu"] td:not(.pool)';
        await page.waitForSelector(cpu, { timeout: WAIT_MS });
        // kind, reservation, limit, share, allocation, slack: default_respool.yaml's, and four 0.1-core tasks;
        // then entitlement (the last cycle's, capped by the cluster) and the demand still queued.
        const cpuCells = await cellTexts(page, cpu);
        assert.deepEqual(cpuCells.slice(0, 6), ["cpu", "12", "12", "1", "0.4", "0"]);
        assert.equal(cpuCells.length, 8);
        assert.ok(
          cpuCells.slice(6).every((c) => Number.isFinite(Number(c))),
          `entitlement, demand: ${cpuCells}`,
        );
        assert.equal(cpuCells[7], "0", "nothing is queued");
        const mem = 'tr[data-pool="/UiPool"][data-kind="memory"] td:not(.pool)';
        assert.deepEqual((await cellTexts(page, mem)).slice(0, 6), [
          "memory",
          "6144",
          "6144",
          "1",
          "16",
          "0",
        ]);
        const headers = await page.locator("table.pools th").allInnerTexts();
        assert.deepEqual(headers.slice(-2).map((t) => t.toLowerCase()), ["entitlement", "demand"]);
        assert.match(
          await page.locator('tr[data-pool="/UiPool"] td.pool').innerText(),
          /leaf · 2 active jobs/,
        );
        assert.ok(await page.locator('tr[data-pool="/"]').count() > 0, "the root pool is listed");
        assert.equal(await page.locator(".wait").count(), 0, "no pool holds queued work");

        // A pool whose queue is held: a job asking for a GPU, which the pool's limit of 0 never admits.
        const pool = loadRespoolConfig(
          (await Deno.readTextFile(`${ROOT}/scenarios/jobs/default_respool.yaml`)).replace(
            "name: DefaultResPool",
            "name: WaitPool",
          ),
          "default_respool.yaml",
        );
        assert.ok(pool.ok);
        const waitPool = await client.call<{ result: { value: string } }>(`${RESPOOL}::CreateResourcePool`, {
          config: { ...pool.value, parent: { value: "root" } },
        });
        const gpuJob = loadJobConfig(
          batchJobYaml("ui-gpu", 1, "true").replace(
            "    disklimitmb: 1",
            "    disklimitmb: 1\n    gpulimit: 1",
          ),
          "gpu.yaml",
        );
        assert.ok(gpuJob.ok);
        await client.call(`${JOB}::Create`, {
          config: { ...gpuJob.value, respoolID: { value: waitPool.result.value } },
        });
        const wait = page.locator('tr[data-pool="/WaitPool"] td.pool .wait');
        await wait.waitFor({ timeout: WAIT_MS });
        assert.equal(
          await wait.innerText(),
          // Passed over in the pending queue, where it stays, rather than hold up the non-preemptible one.
          "Waiting: resource pool /WaitPool can never admit the first task in line: it asks for gpu 1, more " +
            "than its limit of 0",
        );
      });

      await t.step(
        "a pool's queue opens in the pools view: a job's waiting instances in admission order, kept open " +
          "across refreshes",
        async () => {
          // A pool of two cores and a job of five one-core tasks: the first instances are admitted, the rest
          // wait in line. `up` runs with preemption on, so a non-preemptible job waits in that queue.
          const pool = loadRespoolConfig(
            (await Deno.readTextFile(`${ROOT}/scenarios/jobs/default_respool.yaml`))
              .replace("name: DefaultResPool", "name: QueuePool")
              .replace("reservation: 12\n    limit: 12", "reservation: 2\n    limit: 2"),
            "default_respool.yaml",
          );
          assert.ok(pool.ok);
          const queuePool = await client.call<{ result: { value: string } }>(
            `${RESPOOL}::CreateResourcePool`,
            {
              config: { ...pool.value, parent: { value: "root" } },
            },
          );
          const config = loadJobConfig(batchJobYaml("ui-queue", 5, "sleep 600", 1), "queue.yaml");
          assert.ok(config.ok);
          const created = await client.call<{ jobId: { value: string } }>(`${JOB}::Create`, {
            config: { ...config.value, respoolID: { value: queuePool.result.value } },
          });
          const queueJob = created.jobId.value;
          type Pending = { pendingGangsByQueue: Record<string, { pendingGangs: { taskIDs: string[] }[] }> };
          const pending = () =>
            client.call<Pending>(`${RESMGR}::GetPendingTasks`, { respoolID: { value: "/QueuePool" } });
          // Until the line holds still: the instances admitted are out of it.
          let last = "";
          const line = await waitFor("the job's waiting instances to settle", async () => {
            const r = await pending();
            const now = JSON.stringify(r);
            const gangs = r.pendingGangsByQueue["non-preemptible"]?.pendingGangs ?? [];
            const settled = now === last && gangs.length >= 3 && gangs.length < 5;
            last = now;
            if (!settled) await new Promise((r) => setTimeout(r, 500));
            return settled ? gangs : undefined;
          }, 30_000);
          // Each gang is one task; the first instances were admitted, the others wait in instance order.
          const waiting = line.map((g) => g.taskIDs.map((id) => id.slice(queueJob.length + 1)).join(", "));
          assert.deepEqual(
            waiting,
            Array.from({ length: line.length }, (_, i) => String(5 - line.length + i)),
          );

          await page.goto(`${up.url}/ui/?refresh=0.5#/pools`);
          const toggle = page.locator('button.queue-toggle[data-pool="/QueuePool"]');
          await toggle.click({ timeout: WAIT_MS });
          const queue = page.locator(
            'tr.pool-queue[data-queue-of="/QueuePool"] .queue[data-queue="non-preemptible"]',
          );
          await queue.waitFor({ timeout: WAIT_MS });
          const gangs = queue.locator("tr.gang");
          const shown = async () => ({
            positions: await gangs.locator("td.position").allInnerTexts(),
            jobs: await gangs.locator(".gang-job").evaluateAll((els) =>
              els.map((e) => e.getAttribute("data-job"))
            ),
            instances: await gangs.locator(".gang-job .instances").allInnerTexts(),
          });
          const expected = (instances: string[]) => ({
            positions: instances.map((_, i) => String(i + 1)),
            jobs: instances.map(() => queueJob),
            instances,
          });
          assert.deepEqual(await shown(), expected(waiting));
          assert.equal(
            await queue.locator(".queue-name").innerText(),
            `non-preemptible queue · ${line.length} gangs in line`,
          );
          assert.equal(
            await gangs.first().locator("td").nth(1).innerText(),
            `job ${queueJob.slice(0, 8)}… (ui-queue) instance ${waiting[0]}`,
          );
          assert.equal(
            await gangs.first().locator("a.queue-job").getAttribute("href"),
            `#/jobs/${queueJob}`,
          );
          assert.equal(await toggle.getAttribute("aria-expanded"), "true");
          // Only the opened pool shows its queue (WaitPool's GPU job waits too).
          assert.equal(await page.locator("tr.pool-queue").count(), 1);

          // Still open after a refresh, and each refresh asks again: the first instance in line, stopped, leaves
          // it, and the next one moves up.
          const updated = await page.locator("#status").innerText();
          await page.locator("#status", { hasNotText: updated }).waitFor({ timeout: WAIT_MS });
          assert.deepEqual(await shown(), expected(waiting), "still open after a refresh");
          const first = Number(waiting[0]);
          await client.call(`${TASK}::Stop`, {
            jobId: { value: queueJob },
            ranges: [{ from: first, to: first + 1 }],
          });
          await waitFor("the stopped instance out of the line on the page", async () => {
            const now = await shown();
            return now.instances.length === waiting.length - 1 || undefined;
          }, WAIT_MS);
          assert.deepEqual(await shown(), expected(waiting.slice(1)));

          // Closed, it goes; the job stops so the steps after have the cluster to themselves.
          await toggle.click();
          await page.locator("tr.pool-queue").waitFor({ state: "detached", timeout: WAIT_MS });
          assert.equal(await toggle.getAttribute("aria-expanded"), "false");
          await client.call(`${TASK}::Stop`, { jobId: { value: queueJob } });
          await waitFor("the queued job to be KILLED", async () => {
            const r = await client.call<{ jobInfo: { runtime: { state: string } } }>(`${JOB}::Get`, {
              id: { value: queueJob },
            });
            return r.jobInfo.runtime.state === "KILLED" || undefined;
          }, WAIT_MS);
          watch.expectOnly("a pool's queue");
        },
      );

      await t.step(
        "the job view shows its config and tasks; Stop job stops it, as the API confirms",
        async () => {
          await page.locator("#nav-jobs").click();
          await page.locator("a.job-link", { hasText: "ui-job" }).click();
          const job = page.locator(`#job[data-job-id="${jobId}"]`);
          await job.waitFor({ timeout: WAIT_MS });
          const tasks = job.locator("table.tasks tbody tr");
          await waitFor("two running tasks on the page", async () => {
            const states = await tasks.locator(".badge").allInnerTexts();
            return states.length === 2 && states.every((s) => s === "RUNNING") || undefined;
          }, WAIT_MS);
          const hosts = await tasks.locator("td:nth-child(6)").allInnerTexts();
          assert.ok(hosts.every((h) => /^agent-\d$/.test(h)), `tasks show their hosts: ${hosts}`);
          // Each task's config version, as the API's task runtime gives it: the job's first.
          assert.deepEqual(await tasks.locator("td:nth-child(5)").allInnerTexts(), ["1", "1"]);
          assert.match(await job.locator(".facts").first().innerText(), /Resource pool\s+\/UiPool/);
          assert.match(await job.locator("#active-workflow").innerText(), /No workflow in progress/);
          assert.equal(await job.locator("#instance-progress").count(), 0, "a job without workflows");
          assert.equal(await job.locator("#secrets").count(), 0, "a job without secrets");

          // The confirm step is a modal dialog: a destructive action starts on Cancel, so Enter, Enter stops
          // nothing; Tab stays in it; Escape cancels; the focus goes back to the button that opened it.
          const stop = job.locator('button[data-action="Stop job"]');
          const confirm = page.locator("#confirm");
          const focused = () =>
            page.evaluate(
              "[document.activeElement.id, !!document.activeElement.closest('#confirm')]",
            ) as Promise<[string, boolean]>;
          assert.equal(await confirm.getAttribute("aria-modal"), "true");
          await stop.focus();
          await page.keyboard.press("Enter");
          await confirm.waitFor({ state: "visible" });
          assert.deepEqual(await focused(), ["confirm-no", true], "Cancel has the focus");
          for (const key of ["Tab", "Tab", "Tab", "Shift+Tab", "Shift+Tab", "Shift+Tab"]) {
            await page.keyboard.press(key);
            assert.equal((await focused())[1], true, `the focus stays in the dialog after ${key}`);
          }
          assert.equal(await page.locator("#view").getAttribute("inert"), "", "the page behind is inert");
          await page.keyboard.press("Escape");
          await confirm.waitFor({ state: "hidden" });
          assert.deepEqual(await focused(), ["action:Stop%20job", false], "back on Stop job");
          assert.equal(await page.locator("#view").getAttribute("inert"), null);
          await page.keyboard.press("Enter");
          await confirm.waitFor({ state: "visible" });
          await page.keyboard.press("Enter");
          await confirm.waitFor({ state: "hidden" });
          assert.deepEqual(await focused(), ["action:Stop%20job", false]);
          assert.equal(await page.locator("#result").isVisible(), false, "nothing was sent");

          assert.equal(await act(page, job, "Stop job"), "Job ui-job: stopping 2 instances");
          await waitFor("the job to be KILLED", async () => {
            const r = await client.call<{ jobInfo: { runtime: { state: string } } }>(`${JOB}::Get`, {
              id: { value: jobId },
            });
            return r.jobInfo.runtime.state === "KILLED" || undefined;
          }, WAIT_MS);
          await job.locator('h2 .badge[data-state="KILLED"]').waitFor({ timeout: WAIT_MS });
          assert.ok(
            await job.locator('button[data-action="Stop job"]').isDisabled(),
            "a killed job cannot be stopped",
          );
        },
      );

      await t.step(
        "a failed task opens to its events and sandbox logs, as `task events` and `task logs` show them",
        async () => {
          const failing = await createJob(
            batchJobYaml("ui-fails", 1, "echo ui-out; echo ui-err >&2; exit 3"),
          );
          await waitFor("the task to fail", async () => {
            const r = await client.call<{ jobInfo: { runtime: { taskStats?: Record<string, number> } } }>(
              `${JOB}::Get`,
              { id: { value: failing } },
            );
            return r.jobInfo.runtime.taskStats?.FAILED === 1 || undefined;
          }, WAIT_MS);
          await page.goto(`${up.url}/ui/?refresh=0.5#/jobs/${failing}`);
          const row = page.locator('#tasks tr[data-instance="0"]');
          await row.locator('.badge[data-state="FAILED"]').waitFor({ timeout: WAIT_MS });
          const open = row.locator("button.details-toggle");
          assert.equal(await open.getAttribute("aria-expanded"), "false");
          await open.click();
          const details = page.locator('#tasks tr.task-details[data-details-of="0"]');
          const stdout = details.locator('.log[data-file="stdout"] pre');
          await stdout.waitFor({ timeout: WAIT_MS });
          assert.equal(await stdout.innerText(), "ui-out");
          assert.equal(await details.locator('.log[data-file="stderr"] pre').innerText(), "ui-err");
          // The events, newest first, as the CLI's `task events` lists them.
          const events = await client.call<{ result: { actualState: string; hostname: string }[] }>(
            `${TASK}::GetPodEvents`,
            { jobId: { value: failing }, instanceId: 0 },
          );
          const states = await details.locator("table.events .badge").allInnerTexts();
          assert.deepEqual(states, events.result.map((e) => e.actualState));
          assert.equal(states[0], "FAILED");
          const failed = await details.locator("table.events tbody tr").first().locator("td").allInnerTexts();
          assert.match(failed[0], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
          assert.equal(failed[1], "1", "the run");
          assert.equal(failed[3], events.result[0].hostname);
          assert.match(failed[4], /exited with status 3/);
          // The link to the whole file: the sandbox endpoint BrowseSandbox points to, read with credentials.
          const href = await details.locator('.log[data-file="stdout"] a.whole-file').getAttribute("href");
          assert.match(href ?? "", new RegExp(`^\\.\\./sandbox/${failing}-0-1/stdout\\?agentId=`));
          const whole = await fetch(new URL(href!, `${up.url}/ui/`), {
            headers: { authorization: `Basic ${btoa(`${ROOT_USER.username}:${ROOT_USER.password}`)}` },
          });
          assert.equal(await whole.text(), "ui-out\n");
          // Open across a refresh, closed on the button.
          const updated = await page.locator("#status").innerText();
          await page.locator("#status", { hasNotText: updated }).waitFor({ timeout: WAIT_MS });
          assert.equal(await stdout.innerText(), "ui-out");
          await open.click();
          await details.waitFor({ state: "detached", timeout: WAIT_MS });
          watch.expectOnly("a task's events and logs");
        },
      );

      await t.step(
        "a task's log larger than the page reads shows its end, with a note giving the whole file's size",
        async () => {
          // 40,000 numbered lines, 428,894 bytes: far past TaskLog.TAIL_BYTES, which is all the page reads.
          const big = await createJob(batchJobYaml("ui-big-log", 1, "seq 1 40000 | sed s/^/line-/"));
          await waitFor("the task to succeed", async () => {
            const r = await client.call<{ jobInfo: { runtime: { taskStats?: Record<string, number> } } }>(
              `${JOB}::Get`,
              { id: { value: big } },
            );
            return r.jobInfo.runtime.taskStats?.SUCCEEDED === 1 || undefined;
          }, WAIT_MS);
          await page.goto(`${up.url}/ui/?refresh=0.5#/jobs/${big}`);
          const row = page.locator('#tasks tr[data-instance="0"]');
          await row.locator('.badge[data-state="SUCCEEDED"]').waitFor({ timeout: WAIT_MS });
          await row.locator("button.details-toggle").click();
          const log = page.locator('#tasks tr.task-details[data-details-of="0"] .log[data-file="stdout"]');
          await log.locator("pre").waitFor({ timeout: WAIT_MS });
          const lines = (await log.locator("pre").innerText()).split("\n");
          assert.equal(lines.length, 100);
          assert.deepEqual([lines[0], lines[99]], ["line-39901", "line-40000"]);
          assert.equal(
            await log.locator(".log-head").innerText(),
            "stdout · the last 100 lines of 418.8 KiB (only its end is read) · whole file",
          );
          watch.expectOnly("a large task log");
        },
      );

      await t.step(
        "a job created with secrets shows each one's path and id, never its data, in the page or in what the " +
          "page loads",
        async () => {
          // As `peloton job create --secret-path P --secret-data D` sends them: data in base64, an id optional.
          const data = ["ui-secret-token-7f3a91", "ui-secret-key-c26e04"];
          const config = loadJobConfig(batchJobYaml("ui-secrets", 1, "true"), "secrets.yaml");
          assert.ok(config.ok);
          const created = await client.call<{ jobId: { value: string } }>(`${JOB}::Create`, {
            config: { ...config.value, respoolID },
            secrets: [
              { id: { value: "ui-token" }, path: "/etc/ui/token", value: { data: btoa(data[0]) } },
              { path: "conf/ui.key", value: { data: btoa(data[1]) } },
            ],
          });
          const secretsJob = created.jobId.value;
          const got = await client.call<{ secrets: { id: { value: string }; path: string }[] }>(
            `${JOB}::Get`,
            {
              id: { value: secretsJob },
            },
          );
          const expected = got.secrets.map((s) => [s.path, s.id.value]).sort((a, b) => a[0] < b[0] ? -1 : 1);
          assert.deepEqual(expected.map(([path]) => path), ["/etc/ui/token", "conf/ui.key"]);
          assert.equal(expected[0][1], "ui-token");
          assert.match(expected[1][1], /\S/, "the server made the other secret an id");

          // Every API answer the page gets from here on, to look for the data in.
          const answers: Promise<string>[] = [];
          const onResponse = (r: { url(): string; text(): Promise<string> }) => {
            if (r.url().endsWith("/api/v1")) answers.push(r.text().catch((e) => `unread: ${e}`));
          };
          page.on("response", onResponse);
          try {
            await page.goto(`${up.url}/ui/?refresh=0.5#/jobs/${secretsJob}`);
            const section = page.locator(`#job[data-job-id="${secretsJob}"] #secrets`);
            await section.waitFor({ timeout: WAIT_MS });
            assert.equal(await section.locator("h3").innerText(), "Secrets");
            const rows = section.locator("table.secrets tbody tr");
            const shown = async () =>
              (await rows.evaluateAll((trs) =>
                trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent))
              )) as string[][];
            assert.deepEqual(await shown(), expected);
            // A refresh shows the same.
            const updated = await page.locator("#status").innerText();
            await page.locator("#status", { hasNotText: updated }).waitFor({ timeout: WAIT_MS });
            assert.deepEqual(await shown(), expected);
          } finally {
            page.off("response", onResponse);
          }
          const html = await page.content();
          const loaded = (await Promise.all(answers)).join("\n");
          assert.ok(
            loaded.includes("ui-token") && html.includes("/etc/ui/token"),
            "the checks below can see",
          );
          for (const secret of [...data, ...data.map((d) => btoa(d))]) {
            assert.ok(!html.includes(secret), `the page holds a secret's data: ${secret}`);
            assert.ok(!loaded.includes(secret), `an API answer to the page holds a secret's data: ${secret}`);
          }
          assert.ok(!(await page.locator("body").innerText()).includes(data[0]));
          watch.expectOnly("a job's secrets");
        },
      );

      await t.step("the hosts view drives maintenance through the API", async () => {
        await page.locator("#nav-hosts").click();
        const row = page.locator("table.hosts tbody tr", { hasText: "agent-1" });
        await row.waitFor({ timeout: WAIT_MS });
        assert.equal(await page.locator("table.hosts tbody tr").count(), 2);
        assert.equal(await act(page, row, "Start maintenance"), "Host agent-1: maintenance started");
        const state = async () => {
          const r = await client.call<{ hostInfos: { hostname: string; state: string }[] }>(
            `${HOST}::QueryHosts`,
            {},
          );
          return r.hostInfos.find((x) => x.hostname === "agent-1")?.state;
        };
        assert.match(await state() ?? "", /^HOST_STATE_(DRAINING|DRAINED|DOWN)$/);
        await row.locator('.badge[data-state="HOST_STATE_DOWN"]').waitFor({ timeout: WAIT_MS });
        assert.match(await row.innerText(), /down: in maintenance/);
        // Its capacity is no room for work: the summary counts it apart.
        await page.locator("#summary-cpu", { hasText: "4 cores in maintenance" }).waitFor({
          timeout: WAIT_MS,
        });
        assert.match(await page.locator("#summary-cpu").innerText(), /^cpu used\s+[\d.]+ \/ 4 cores/i);
        assert.equal(await act(page, row, "Complete maintenance"), "Host agent-1: maintenance completed");
        assert.equal(await state(), "HOST_STATE_UP");
        await row.locator('.badge[data-state="HOST_STATE_UP"]').waitFor({ timeout: WAIT_MS });
      });

      await t.step(
        "the hosts view shows the host pools; Move to pool… moves a host to a pool created through the API",
        async () => {
          await client.call(`${HOST}::CreateHostPool`, { name: "ui-hosts" });
          const pools = page.locator("#host-pools");
          const pool = (name: string) => pools.locator(`.host-pool[data-pool="${name}"]`);
          // The new pool has no host yet: it comes from ListHostPools.
          await pool("ui-hosts").waitFor({ timeout: WAIT_MS });
          assert.equal(await pool("ui-hosts").innerText(), "ui-hosts 0 hosts · 0 UP");
          assert.equal(await pool("shared").innerText(), "shared 2 hosts · 2 UP");
          const poolColumn = async () => {
            const headers = await cellTexts(page, "table.hosts thead th");
            const at = headers.indexOf("Pool") + 1;
            assert.ok(at > 0, `the hosts table has a Pool column: ${headers}`);
            return await cellTexts(page, `table.hosts tbody td:nth-child(${at})`);
          };
          assert.deepEqual(await poolColumn(), ["shared", "shared"]);

          // The pool is picked in the confirm step, which the refreshes leave alone.
          const row = page.locator("table.hosts tbody tr", { hasText: "agent-1" });
          await row.locator('button[data-action="Move to pool…"]').click({ timeout: WAIT_MS });
          await page.locator("#confirm").waitFor({ state: "visible" });
          assert.match(
            await page.locator("#confirm-text").innerText(),
            /^Move agent-1 out of host pool shared\?/,
          );
          const select = page.locator("#confirm-select");
          assert.deepEqual(await select.locator("option").allInnerTexts(), ["default", "ui-hosts"]);
          await select.selectOption("ui-hosts");
          const updated = await page.locator("#status").innerText();
          await page.locator("#status", { hasNotText: updated }).waitFor({ timeout: WAIT_MS });
          assert.equal(await select.inputValue(), "ui-hosts", "a refresh keeps the pick");
          assert.equal(await page.locator("#confirm-yes").innerText(), "Move to pool");
          await page.locator("#confirm-yes").click();
          const moved = page.locator("#result-text", { hasText: "Host agent-1 moved to host pool ui-hosts" });
          await moved.waitFor({ timeout: WAIT_MS });
          // The focus is back on the button that asked, and stays on it across the refreshes that rebuild it.
          const name = "Move agent-1 to another host pool…";
          const focusedName = () => page.evaluate("document.activeElement.getAttribute('aria-label')");
          assert.equal(await focusedName(), name);
          const later = await page.locator("#status").innerText();
          await page.locator("#status", { hasNotText: later }).waitFor({ timeout: WAIT_MS });
          assert.equal(await focusedName(), name, "after a refresh");

          const apiPools = async () => {
            const r = await client.call<{ hostInfos: { hostname: string; currentPool?: string }[] }>(
              `${HOST}::QueryHosts`,
              {},
            );
            return r.hostInfos.map((x) => [x.hostname, x.currentPool]).sort();
          };
          assert.deepEqual(await apiPools(), [["agent-0", "shared"], ["agent-1", "ui-hosts"]]);
          await pool("ui-hosts").filter({ hasText: "ui-hosts 1 host · 1 UP" }).waitFor({ timeout: WAIT_MS });
          assert.equal(await pool("shared").innerText(), "shared 1 host · 1 UP");
          const hosts = await cellTexts(page, "table.hosts tbody td:first-child");
          const shown = (await poolColumn()).map((p, i) => [hosts[i], p]);
          assert.deepEqual(shown, await apiPools(), "the hosts view and QueryHosts agree");

          // The filter finds the host by its pool; it is in the URL, so a reload keeps it.
          const filter = page.getByRole("searchbox", { name: "Filter hosts" });
          await filter.fill("ui-hosts");
          await page.locator("table.hosts tbody tr").first().waitFor();
          assert.deepEqual(await cellTexts(page, "table.hosts tbody td:first-child"), ["agent-1"]);
          assert.ok(page.url().endsWith("#/hosts?filter=ui-hosts"), page.url());
          await page.reload();
          await page.locator("table.hosts tbody tr", { hasText: "agent-1" }).waitFor({ timeout: WAIT_MS });
          assert.equal(await filter.inputValue(), "ui-hosts");
          assert.deepEqual(await cellTexts(page, "table.hosts tbody td:first-child"), ["agent-1"]);
          await filter.fill("");
          assert.ok(page.url().endsWith("#/hosts"), page.url());
          await page.locator("table.hosts tbody tr", { hasText: "agent-0" }).waitFor({ timeout: WAIT_MS });
          watch.expectOnly("host pools");
        },
      );

      await t.step(
        "a host pool's Move hosts… moves as many hosts as asked, which the host manager picks, from the pools' " +
          "sizes when Confirm is pressed; no more than the pool has",
        async () => {
          // From the step before: agent-0 in shared, agent-1 in ui-hosts, default empty.
          const pools = page.locator("#host-pools");
          const pool = (name: string) => pools.locator(`.host-pool[data-pool="${name}"]`);
          const moveButton = (name: string, which = "") =>
            pools.locator(
              `.host-pool-entry:has(> .host-pool[data-pool="${name}"]) button[data-action="Move hosts…"]${which}`,
            );
          await pool("ui-hosts").filter({ hasText: "ui-hosts 1 host · 1 UP" }).waitFor({ timeout: WAIT_MS });
          assert.ok(await moveButton("default").isDisabled(), "a pool without hosts has none to move");
          // Each pool's button has its own accessible name, as a screen reader or a test by role finds it.
          assert.ok(
            await page.getByRole("button", { name: "Move hosts out of host pool default…", exact: true })
              .isDisabled(),
          );
          assert.equal(
            await page.getByRole("button", { name: "Start maintenance on agent-1", exact: true }).count(),
            1,
          );
          const apiPools = async () => {
            const r = await client.call<{ hostInfos: { hostname: string; currentPool?: string }[] }>(
              `${HOST}::QueryHosts`,
              {},
            );
            return r.hostInfos.map((x) => [x.hostname, x.currentPool]).sort();
          };
          const yes = page.locator("#confirm-yes"), count = page.locator("#confirm-number");
          /** Opens `source`'s Move hosts…, picks `destination` and types `n`; Confirm is left to the caller. */
          const ask = async (source: string, destination: string, n: string) => {
            // The 0.5 s refresh may redraw the pools list between Playwright finding the button and its
            // click (more often on a loaded machine): a click on the replaced button opens nothing, so it is
            // clicked again until the dialog shows.
            const confirm = page.locator("#confirm");
            const deadline = Date.now() + WAIT_MS;
            for (;;) {
              await moveButton(source, ":not([aria-disabled])").click({ timeout: WAIT_MS });
              const shown = await confirm.waitFor({ state: "visible", timeout: 2_000 }).then(
                () => true,
                () => false,
              );
              if (shown) break;
              if (Date.now() > deadline) throw new Error(`Move hosts… of ${source} opened no dialog`);
            }
            await page.locator("#confirm-select").selectOption(destination);
            await count.fill(n);
          };
          const result = () => page.locator("#result-text", { hasNotText: /sending/ }).innerText();

          /** Moves `host` from one host pool to another through the API, as another operator might. */
          const changePool = (hostname: string, sourcePool: string, destinationPool: string) =>
            client.call(`${HOST}::ChangeHostPool`, { hostname, sourcePool, destinationPool });

          // ui-hosts has one host: Confirm takes from 1 to 1.
          await ask("ui-hosts", "shared", "2");
          assert.match(
            await page.locator("#confirm-text").innerText(),
            /^Move hosts out of host pool ui-hosts \(1 host\)\? The host manager picks which: idle, usable ones first/,
          );
          assert.ok(await page.locator("#confirm-amount").isVisible());
          assert.equal(await page.locator("#confirm-amount-label").innerText(), "Hosts to move (1 to 1)");
          assert.equal(await count.getAttribute("max"), "1");
          assert.deepEqual(await page.locator("#confirm-select option").allInnerTexts(), [
            "default",
            "shared",
          ]);
          // Not a whole number from 1 to what the pool has: Confirm waits for one, and says so.
          for (const bad of ["2", "0", "1.5", ""]) {
            await count.fill(bad);
            assert.ok(await yes.isDisabled(), `Confirm with "${bad}" hosts`);
            assert.equal(await count.getAttribute("aria-invalid"), "true");
          }
          assert.equal(await yes.getAttribute("title"), "Hosts to move (1 to 1): a whole number from 1 to 1");
          // Said beside it too: Tab skips a disabled button, so its tooltip alone is out of a keyboard's reach.
          const why = page.locator("#confirm-why");
          assert.equal(await why.innerText(), "Hosts to move (1 to 1): a whole number from 1 to 1");
          await count.fill("1");
          assert.ok(await yes.isEnabled());
          assert.ok(await why.isHidden(), "nothing to say once Confirm may be pressed");
          // The refreshes leave the pick and the count alone.
          const updated = await page.locator("#status").innerText();
          await page.locator("#status", { hasNotText: updated }).waitFor({ timeout: WAIT_MS });
          assert.equal(await page.locator("#confirm-select").inputValue(), "shared");
          assert.equal(await count.inputValue(), "1", "a refresh keeps the count");
          assert.equal(await yes.innerText(), "Move hosts");
          // Meanwhile its host went elsewhere: Confirm reads the pools again and says why nothing can move.
          await changePool("agent-1", "ui-hosts", "default");
          await yes.click();
          await page.locator("#result-text", { hasText: "Move hosts failed" }).waitFor({ timeout: WAIT_MS });
          assert.equal(
            await result(),
            "Move hosts failed: cannot move 1 host out of host pool ui-hosts: it has 0 hosts now",
          );
          assert.ok(await page.locator("#result.error").isVisible(), "shown as an error");
          assert.deepEqual(
            await apiPools(),
            [["agent-0", "shared"], ["agent-1", "default"]],
            "nothing moved",
          );
          await changePool("agent-1", "default", "ui-hosts");
          await pool("ui-hosts").filter({ hasText: "ui-hosts 1 host · 1 UP" }).waitFor({ timeout: WAIT_MS });
          watch.expectOnly("a move of more hosts than the pool has");

          // One host: agent-1, the only one.
          await ask("ui-hosts", "shared", "1");
          await yes.click();
          await page.locator("#result-text", {
            hasText: "Moved 1 host from host pool ui-hosts to shared: agent-1",
          })
            .waitFor({ timeout: WAIT_MS });
          assert.deepEqual(await apiPools(), [["agent-0", "shared"], ["agent-1", "shared"]]);
          await pool("shared").filter({ hasText: "shared 2 hosts · 2 UP" }).waitFor({ timeout: WAIT_MS });
          assert.equal(await pool("ui-hosts").innerText(), "ui-hosts 0 hosts · 0 UP");
          assert.ok(await moveButton("ui-hosts").isDisabled(), "ui-hosts has no host left to move");

          // One of shared's two, asked while it had two; another operator then moves agent-0 to ui-hosts, so
          // the sizes the page saw when asking (shared 1, ui-hosts 1 after the move) are already the case. The
          // move reads them when Confirm is pressed: it still moves one host, the one left in shared.
          await ask("shared", "ui-hosts", "1");
          assert.match(await page.locator("#confirm-text").innerText(), /host pool shared \(2 hosts\)/);
          await changePool("agent-0", "shared", "ui-hosts");
          await yes.click();
          const moved = page.locator("#result-text", {
            hasText: /^Moved 1 host from host pool shared to ui-hosts: /,
          });
          await moved.waitFor({ timeout: WAIT_MS });
          assert.equal(await moved.innerText(), "Moved 1 host from host pool shared to ui-hosts: agent-1");
          assert.deepEqual(await apiPools(), [["agent-0", "ui-hosts"], ["agent-1", "ui-hosts"]]);
          // shared, named by the agents, went with its last host: made again, it takes agent-0 back.
          await client.call(`${HOST}::CreateHostPool`, { name: "shared" });
          await changePool("agent-0", "ui-hosts", "shared");
          await pool("ui-hosts").filter({ hasText: "ui-hosts 1 host · 1 UP" }).waitFor({ timeout: WAIT_MS });
          await pool("shared").filter({ hasText: "shared 1 host · 1 UP" }).waitFor({ timeout: WAIT_MS });
          const row = page.locator("table.hosts tbody tr", { hasText: "agent-1" });
          assert.match(await row.innerText(), /\bui-hosts\b/, "the hosts table shows it in its new pool");
          watch.expectOnly("moving hosts");
        },
      );

      await t.step(
        "the job view shows the paused update; Abort workflow aborts it, as the API confirms",
        async () => {
          await page.goto(`${up.url}/ui/?refresh=0.5#/jobs/${serviceId}`);
          const active = page.locator("#active-workflow");
          await active.locator('.badge[data-state="PAUSED"]').waitFor({ timeout: WAIT_MS });
          const text = await active.innerText();
          assert.match(text, new RegExp(`Workflow\\s+${updateId}`));
          assert.match(text, /Type\s+UPDATE/);
          assert.match(text, /0 of 2 instances done, 0 failed, 2 remaining/);
          assert.ok(await active.locator('button[data-action="Pause workflow"]').isDisabled());
          // Each instance's step: the update started paused, so both are PAUSED.
          const instances = page.locator("#instance-progress tr.instance");
          await page.locator(`#instance-progress .workflow-line[data-workflow-id="${updateId}"]`).waitFor({
            timeout: WAIT_MS,
          });
          assert.deepEqual(await instances.locator("td:first-child").allInnerTexts(), ["0", "1"]);
          assert.deepEqual(await instances.locator(".badge").allInnerTexts(), ["PAUSED", "PAUSED"]);
          assert.equal(await act(page, active, "Abort workflow"), `Workflow ${updateId}: abort requested`);
          const r = await client.call<{ updateInfo: { status: { state: string } } }>(`${UPDATE}::GetUpdate`, {
            updateId: { value: updateId },
          });
          assert.equal(r.updateInfo.status.state, "ABORTED");
          await page.locator("#active-workflow", { hasText: "No workflow in progress" }).waitFor({
            timeout: WAIT_MS,
          });
          await page.locator('table.workflows .badge[data-state="ABORTED"]').waitFor();
        },
      );

      await t.step(
        "a rolling update shows each instance's progress: every instance SUCCEEDED, its steps newest first",
        async () => {
          const rollingId = await createJob(`type: SERVICE\n${batchJobYaml("ui-rolling", 3, "sleep 60")}`);
          await waitFor("three running tasks", async () => {
            const r = await client.call<{ jobInfo: { runtime: { taskStats?: Record<string, number> } } }>(
              `${JOB}::Get`,
              { id: { value: rollingId } },
            );
            return r.jobInfo.runtime.taskStats?.RUNNING === 3 || undefined;
          }, WAIT_MS);
          const v2 = loadJobConfig(`type: SERVICE\n${batchJobYaml("ui-rolling", 3, "sleep 61")}`, "v2.yaml");
          assert.ok(v2.ok);
          const rolling = await client.call<{ updateID: { value: string } }>(`${UPDATE}::CreateUpdate`, {
            jobId: { value: rollingId },
            jobConfig: { ...v2.value, respoolID, changeLog: { version: 1 } },
            updateConfig: { batchSize: 1, minRunningSeconds: 0 },
          });
          await page.goto(`${up.url}/ui/?refresh=0.5#/jobs/${rollingId}`);
          const progress = page.locator("#instance-progress");
          await progress.locator(`.workflow-line[data-workflow-id="${rolling.updateID.value}"]`).waitFor({
            timeout: WAIT_MS,
          });
          const instances = progress.locator("tr.instance");
          await waitFor("every instance SUCCEEDED on the page", async () => {
            const states = await instances.locator(".badge").allInnerTexts();
            return states.length === 3 && states.every((s) => s === "SUCCEEDED") || undefined;
          }, 60_000);
          assert.deepEqual(await instances.locator("td:first-child").allInnerTexts(), ["0", "1", "2"]);
          for (const since of await instances.locator("td:nth-child(3)").allInnerTexts()) {
            assert.match(since, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
          }
          assert.match(
            await progress.locator(".workflow-line").innerText(),
            /\(UPDATE\)\s*SUCCEEDED\s*· instances by state:\s*SUCCEEDED 3$/,
          );
          assert.equal(await progress.locator("tr.instance.failed, #failed-instances").count(), 0);
          // The workflow's own states, oldest first.
          assert.deepEqual(await progress.locator("#workflow-history .badge").allInnerTexts(), [
            "INITIALIZED",
            "ROLLING_FORWARD",
            "SUCCEEDED",
          ]);

          // Instance 1's steps, newest first; they stay open across refreshes.
          await progress.locator('button.steps-toggle[data-instance="1"]').click();
          const steps = progress.locator('tr.steps[data-steps-of="1"] li');
          await steps.first().waitFor({ timeout: WAIT_MS });
          const expected = ["SUCCEEDED", "ROLLING_FORWARD", "INITIALIZED"];
          assert.deepEqual(await steps.locator(".badge").allInnerTexts(), expected);
          const updated = await page.locator("#status").innerText();
          await page.locator("#status", { hasNotText: updated }).waitFor({ timeout: WAIT_MS });
          assert.deepEqual(
            await steps.locator(".badge").allInnerTexts(),
            expected,
            "still open after a refresh",
          );
          await progress.locator('button.steps-toggle[data-instance="1"][aria-expanded="true"]').click();
          await progress.locator("tr.steps").waitFor({ state: "detached" });
          watch.expectOnly("a rolling update's instances");
        },
      );

      // The job of 150 tasks the next steps look at.
      let bigId = "";
      await t.step(
        "a job of 150 tasks: the tasks table pages, sorts and filters through the API, all kept in the URL",
        async () => {
          // A pool of one core: ten of the 0.1-core tasks run, the others wait, saying why.
          const pool = loadRespoolConfig(
            (await Deno.readTextFile(`${ROOT}/scenarios/jobs/default_respool.yaml`))
              .replace("name: DefaultResPool", "name: TaskPool")
              .replace("reservation: 12\n    limit: 12", "reservation: 1\n    limit: 1"),
            "default_respool.yaml",
          );
          assert.ok(pool.ok);
          const small = await client.call<{ result: { value: string } }>(`${RESPOOL}::CreateResourcePool`, {
            config: { ...pool.value, parent: { value: "root" } },
          });
          // Two instances with names of their own, for the name filter.
          const config = loadJobConfig(
            `${batchJobYaml("ui-big", 150, "sleep 600")}instanceconfig:\n` +
              "  5:\n    name: ui-big-5\n  140:\n    name: ui-big-140\n",
            "big.yaml",
          );
          assert.ok(config.ok);
          const created = await client.call<{ jobId: { value: string } }>(`${JOB}::Create`, {
            config: { ...config.value, respoolID: { value: small.result.value } },
          });
          bigId = created.jobId.value;
          // Until the counts hold still, so the page's filter and the API agree.
          let last = "";
          const stats = await waitFor("the big job's tasks to settle", async () => {
            const r = await client.call<{ jobInfo: { runtime: { taskStats?: Record<string, number> } } }>(
              `${JOB}::Get`,
              { id: { value: bigId } },
            );
            const s = r.jobInfo.runtime.taskStats ?? {};
            const now = JSON.stringify(s);
            const settled = now === last && s.RUNNING > 0 && s.PENDING > 0 && s.RUNNING + s.PENDING === 150;
            last = now;
            if (!settled) await new Promise((r) => setTimeout(r, 1000));
            return settled ? s : undefined;
          }, 60_000);

          const base = `${up.url}/ui/?refresh=0.5#/jobs/${bigId}`;
          await page.goto(base);
          const tasks = page.locator("#tasks");
          const rows = tasks.locator("table.tasks tbody tr");
          const shows = (text: string) =>
            tasks.locator(".pager-top .page-of", { hasText: text }).waitFor({ timeout: WAIT_MS });
          const instances = () => rows.locator("td:first-child").allInnerTexts();
          const range = (from: number, to: number) =>
            Array.from({ length: to - from }, (_, i) => String(from + i));
          await shows("tasks 1–100 of 150 · page 1 of 2");
          assert.deepEqual(await instances(), range(0, 100));
          assert.equal(await tasks.locator("h3").innerText(), "Tasks (150)");

          await tasks.locator('.pager-top a[data-page="next"]').click();
          await shows("tasks 101–150 of 150 · page 2 of 2");
          assert.deepEqual(await instances(), range(100, 150));
          assert.ok(page.url().endsWith(`#/jobs/${bigId}?page=2`), page.url());

          // Sorting starts from the first page.
          await tasks.locator('th[data-sort="instanceId"] a').click();
          await tasks.locator('th[data-sort="instanceId"][aria-sort="descending"]').waitFor({
            timeout: WAIT_MS,
          });
          await shows("tasks 1–100 of 150 · page 1 of 2");
          assert.deepEqual(await instances(), range(50, 150).reverse());
          assert.ok(page.url().endsWith(`#/jobs/${bigId}?order=desc`), page.url());

          // The state filter: the running tasks only, still newest instance first.
          const running = tasks.locator('a.state-chip[data-state="RUNNING"]');
          assert.equal(await running.innerText(), `RUNNING ${stats.RUNNING}`);
          assert.equal(
            await tasks.locator('a.state-chip[data-state="PENDING"]').innerText(),
            `PENDING ${stats.PENDING}`,
          );
          await running.click();
          await shows(`tasks 1–${stats.RUNNING} of ${stats.RUNNING} · page 1 of 1`);
          assert.ok(page.url().endsWith(`#/jobs/${bigId}?state=RUNNING&order=desc`), page.url());
          assert.equal(await rows.count(), stats.RUNNING);
          assert.ok((await rows.locator(".badge").allInnerTexts()).every((s) => s === "RUNNING"));
          const ids = (await instances()).map(Number);
          assert.deepEqual(ids, ids.slice().sort((a, b) => b - a));

          // A state chosen is taken out again: every state. Pending tasks say why they wait; a reload of the
          // link shows the same table.
          await running.click();
          await shows("tasks 1–100 of 150 · page 1 of 2");
          await tasks.locator('a.state-chip[data-state="PENDING"]').click();
          await shows(`of ${stats.PENDING}`);
          const messages = await rows.locator("td:nth-child(10)").allInnerTexts();
          assert.equal(messages.length, 100);
          assert.ok(
            messages.every((m) => m.startsWith("resource pool /TaskPool has no room in its entitlement")),
            `pending tasks' messages: ${messages.slice(0, 3)}`,
          );
          await page.reload();
          await shows(`tasks 1–100 of ${stats.PENDING}`);
          assert.ok(page.url().endsWith(`#/jobs/${bigId}?state=PENDING&order=desc`), page.url());
          assert.equal(
            await tasks.locator("a.state-chip[aria-current]").getAttribute("data-state"),
            "PENDING",
          );
          assert.ok((await rows.locator(".badge").allInnerTexts()).every((s) => s === "PENDING"));
          // A refresh keeps the view.
          const updated = await page.locator("#status").innerText();
          await page.locator("#status", { hasNotText: updated }).waitFor({ timeout: WAIT_MS });
          await shows(`tasks 1–100 of ${stats.PENDING}`);
          assert.equal(await rows.count(), 100);
          watch.expectOnly("the tasks table of a big job");
        },
      );

      await t.step(
        "the tasks table shows several states at once, filters by names and hosts as the API does, and keeps " +
          "what is typed in its filter across refreshes",
        async () => {
          type TaskPage = {
            records: { instanceId: number; runtime: { state: string; host?: string } }[];
            pagination: { total: number };
          };
          const query = (spec: Record<string, unknown>) =>
            client.call<TaskPage>(`${TASK}::Query`, {
              jobId: { value: bigId },
              spec: { ...spec, pagination: { limit: 1000 } },
            });
          // A third state: three waiting instances stopped (no room is freed, so the others stay as they are).
          const waiting = (await query({ taskStates: ["PENDING"] })).records.slice(0, 3).map((r) =>
            r.instanceId
          );
          await client.call(`${TASK}::Stop`, {
            jobId: { value: bigId },
            ranges: waiting.map((i) => ({ from: i, to: i + 1 })),
          });
          const stats = await waitFor("three tasks KILLED", async () => {
            const r = await client.call<{ jobInfo: { runtime: { taskStats?: Record<string, number> } } }>(
              `${JOB}::Get`,
              { id: { value: bigId } },
            );
            const s = r.jobInfo.runtime.taskStats ?? {};
            return s.KILLED === 3 && s.RUNNING + s.PENDING === 147 ? s : undefined;
          }, WAIT_MS);

          await page.goto(`${up.url}/ui/?refresh=0.5#/jobs/${bigId}`);
          const tasks = page.locator("#tasks");
          const rows = tasks.locator("table.tasks tbody tr");
          const shows = (text: string) =>
            tasks.locator(".pager-top .page-of", { hasText: text }).waitFor({ timeout: WAIT_MS });
          const instances = async () => (await rows.locator("td:first-child").allInnerTexts()).map(Number);
          const chip = (state: string) => tasks.locator(`a.state-chip[data-state="${state}"]`);
          const chosen = () =>
            tasks.locator("a.state-chip[aria-current]").evaluateAll((cs) =>
              cs.map((c) => c.getAttribute("data-state"))
            );
          await shows("tasks 1–100 of 150");

          // Two states: the tasks in either, and only those.
          await chip("KILLED").click();
          await shows("tasks 1–3 of 3");
          await chip("RUNNING").click();
          const both = stats.RUNNING + 3;
          await shows(`tasks 1–${both} of ${both}`);
          assert.ok(page.url().endsWith(`#/jobs/${bigId}?state=KILLED,RUNNING`), page.url());
          assert.deepEqual(await chosen(), ["KILLED", "RUNNING"]);
          const states = await rows.locator(".badge").allInnerTexts();
          assert.equal(states.filter((s) => s === "KILLED").length, 3);
          assert.equal(states.filter((s) => s === "RUNNING").length, stats.RUNNING);
          assert.deepEqual(
            await instances(),
            (await query({ taskStates: ["KILLED", "RUNNING"] })).records.map((r) => r.instanceId),
          );
          // Again: that state is taken out.
          await chip("KILLED").click();
          await shows(`tasks 1–${stats.RUNNING} of ${stats.RUNNING}`);
          assert.deepEqual(await chosen(), ["RUNNING"]);

          // A host filter typed while the page refreshes keeps its text, focus and caret: the operator types
          // all of the host but its first letter, goes back to the start, waits, and types that letter.
          const host = (await query({ taskStates: ["RUNNING"] })).records[0].runtime.host!;
          const hosts = tasks.locator("#task-hosts");
          await hosts.click();
          await page.keyboard.type(host.slice(1));
          await page.keyboard.press("Home");
          for (let i = 0; i < 2; i++) {
            const updated = await page.locator("#status").innerText();
            await page.locator("#status", { hasNotText: updated }).waitFor({ timeout: WAIT_MS });
          }
          assert.deepEqual(
            await page.evaluate("[document.activeElement.id, document.activeElement.selectionStart]"),
            ["task-hosts", 0],
            "the input keeps the focus and the caret across refreshes",
          );
          await page.keyboard.type(host[0]);
          assert.equal(await hosts.inputValue(), host);
          assert.ok(page.url().endsWith(`#/jobs/${bigId}?state=RUNNING`), "typing does not apply the filter");
          await page.keyboard.press("Enter");
          const onHost = (await query({ taskStates: ["RUNNING"], hosts: [host] })).records;
          await shows(`tasks 1–${onHost.length} of ${onHost.length}`);
          assert.ok(page.url().endsWith(`#/jobs/${bigId}?state=RUNNING&host=${host}`), page.url());
          assert.deepEqual(await instances(), onHost.map((r) => r.instanceId));
          assert.ok((await rows.locator("td:nth-child(6)").allInnerTexts()).every((h) => h === host));

          // Names, matched exactly, in any state; the host filter cleared.
          await chip("ALL").click();
          await tasks.locator("#task-query button.clear").click();
          await shows("tasks 1–100 of 150");
          await tasks.locator("#task-names").fill("ui-big-140, ui-big-5, ui-big");
          await tasks.locator("#task-query button[type=submit]").click();
          await shows("tasks 1–2 of 2");
          assert.ok(page.url().endsWith(`#/jobs/${bigId}?name=ui-big-140,ui-big-5,ui-big`), page.url());
          const named = await query({ names: ["ui-big-140", "ui-big-5", "ui-big"] });
          assert.deepEqual(await instances(), named.records.map((r) => r.instanceId));
          assert.deepEqual(await instances(), [5, 140]);
          assert.deepEqual(await rows.locator("td:nth-child(2)").allInnerTexts(), ["ui-big-5", "ui-big-140"]);
          // With a state none of them is in: nothing, and the table says why.
          await chip("KILLED").click();
          await tasks.locator("td.empty", { hasText: "No task matches the filter" }).waitFor({
            timeout: WAIT_MS,
          });

          // Back: the inputs show the URL's filter again.
          await page.goBack();
          await shows("tasks 1–2 of 2");
          assert.equal(await tasks.locator("#task-names").inputValue(), "ui-big-140, ui-big-5, ui-big");
          await page.goBack();
          await shows("tasks 1–100 of 150");
          assert.equal(await tasks.locator("#task-names").inputValue(), "");
          await page.goBack();
          assert.ok(page.url().endsWith(`#/jobs/${bigId}?host=${host}`), page.url());
          const anyState = (await query({ hosts: [host] })).records.length;
          await shows(`tasks 1–${anyState} of ${anyState}`);
          assert.equal(await hosts.inputValue(), host);
          watch.expectOnly("filtering the tasks of a big job");
        },
      );

      await t.step("refresh pauses and resumes; an API error on a page is shown", async () => {
        await page.locator("#pause").click();
        assert.match(await page.locator("#status").innerText(), /paused/);
        await page.locator("#pause").click();
        assert.match(await page.locator("#status").innerText(), /Auto-refresh every 0.5 s/);
        watch.expectOnly("the views and actions");
        const unknown = "00000000-0000-4000-8000-000000000000";
        await page.goto(`${up.url}/ui/?refresh=0.5#/jobs/${unknown}`);
        await page.locator("#errors", { hasText: `not-found: job ${unknown} not found` }).waitFor({
          timeout: WAIT_MS,
        });
        watch.expectOnly("an unknown job", 404);
      });
      await page.close();
    } finally {
      await browser.close();
      await up.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
