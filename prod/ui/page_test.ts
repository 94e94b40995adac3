/** The web UI's page and handler, without a browser: what is served where, and how the script is built. */
import assert from "node:assert/strict";
import type { JobInfoJson, RespoolInfoJson, UpdateInfoJson } from "./api_types.ts";
import { CLIENT_CODE, clientScript, serveUi, UI_CONFIG, uiPage } from "./page.ts";
import { hostsHash, parseRoute } from "./client_app.ts";
import { activeUpdate, jobActions, matches, workflowActions } from "./client_views.ts";
import { JobList, jobListHash, jobListRequest, parseJobListQuery } from "./client_job_list.ts";
import { hostActions, poolTree } from "./client_cluster.ts";
import { count, stateTone } from "./client_dom.ts";
import { parseTaskListQuery, TaskList } from "./client_tasks.ts";

const CLIENT_FILES = [
  "client_dom.ts",
  "client_api.ts",
  "client_views.ts",
  "client_job_config.ts",
  "client_tasks.ts",
  "client_task_details.ts",
  "client_workflow.ts",
  "client_job_list.ts",
  "client_pool_queue.ts",
  "client_cluster.ts",
  "client_app.ts",
];

function get(path: string, method = "GET"): Response | undefined {
  const url = new URL(path, "http://127.0.0.1:5392");
  return serveUi(new Request(url, { method }), url);
}

Deno.test("GET /ui/ serves the page as HTML with a CSP that allows only its own script, style and API", async () => {
  const res = get("/ui/")!;
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
  const html = await res.text();
  assert.match(html, /^<!doctype html>/);
  assert.match(html, /<title>Peloton<\/title>/);
  for (
    const id of [
      "summary",
      "view",
      "errors",
      "login",
      "confirm",
      "confirm-number",
      "result",
      "pause",
      "nav-jobs",
    ]
  ) {
    assert.match(html, new RegExp(`id="${id}"`), `the page has #${id}`);
  }
  assert.doesNotMatch(html, /https?:\/\/|<script src|@import|url\(/, "nothing is fetched from elsewhere");
  assert.deepEqual(html.match(/<link[^>]*>/g), ['<link rel="icon" href="data:,">'], "not even a favicon");
  const csp = res.headers.get("content-security-policy")!;
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/]+=*'/);
  assert.match(csp, /connect-src 'self'/);
  assert.equal(uiPage().html, html, "built once");
});

Deno.test("/ and /ui redirect to /ui/; other paths and methods are left to the API", () => {
  for (const path of ["/", "/ui"]) {
    const res = get(path)!;
    assert.equal(res.status, 302);
    assert.equal(res.headers.get("location"), "/ui/");
  }
  assert.equal(get("/ui/", "POST"), undefined);
  assert.equal(get("/api/v1", "POST"), undefined);
  assert.equal(get("/health"), undefined);
  assert.equal(get("/ui/other"), undefined);
});

Deno.test("the client script parses and holds every client function, and the client files have no module state", async () => {
  const script = clientScript();
  new Function(script); // throws a SyntaxError if the stripped sources do not form a valid script
  assert.doesNotMatch(script, /:\s*(string|number|boolean|UiElement)\b[,)]/, "types are stripped");
  for (const file of CLIENT_FILES) {
    const mod = await import(`./${file}`) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) {
      if (typeof value !== "function") continue;
      assert.ok(CLIENT_CODE.includes(value), `${file}: ${name} is in CLIENT_CODE, so the page has it`);
    }
    // Functions are inlined by their source: a module-level value they used would not exist in the page.
    const text = await Deno.readTextFile(new URL(file, import.meta.url));
    const state = /^(?:export )?(?:const|let|var) (?!\w+_CODE\b)\w+/m.exec(text);
    assert.equal(state, null, `${file}: module-level ${state?.[0]}; move it into a function or class`);
  }
});

Deno.test("routes come from the hash", () => {
  const all = { name: "", owner: "", state: "", page: 1, size: JobList.DEFAULT_SIZE };
  assert.deepEqual(parseRoute(""), { view: "jobs", query: all });
  assert.deepEqual(parseRoute("#/jobs"), { view: "jobs", query: all });
  assert.deepEqual(parseRoute("#/jobs?state=running&page=3&size=1&name=%20web%20"), {
    view: "jobs",
    query: { ...all, name: "web", state: "RUNNING", page: 3, size: 1 },
  });
  assert.deepEqual(parseRoute("#/jobs/abc-1"), { view: "job", id: "abc-1", tasks: parseTaskListQuery("") });
  assert.deepEqual(parseRoute("#/jobs/abc-1?state=pending&sort=host&order=desc&page=2"), {
    view: "job",
    id: "abc-1",
    tasks: {
      states: ["PENDING"],
      names: [],
      hosts: [],
      sort: "host",
      desc: true,
      page: 2,
      size: TaskList.DEFAULT_SIZE,
    },
  });
  assert.deepEqual(parseRoute("#/pools"), { view: "pools" });
  assert.deepEqual(parseRoute("#/hosts/"), { view: "hosts", filter: "" });
  assert.deepEqual(parseRoute("#/"), { view: "jobs", query: all });
});

