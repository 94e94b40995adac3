/**
 * The app on a fake page and a fake API: the result line an action leaves stays through the refreshes of its
 * view and the view's own pages, and goes when the operator moves to another view; data stays, marked stale,
 * while the server does not answer; the hosts filter follows the URL; a hash no page has says so.
 */
import assert from "node:assert/strict";
import type { JobInfoJson, UiConfig } from "./api_types.ts";
import { UiApp } from "./client_app.ts";
import type { UiDocument } from "./client_dom.ts";
import { FakeElement } from "./dom_testing.ts";

const JOB = "peloton.api.job.JobManager";
const TASK = "peloton.api.task.TaskManager";

/** The page: every element the app asks for by id exists (page.ts's skeleton has them all). */
const elements = new Map<string, FakeElement>();
function byId(id: string): FakeElement {
  let el = elements.get(id);
  if (!el) {
    el = new FakeElement("div");
    el.id = id;
    elements.set(id, el);
  }
  return el;
}
const doc: UiDocument = {
  createElement: (tag) => new FakeElement(tag),
  getElementById: byId,
  activeElement: null,
};
(globalThis as unknown as { document: UiDocument }).document = doc;

/** The URL; the test fires `hashchange` itself, as the browser does when the hash changes. */
const url = { hash: "", search: "", href: "http://127.0.0.1:5392/ui/" };
Object.defineProperty(globalThis, "location", { value: url, configurable: true, writable: true });
/** The history's replaceState, which changes the hash without a hashchange, as the browser's does. */
const replaced: string[] = [];
Object.defineProperty(globalThis, "history", {
  value: {
    replaceState(_data: unknown, _title: string, hash: string) {
      replaced.push(hash);
      url.hash = hash;
    },
  },
  configurable: true,
});

function job(id: string): JobInfoJson {
  return {
    id: { value: id },
    config: { name: `job-${id}`, type: "BATCH", instanceCount: 2 },
    runtime: { state: "KILLED", goalState: "KILLED", taskStats: { KILLED: 2 } },
  };
}

/** While true, the server cannot be reached: every call fails as fetch does then. */
let down = false;

/** The API: a job's Get and TaskManager's Start answer; every other call fails, which the page shows as errors. */
globalThis.fetch = (_input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
  if (down) return Promise.reject(new TypeError("Failed to fetch"));
  const procedure = new Headers(init?.headers).get("rpc-procedure");
  const body = JSON.parse(String(init?.body ?? "{}"));
  const reply = (status: number, json: unknown) => Promise.resolve(Response.json(json, { status }));
  if (procedure === `${JOB}::Get`) return reply(200, { jobInfo: job(body.id.value) });
  if (procedure === `${TASK}::Start`) {
    return reply(200, { startedInstanceIds: [0, 1], invalidInstanceIds: [] });
  }
  return reply(503, { code: "unavailable", message: "not in this test" });
};

const CONFIG: UiConfig = { refreshMs: 3000, jobStates: ["RUNNING", "KILLED"], activeJobStates: ["RUNNING"] };

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(ok(), `timed out waiting for ${what}`);
}

/** Goes to `hash` as a link does (which starts a refresh). */
function go(hash: string): void {
  url.hash = hash;
  dispatchEvent(new Event("hashchange"));
}

/** Runs job `id`'s Start through its confirm step, once its view shows; waits for the answer in the result line. */
async function start(id: string): Promise<void> {
  const shown = () => byId("view").select(`section[data-job-id=${id}]`)[0];
  await until(`job ${id}'s view`, () => shown() !== undefined);
  shown().select("button[data-action=Start job]")[0].click();
  byId("confirm-yes").click();
  await until("the answer", () => !/sending/.test(byId("result-text").textContent));
}

const result = () => ({ hidden: byId("result").hidden, text: byId("result-text").textContent });

/** The one app of the page (its listeners are the window's: a second would answer the same events). */
let app: UiApp | undefined;
function theApp(): UiApp {
  if (!app) {
    app = new UiApp(CONFIG);
    // No timed refreshes: the test refreshes when it means to.
    app.setPaused(true);
    byId("result").hidden = true;
    app.start();
  }
  return app;
}