Deno.test("the hosts filter is in the URL: #/hosts?filter=TEXT, as typed", () => {
  assert.deepEqual(parseRoute("#/hosts?filter=agent-1"), { view: "hosts", filter: "agent-1" });
  for (const typed of ["", "agent-1", "rack=r1 & b", "ui hosts ", "пул"]) {
    assert.deepEqual(parseRoute(hostsHash(typed)), { view: "hosts", filter: typed }, typed);
  }
  assert.equal(hostsHash(""), "#/hosts");
  assert.equal(hostsHash("rack=r1"), "#/hosts?filter=rack%3Dr1");
});

Deno.test("a hash no page has is its own route, not the job list", () => {
  assert.deepEqual(parseRoute("#/nonsense"), { view: "unknown", path: "nonsense" });
  assert.deepEqual(parseRoute("#/nonsense/deeper?x=1"), { view: "unknown", path: "nonsense/deeper" });
  assert.deepEqual(parseRoute("#/%E0%A4%A"), { view: "unknown", path: "%E0%A4%A" }, "not even decodable");
});

Deno.test("the job list's query: out-of-range values fall back, the hash round-trips, the API pages it", () => {
  const q = parseJobListQuery("page=0&size=5000&owner=ann");
  assert.deepEqual(q, { name: "", owner: "ann", state: "", page: 1, size: JobList.DEFAULT_SIZE });
  assert.equal(parseJobListQuery("page=2.5").page, 1);
  assert.equal(jobListHash(q), "#/jobs?owner=ann", "defaults are left out");
  const third = { name: "a b", owner: "", state: "ACTIVE", page: 3, size: 20 };
  assert.equal(jobListHash(third), "#/jobs?name=a+b&state=ACTIVE&size=20&page=3");
  assert.deepEqual(parseRoute(jobListHash(third)), { view: "jobs", query: third });
  assert.deepEqual(jobListRequest(third, ["PENDING", "RUNNING"]), {
    spec: { name: "a b", jobStates: ["PENDING", "RUNNING"], pagination: { offset: 40, limit: 20 } },
  });
  assert.deepEqual(jobListRequest({ ...third, name: "", state: "KILLED", page: 1 }, []), {
    spec: { jobStates: ["KILLED"], pagination: { offset: 0, limit: 20 } },
  });
});

Deno.test("the page tells the script Peloton's job states and which of them are active", () => {
  assert.deepEqual(UI_CONFIG.jobStates, [
    "INITIALIZED",
    "PENDING",
    "RUNNING",
    "SUCCEEDED",
    "FAILED",
    "KILLED",
    "KILLING",
    "UNINITIALIZED",
    "DELETED",
  ]);
  assert.deepEqual(UI_CONFIG.activeJobStates, [
    "INITIALIZED",
    "PENDING",
    "RUNNING",
    "KILLING",
    "UNINITIALIZED",
  ]);
  assert.ok(clientScript().includes(`new UiApp(${JSON.stringify(UI_CONFIG)}).start();`));
});

const pool = (id: string, path: string, parent?: string, children: string[] = []): RespoolInfoJson => ({
  id: { value: id },
  path: { value: path },
  parent: parent ? { value: parent } : undefined,
  children: children.map((value) => ({ value })),
  config: { name: path.split("/").pop() || "root", resources: [] },
});

Deno.test("pools are listed in tree order with their depth", () => {
  const pools = [
    pool("b", "/B", "root"),
    pool("a1", "/A/x", "a"),
    pool("root", "/", undefined, ["b", "a"]),
    pool("a", "/A", "root", ["a1"]),
  ];
  assert.deepEqual(poolTree(pools).map((p) => `${p.depth}:${p.pool.path.value}`), [
    "0:/",
    "1:/A",
    "2:/A/x",
    "1:/B",
  ]);
});

const job = (state: string, updateId?: string): JobInfoJson => ({
  id: { value: "j1" },
  config: { name: "web", type: "SERVICE", instanceCount: 3 },
  runtime: { state, goalState: "RUNNING", updateID: updateId ? { value: updateId } : undefined },
});

const update = (id: string, state: string): UpdateInfoJson => ({
  updateId: { value: id },
  jobId: { value: "j1" },
  type: "RESTART",
  status: { state, numTasksDone: 1, numTasksFailed: 0, numTasksRemaining: 2 },
});