Deno.test({
  name: "the result line stays through refreshes and pages of its view, and clears on going to another view",
  // The API client's per-call timeout signals outlive the fake calls they bound.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    url.hash = "#/jobs/j1";
    const app = theApp();

    await start("j1");
    assert.deepEqual(result(), { hidden: false, text: "Job job-j1: starting 2 instances" });
    await app.refresh();
    assert.equal(result().hidden, false, "a refresh of the same view keeps it");
    go("#/jobs/j1?page=2");
    assert.equal(result().hidden, false, "another page of the job's tasks is the same view");

    go("#/pools");
    assert.equal(result().hidden, true, "the pools view does not show the job's result");

    // Another job is another view too; so is the job list.
    go("#/jobs/j1");
    await start("j1");
    assert.equal(result().hidden, false);
    go("#/jobs/j2");
    assert.equal(result().hidden, true, "job j2's view does not show job j1's result");
    await start("j2");
    assert.deepEqual(result(), { hidden: false, text: "Job job-j2: starting 2 instances" });
    go("#/jobs");
    assert.equal(result().hidden, true, "the job list does not show it");
    await app.refresh();
  },
});

Deno.test({
  name:
    "when the server stops answering, the page keeps its data, marked stale, and says when it last updated",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const app = theApp();
    go("#/jobs/j3");
    const shown = () => byId("view").select("section[data-job-id=j3]").length === 1;
    await until("job j3's view", shown);
    await app.refresh();
    const status = () => byId("status").textContent;
    const updated = /^Auto-refresh paused · updated (\d\d:\d\d:\d\d UTC)$/.exec(status());
    assert.ok(updated, status());
    assert.equal(byId("view").hasClass("stale"), false);

    down = true;
    try {
      await app.refresh();
      assert.ok(shown(), "the job's view stays");
      assert.equal(byId("view").select("h2")[0].textContent, "job-j3 KILLED goal KILLED");
      assert.match(byId("summary").textContent, /Resource pools/);
      assert.equal(
        status(),
        `Auto-refresh paused · last updated ${updated[1]}; the server is not answering: ` +
          "peloton.api.job.JobManager::Query: unavailable: cannot reach the server: Failed to fetch",
      );
      assert.ok(byId("view").hasClass("stale") && byId("summary").hasClass("stale"), "marked stale");
      assert.equal(byId("errors").hidden, false, "the errors are shown");
    } finally {
      down = false;
    }
    await app.refresh();
    assert.match(status(), /^Auto-refresh paused · updated \d\d:\d\d:\d\d UTC$/);
    assert.equal(byId("view").hasClass("stale"), false);
  },
});

Deno.test({
  name: "the hosts filter is the URL's: typing replaces the hash, a hash change shows its filter",
  sanitizeOps: false,
  sanitizeResources: false,
  fn() {
    theApp();
    go("#/hosts?filter=agent-1");
    assert.equal(byId("filter").value, "agent-1");
    assert.equal(byId("filter").hidden, false);
    byId("filter").value = "rack=r2";
    byId("filter").fire("input");
    assert.deepEqual(replaced.slice(-1), ["#/hosts?filter=rack%3Dr2"]);
    // Another view and back: the link's filter, not what was typed last.
    go("#/pools");
    assert.equal(byId("filter").hidden, true);
    go("#/hosts");
    assert.equal(byId("filter").value, "");
  },
});

Deno.test({
  name: "a hash no page has shows that there is no such page, with a link to the jobs list",
  sanitizeOps: false,
  sanitizeResources: false,
  fn() {
    theApp();
    go("#/nonsense");
    const page = byId("view").select("section[id=not-found]")[0];
    assert.ok(page, "the not-found page");
    assert.equal(page.select("h2")[0].textContent, "No such page");
    assert.match(page.textContent, /There is no page at #\/nonsense\./);
    assert.equal(page.select("a")[0].getAttribute("href"), "#/jobs");
    assert.equal(byId("view").select("table").length, 0, "not the job list");
  },
});