Deno.test("actions call the CLI's procedures and are disabled where they cannot apply", () => {
  const [stop, start] = jobActions(job("RUNNING"));
  assert.equal(stop.procedure, "peloton.api.task.TaskManager::Stop");
  assert.deepEqual(stop.body, { jobId: { value: "j1" } });
  assert.equal(stop.describe({ stoppedInstanceIds: [0, 1, 2] }, stop.body), "Job web: stopping 3 instances");
  assert.equal(stop.describe({ stoppedInstanceIds: [0] }, stop.body), "Job web: stopping 1 instance");
  assert.equal(start.describe({ startedInstanceIds: [0] }, start.body), "Job web: starting 1 instance");
  assert.equal(stop.disabled, false);
  // Ended with its goal: nothing to stop. (KILLED while its goal RUNNING restarts it has not ended.)
  assert.equal(
    jobActions({ ...job("KILLED"), runtime: { state: "KILLED", goalState: "KILLED" } })[0].disabled,
    true,
  );
  assert.equal(jobActions(job("KILLED"))[0].disabled, false);
  assert.equal(start.procedure, "peloton.api.task.TaskManager::Start");

  const [pause, resume, abort] = workflowActions(update("u1", "ROLLING_FORWARD"));
  assert.equal(pause.procedure, "peloton.api.v0.update.svc.UpdateService::PauseUpdate");
  assert.deepEqual(pause.body, { updateId: { value: "u1" } });
  assert.deepEqual([pause.disabled, resume.disabled, abort.disabled], [false, true, false]);
  const paused = workflowActions(update("u1", "PAUSED"));
  assert.deepEqual(paused.map((a) => a.disabled), [true, false, false]);

  const [begin, complete] = hostActions({ hostname: "agent-1", state: "HOST_STATE_DOWN" });
  assert.equal(begin.procedure, "peloton.api.v0.host.svc.HostService::StartMaintenance");
  assert.deepEqual(complete.body, { hostname: "agent-1" });
  assert.deepEqual([begin.disabled, complete.disabled], [true, false]);
  // Complete maintenance is offered only where it can succeed: once the host's machine is down.
  const completable = (state: string) => !hostActions({ hostname: "agent-1", state })[1].disabled;
  assert.deepEqual(
    ["HOST_STATE_UP", "HOST_STATE_DRAINING", "HOST_STATE_DRAINED", "HOST_STATE_DOWN", "HOST_STATE_UNKNOWN"]
      .map(completable),
    [false, false, false, true, false],
  );
});

Deno.test("the active workflow is the one the job names, else the newest unfinished one", () => {
  const list = [update("u3", "SUCCEEDED"), update("u2", "PAUSED"), update("u1", "ABORTED")];
  assert.equal(activeUpdate(job("RUNNING", "u2"), list)?.updateId.value, "u2");
  assert.equal(activeUpdate(job("RUNNING"), list)?.updateId.value, "u2");
  assert.equal(activeUpdate(job("RUNNING", "u3"), [update("u3", "SUCCEEDED")]), undefined);
  assert.ok(matches("RUN", ["x", "RUNNING"]));
  assert.ok(matches(" ", ["x"]));
  assert.ok(!matches("zzz", ["x", undefined]));
});

Deno.test("states are coloured by family", () => {
  const tones = [
    "RUNNING",
    "UP",
    "HOST_STATE_UP",
    "SUCCEEDED",
    "FAILED",
    "HOST_STATE_DOWN",
    "KILLED",
    "DRAINING",
  ]
    .map(stateTone);
  assert.deepEqual(tones, ["ok", "ok", "ok", "done", "bad", "bad", "off", "warn"]);
  assert.equal(stateTone("PENDING"), "wait");
});

Deno.test("counts are written with their thousands separated, whatever the locale", () => {
  assert.deepEqual([0, 999, 1000, 10_000, 1_234_567].map(count), [
    "0",
    "999",
    "1,000",
    "10,000",
    "1,234,567",
  ]);
});

Deno.test("the page's inputs promise only what the server does and have names: the job name, the hosts filter", () => {
  const html = uiPage().html;
  const input = (id: string) => new RegExp(`<input id="${id}"[^>]*>`).exec(html)?.[0] ?? "";
  // Any case of any letter, on SQLite too (prod/store/store_suite.ts checks both stores).
  assert.match(input("job-name"), /placeholder="Name \(part, any case\)"/);
  assert.match(input("job-name"), /aria-label="Job name"/);
  assert.match(input("filter"), /aria-label="Filter hosts"/);
  assert.match(
    html,
    /<div id="confirm" role="dialog" aria-modal="true" aria-labelledby="confirm-text" hidden>/,
  );
});
