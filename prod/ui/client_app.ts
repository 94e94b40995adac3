/**
 * Browser code of the web UI, part 5: the app. It routes on the URL hash (#/jobs?QUERY, #/jobs/ID?QUERY,
 * #/pools, #/hosts?filter=TEXT), loads what the view needs on every refresh (every few seconds unless paused),
 * shows every API error it gets, keeps the last data (marked stale) while the server does not answer, asks for
 * credentials on a 401, and runs operator actions after a confirm step.
 * Runs in the browser (see client_dom.ts for the rules).
 */
import type {
  ActionPicks,
  AdmissionWaitsJson,
  HostInfoJson,
  HostPoolJson,
  JobInfoJson,
  JobListQuery,
  JobPageJson,
  PendingTasksJson,
  RespoolInfoJson,
  SecretJson,
  Snapshot,
  TaskDetails,
  TaskListQuery,
  TaskPageJson,
  UiAction,
  UiConfig,
  UpdateInfoJson,
  WorkflowInfoJson,
} from "./api_types.ts";
import { errorText, needsSignIn, UiApi, unreachable } from "./client_api.ts";
import { byId, h, keepingFocus, uiDocument, type UiElement, type UiEvent, when } from "./client_dom.ts";
import { hostsView, poolsView, summaryView } from "./client_cluster.ts";
import { hasQueuedDemand, pendingTasksRequest, queuesToLoad } from "./client_pool_queue.ts";
import {
  JobList,
  jobListHash,
  jobListRequest,
  jobsView,
  parseJobListQuery,
  readJobListQuery,
  showJobListQuery,
} from "./client_job_list.ts";
import { loadTaskDetails } from "./client_task_details.ts";
import { parseTaskListQuery, TaskFilter, taskListHash, taskListRequest } from "./client_tasks.ts";
import { actionBody, actionId, actionVerb, jobView, Rpc, wholeAmount } from "./client_views.ts";
import { instanceProgressRequest } from "./client_workflow.ts";

export type Route =
  | { view: "jobs"; query: JobListQuery }
  | { view: "pools" }
  | { view: "hosts"; filter: string }
  | { view: "job"; id: string; tasks: TaskListQuery }
  /** A hash no page has: `path` is what it asked for. */
  | { view: "unknown"; path: string };

export function parseRoute(hash: string): Route {
  const [path, search = ""] = hash.replace(/^#\/?/, "").split("?", 2);
  let parts: string[];
  try {
    parts = path.split("/").filter((p) => p).map(decodeURIComponent);
  } catch {
    return { view: "unknown", path };
  }
  if (parts[0] === "jobs" && parts[1]) {
    return { view: "job", id: parts[1], tasks: parseTaskListQuery(search) };
  }
  if (parts[0] === "pools") return { view: "pools" };
  if (parts[0] === "hosts") return { view: "hosts", filter: new URLSearchParams(search).get("filter") ?? "" };
  if (!parts.length || parts[0] === "jobs") return { view: "jobs", query: parseJobListQuery(search) };
  return { view: "unknown", path };
}

/** The hash of the hosts view filtered by `filter` (as typed); the plain view is `#/hosts`. */
export function hostsHash(filter: string): string {
  return filter ? `#/hosts?${new URLSearchParams({ filter })}` : "#/hosts";
}

/** The page for a hash no page has: says so, and links to the jobs list. */
export function notFoundView(path: string): UiElement {
  return h(
    "section",
    { id: "not-found" },
    h("h2", {}, "No such page"),
    h(
      "p",
      {},
      `There is no page at #/${path}. `,
      h("a", { href: "#/jobs" }, "Go to the jobs list"),
      ", or pick a page above.",
    ),
  );
}

/**
 * Which view a route shows: the job list, the pools, the hosts, or one job's page. Other pages, filters and
 * sorts of the same list or job are the same view.
 */
export function viewOf(route: Route): string {
  return route.view === "job" ? `job ${route.id}` : route.view;
}

export class UiApp {
  readonly api = new UiApi();
  readonly refreshMs: number;
  #snapshot: Snapshot = {};
  #errors: unknown[] = [];
  /** When the data shown was loaded: the last refresh that got any answer. */
  #refreshedAt?: Date;
  /** Why the last refresh got no answer at all, its data kept from before; undefined after one that did. */
  #stale?: string;
  #timer?: ReturnType<typeof setTimeout>;
  #paused = false;
  #busy = false;
  #again = false;
  #pending?: UiAction;
  /**
   * The job view's instance rows the operator opened to their steps; kept across refreshes and the tasks
   * table's pages, not across views or jobs.
   */
  #openInstances = new Set<number>();
  /** The tasks table's tasks the operator opened to their events and logs, by instance id; as `#openInstances`. */
  #openTasks = new Set<number>();
  /** The job whose rows `#openInstances` and `#openTasks` hold ("" for none). */
  #openJob = "";
  /**
   * The view shown (`viewOf`). An action's result line belongs to the view it was run from: it stays through
   * that view's refreshes and pages, and goes when the operator moves to another view.
   */
  #view = "";
  /** The pools view's pools (by id) whose queues the operator opened; kept across refreshes, not across views. */
  #openPools = new Set<string>();
  /** The tasks table's name and host filter: one form for the page's life, so a render keeps what is typed. */
  readonly #taskFilter = new TaskFilter((names, hosts) => this.#filterTasks(names, hosts));

  /** `?refresh=SECONDS` in the page's URL overrides the default period (at least half a second). */
  constructor(readonly config: UiConfig) {
    const asked = Number(new URLSearchParams(location.search).get("refresh"));
    this.refreshMs = asked > 0 ? Math.max(500, asked * 1000) : config.refreshMs;
  }

  start(): void {
    byId("pause").addEventListener("click", () => this.setPaused(!this.#paused));
    byId("refresh-now").addEventListener("click", () => this.refresh());
    byId("login").addEventListener("submit", (e) => {
      e.preventDefault();
      this.#signIn();
    });
    byId("sign-out").addEventListener("click", () => {
      this.api.signOut();
      this.refresh();
    });
    byId("confirm-yes").addEventListener("click", () => this.#confirmed());
    byId("confirm-no").addEventListener("click", () => this.#closeConfirm());
    byId("confirm-number").addEventListener("input", () => this.#checkPicks());
    addEventListener("keydown", (e) => this.#confirmKey(e as unknown as UiEvent));
    byId("result-close").addEventListener("click", () => {
      byId("result").hidden = true;
    });
    byId("filter").addEventListener("input", () => {
      // The filter lives in the URL, as the other views' do; typing replaces the history entry, and the
      // view filters what it has, so no hashchange (a reload of the data) comes of it.
      const history =
        (globalThis as unknown as { history: { replaceState(d: null, t: string, u: string): void } })
          .history;
      history.replaceState(null, "", hostsHash(byId("filter").value));
      this.render();
    });
    byId("job-query").addEventListener("submit", (e) => {
      e.preventDefault();
      this.#go(jobListHash(readJobListQuery()));
    });
    for (const id of ["job-state", "job-size"]) {
      byId(id).addEventListener("change", () => this.#go(jobListHash(readJobListQuery())));
    }
    addEventListener("hashchange", () => {
      const route = parseRoute(location.hash);
      const view = viewOf(route);
      if (view !== this.#view) byId("result").hidden = true;
      this.#view = view;
      const job = route.view === "job" ? route.id : "";
      if (job !== this.#openJob) {
        this.#openInstances.clear();
        this.#openTasks.clear();
      }
      if (route.view !== "pools") this.#openPools.clear();
      this.#openJob = job;
      this.#syncForms();
      this.render();
      this.refresh();
    });
    this.#view = viewOf(parseRoute(location.hash));
    this.#syncForms();
    this.refresh();
  }

  /** Goes to `hash`; the hash change loads its view (or, when the hash stays, a refresh does). */
  #go(hash: string): void {
    if (location.hash === hash) this.refresh();
    else location.hash = hash;
  }

  /** The job's tasks with `names` and `hosts`, from the first page, in the same states, order and size. */
  #filterTasks(names: string[], hosts: string[]): void {
    const route = parseRoute(location.hash);
    if (route.view === "job") this.#go(taskListHash(route.id, { ...route.tasks, names, hosts, page: 1 }));
  }

  /** Puts the URL's query into the forms that show it. */
  #syncForms(): void {
    const route = parseRoute(location.hash);
    if (route.view === "jobs") showJobListQuery(route.query);
    if (route.view === "job") this.#taskFilter.show(route.tasks);
    if (route.view === "hosts") byId("filter").value = route.filter;
  }

  setPaused(paused: boolean): void {
    this.#paused = paused;
    const button = byId("pause");
    button.textContent = paused ? "Resume auto-refresh" : "Pause auto-refresh";
    button.setAttribute("aria-pressed", String(paused));
    clearTimeout(this.#timer);
    this.#renderStatus();
    if (!paused) this.refresh();
  }

  /** Loads everything the current view shows; a second call while one runs makes it run again after. */
  async refresh(): Promise<void> {
    if (this.#busy) {
      this.#again = true;
      return;
    }
    this.#busy = true;
    clearTimeout(this.#timer);
    try {
      const route = parseRoute(location.hash);
      const errors: unknown[] = [];
      let answered = 0;
      const load = <T>(p: Promise<T>): Promise<T | undefined> =>
        p.then((v) => {
          answered++;
          return v;
        }, (e) => {
          errors.push(e);
          return undefined;
        });
      const queryJobs = (body: unknown) => load(this.api.call<JobPageJson>(`${Rpc.JOB}::Query`, body));
      const { jobStates, activeJobStates } = this.config;
      const [jobPage, jobCounts, activeJobs, pools, hosts, hostPools, job] = await Promise.all([
        route.view === "jobs" ? queryJobs(jobListRequest(route.query, activeJobStates)) : undefined,
        this.#countJobs(jobStates, queryJobs),
        queryJobs({ spec: { jobStates: activeJobStates, pagination: { limit: JobList.ACTIVE_LIMIT } } }),
        load(this.api.call<{ resourcePools: RespoolInfoJson[] }>(`${Rpc.RESPOOL}::Query`, {})),
        load(this.api.call<{ hostInfos: HostInfoJson[] }>(`${Rpc.HOST}::QueryHosts`, {})),
        route.view === "hosts"
          ? load(this.api.call<{ pools: HostPoolJson[] }>(`${Rpc.HOST}::ListHostPools`, {}))
          : undefined,
        route.view === "job" ? this.#loadJob(route.id, route.tasks, load) : Promise.resolve(undefined),
      ]);
      const [poolWaits, poolQueues] = route.view === "pools" && pools
        ? await Promise.all([
          this.#loadWaits(pools.resourcePools, load),
          this.#loadQueues(pools.resourcePools, load),
        ])
        : [{}, {}];
      this.#errors = errors;
      if (answered === 0 && errors.length && !errors.some(needsSignIn)) {
        // Nothing answered: the data from before stays, marked stale, rather than a page of blanks that
        // says it was just updated. (A 401 is an answer of its own: the sign-in form asks for credentials.)
        const first = errorText(errors[0]);
        this.#stale = errors.every(unreachable)
          ? `the server is not answering: ${first}`
          : `every call failed: ${first}`;
      } else {
        this.#snapshot = {
          jobPage,
          jobPageFor: route.view === "jobs" ? jobListHash(route.query) : undefined,
          jobCounts,
          activeJobs,
          pools: pools?.resourcePools,
          poolWaits,
          poolQueues,
          hosts: hosts?.hostInfos,
          hostPools: hostPools?.pools,
          job,
        };
        this.#stale = undefined;
        this.#refreshedAt = new Date();
      }
      this.render();
    } catch (e) {
      this.#errors = [e];
      this.#renderErrors();
    } finally {
      this.#busy = false;
    }
    if (this.#again) {
      this.#again = false;
      return this.refresh();
    }
    // Asking again without credentials would only repeat the 401: wait for the sign-in form instead.
    if (!this.#paused && !this.#signInNeeded()) {
      this.#timer = setTimeout(() => this.refresh(), this.refreshMs);
    }
  }

  /** Jobs in each state, each counted by the API (the total of a one-job page); undefined if any failed. */
  async #countJobs(
    states: string[],
    queryJobs: (body: unknown) => Promise<JobPageJson | undefined>,
  ): Promise<Record<string, number> | undefined> {
    const pages = await Promise.all(
      states.map((s) => queryJobs({ spec: { jobStates: [s], pagination: { limit: 1 } } })),
    );
    if (pages.some((p) => !p)) return undefined;
    return Object.fromEntries(states.map((s, i) => [s, pages[i]!.pagination.total]));
  }

  /** Why the leaf pools with queued demand hold it (`GetAdmissionWaits`), by pool id. */
  async #loadWaits(
    pools: RespoolInfoJson[],
    load: <T>(p: Promise<T>) => Promise<T | undefined>,
  ): Promise<Record<string, AdmissionWaitsJson>> {
    const queued = pools.filter(hasQueuedDemand);
    const answers = await Promise.all(
      queued.map((p) =>
        load(this.api.call<{ waits?: AdmissionWaitsJson }>(`${Rpc.RESPOOL}::GetAdmissionWaits`, { id: p.id }))
      ),
    );
    const out: Record<string, AdmissionWaitsJson> = {};
    queued.forEach((p, i) => {
      const waits = answers[i]?.waits;
      if (waits) out[p.id.value] = waits;
    });
    return out;
  }

  /** What waits in the queues of the pools the operator opened (`GetPendingTasks`), by pool id; null if it failed. */
  async #loadQueues(
    pools: RespoolInfoJson[],
    load: <T>(p: Promise<T>) => Promise<T | undefined>,
  ): Promise<Record<string, PendingTasksJson | null>> {
    const open = queuesToLoad(pools, this.#openPools);
    const answers = await Promise.all(
      open.map((p) =>
        load(
          this.api.call<PendingTasksJson>(`${Rpc.RESMGR}::GetPendingTasks`, pendingTasksRequest(p.id.value)),
        )
      ),
    );
    return Object.fromEntries(open.map((p, i) => [p.id.value, answers[i] ?? null]));
  }

  /**
   * The job, the page of its tasks the table shows (`q`) and its workflows; then, only if it has workflows,
   * its current or last one with each instance's steps (after the job's Get, whose instance count bounds how
   * many steps to ask for); and the events and logs of the tasks opened on that page (their errors are shown
   * in their place, not above).
   */
  #loadJob(
    id: string,
    q: TaskListQuery,
    load: <T>(p: Promise<T>) => Promise<T | undefined>,
  ): Promise<Snapshot["job"]> {
    const jobId = { value: id };
    const info = load(
      this.api.call<{ jobInfo: JobInfoJson; secrets?: SecretJson[] }>(`${Rpc.JOB}::Get`, { id: jobId }),
    );
    const tasks = load(this.api.call<TaskPageJson>(`${Rpc.TASK}::Query`, taskListRequest(id, q)));
    const updates = load(
      this.api.call<{ updateInfo: UpdateInfoJson[] }>(`${Rpc.UPDATE}::ListUpdates`, { jobID: jobId }),
    );
    const workflows = Promise.all([info, updates]).then(([i, u]) =>
      i?.jobInfo && u?.updateInfo?.length
        ? load(
          this.api.call<{ workflowInfos?: WorkflowInfoJson[] }>(
            `${Rpc.STATELESS}::ListJobWorkflows`,
            instanceProgressRequest(id, i.jobInfo.config.instanceCount),
          ),
        )
        : undefined
    );
    const opened = [...this.#openTasks];
    const details = opened.length
      ? tasks.then(async (t): Promise<Record<number, TaskDetails>> => {
        const onPage = new Set((t?.records ?? []).map((r) => r.instanceId));
        const ids = opened.filter((i) => onPage.has(i));
        const loaded = await Promise.all(ids.map((i) => loadTaskDetails(this.api, id, i)));
        return Object.fromEntries(ids.map((i, k) => [i, loaded[k]]));
      })
      : undefined;
    return Promise.all([info, tasks, updates, workflows, details]).then(([i, t, u, w, d]) => ({
      info: i?.jobInfo,
      secrets: i?.secrets,
      tasks: t,
      tasksFor: taskListHash(id, q),
      updates: u?.updateInfo,
      workflows: w && (w.workflowInfos ?? []),
      taskDetails: d,
    }));
  }

  #toggleInstance(instanceId: number): void {
    if (!this.#openInstances.delete(instanceId)) this.#openInstances.add(instanceId);
    this.render();
  }

  /** Opens or closes a task's events and logs; one opened is loaded now rather than at the next refresh. */
  #toggleTask(instanceId: number): void {
    const opened = !this.#openTasks.delete(instanceId);
    if (opened) this.#openTasks.add(instanceId);
    this.render();
    if (opened) this.refresh();
  }

  /** Opens or closes a pool's queue; one opened is loaded now rather than at the next refresh. */
  #togglePool(poolId: string): void {
    const opened = !this.#openPools.delete(poolId);
    if (opened) this.#openPools.add(poolId);
    this.render();
    if (opened) this.refresh();
  }

  render(): void {
    const route = parseRoute(location.hash);
    const active = route.view === "job" ? "jobs" : route.view;
    for (const v of ["jobs", "pools", "hosts"]) byId(`nav-${v}`).classList.toggle("active", v === active);
    byId("filter").hidden = route.view !== "hosts";
    for (const id of ["summary", "view"]) byId(id).classList.toggle("stale", this.#stale !== undefined);
    byId("job-query").hidden = route.view !== "jobs";
    const snap = this.#snapshot, act = (a: UiAction) => this.#ask(a);
    try {
      byId("summary").replaceChildren(summaryView(snap));
      // The job view places the task filter's form the app keeps: what is typed in it keeps its focus.
      keepingFocus(() => {
        const view = route.view === "job"
          ? jobView(
            snap,
            route.id,
            act,
            {
              open: this.#openInstances,
              toggle: (i) => this.#toggleInstance(i),
            },
            route.tasks,
            this.#taskFilter.form,
            { open: this.#openTasks, toggle: (i) => this.#toggleTask(i) },
          )
          : route.view === "jobs"
          ? jobsView(snap, route.query)
          : route.view === "pools"
          ? poolsView(snap, { open: this.#openPools, toggle: (id) => this.#togglePool(id) })
          : route.view === "hosts"
          ? hostsView(snap, route.filter, act)
          : notFoundView(route.path);
        byId("view").replaceChildren(view);
      });
    } catch (e) {
      // A reply of an unexpected shape must show up as an error, not as a blank page.
      this.#errors = [...this.#errors, new Error(`Cannot show the ${route.view} view: ${errorText(e)}`)];
    }
    this.#renderErrors();
    this.#renderStatus();
  }

  #renderErrors(): void {
    const box = byId("errors");
    // One line per distinct error: the job counts make several calls that fail alike.
    const lines = [...new Set(this.#errors.map(errorText))];
    box.hidden = lines.length === 0;
    box.replaceChildren(
      ...(lines.length ? [h("strong", {}, "The API returned errors:")] : []),
      ...lines.map((line) => h("div", { class: "error-line" }, line)),
    );
    const signIn = this.#signInNeeded();
    byId("login").hidden = !signIn;
    if (signIn) {
      byId("login-why").textContent = this.api.authorization()
        ? "The server refused these credentials; sign in again."
        : "The server requires credentials (its --auth-config).";
    }
    // Signed in only with credentials the server has not refused: beside the sign-in form, nobody is.
    byId("sign-out").hidden = !this.api.authorization() || signIn;
  }

  #signInNeeded(): boolean {
    return this.#errors.some(needsSignIn);
  }

  #renderStatus(): void {
    const time = this.#refreshedAt && when(this.#refreshedAt.toISOString()).slice(11);
    const at = this.#stale
      ? ` · ${time ? `last updated ${time}` : "nothing loaded yet"}; ${this.#stale}`
      : time
      ? ` · updated ${time}`
      : "";
    byId("status").textContent = this.#paused
      ? `Auto-refresh paused${at}`
      : this.#signInNeeded()
      ? `Auto-refresh waits for sign-in${at}`
      : `Auto-refresh every ${this.refreshMs / 1000} s${at}`;
  }

  #signIn(): void {
    const user = byId("username").value, password = byId("password").value;
    this.api.signIn(user, password);
    byId("password").value = "";
    this.refresh();
  }

  /**
   * The confirm step: the action runs only when the operator presses Confirm. An action with a choice or an
   * amount asks for them here, outside the view, so the refreshes while the operator picks leave them alone.
   * It is modal: the rest of the page is inert and Tab stays within it; Escape cancels. A destructive action
   * starts on Cancel, so that Enter alone does not carry it out; when it closes, the focus goes back to the
   * button that opened it.
   */
  #ask(a: UiAction): void {
    if (a.disabled) return;
    this.#pending = a;
    byId("confirm-text").textContent = a.question;
    byId("confirm-choice").hidden = !a.choice;
    byId("confirm-choice-label").textContent = a.choice?.label ?? "";
    const select = byId("confirm-select");
    select.replaceChildren(...(a.choice?.options ?? []).map((o) => h("option", { value: o }, o)));
    byId("confirm-amount").hidden = !a.amount;
    byId("confirm-amount-label").textContent = a.amount?.label ?? "";
    const number = byId("confirm-number");
    number.value = "1";
    if (a.amount?.max !== undefined) number.setAttribute("max", String(a.amount.max));
    else number.removeAttribute("max");
    const yes = byId("confirm-yes");
    yes.textContent = actionVerb(a);
    yes.className = a.danger ? "danger" : "primary";
    this.#checkPicks();
    byId("confirm").hidden = false;
    this.#inertPage(true);
    (a.danger ? byId("confirm-no") : a.choice ? select : a.amount ? number : yes).focus();
  }

  /** The parts of the page besides the confirm step, inert while it is open. */
  #inertPage(inert: boolean): void {
    for (const id of ["page-header", "errors", "login", "result", "toolbar", "view"]) {
      if (inert) byId(id).setAttribute("inert", "");
      else byId(id).removeAttribute("inert");
    }
  }

  /** The confirm step's keys: Escape cancels; Tab and Shift+Tab go round its controls, never out of it. */
  #confirmKey(e: UiEvent): void {
    const a = this.#pending;
    if (!a) return;
    if (e.key === "Escape") {
      e.preventDefault();
      this.#closeConfirm();
      return;
    }
    if (e.key !== "Tab") return;
    const stops = [
      a.choice ? byId("confirm-select") : undefined,
      a.amount ? byId("confirm-number") : undefined,
      byId("confirm-yes"),
      byId("confirm-no"),
    ].filter((el): el is UiElement => el !== undefined && !el.disabled);
    const at = stops.findIndex((el) => el === uiDocument().activeElement);
    const next = e.shiftKey ? (at <= 0 ? stops.length - 1 : at - 1) : (at + 1) % stops.length;
    e.preventDefault();
    stops[next].focus();
  }

  /** What the operator picked in the confirm step; undefined while they cannot confirm (no option, no amount). */
  #picks(): ActionPicks | undefined {
    const a = this.#pending;
    if (!a) return undefined;
    const picks: ActionPicks = {
      choice: a.choice ? byId("confirm-select").value : undefined,
      amount: a.amount ? wholeAmount(byId("confirm-number").value) : undefined,
    };
    if (a.choice && !a.choice.options.length) return undefined;
    if (a.amount && picks.amount === undefined) return undefined;
    if (a.amount?.max !== undefined && (picks.amount ?? 0) > a.amount.max) return undefined;
    return picks;
  }

  /**
   * Confirm waits for what the action needs picked; an amount that is not a whole number from 1 (to its max)
   * is marked, and what Confirm waits for is said beside it (its description) and in its tooltip: Tab skips a
   * disabled button, so a keyboard user would not find it in the tooltip alone.
   */
  #checkPicks(): void {
    const a = this.#pending, yes = byId("confirm-yes");
    const ok = this.#picks() !== undefined;
    yes.disabled = !ok;
    const number = byId("confirm-number");
    const n = wholeAmount(number.value), max = a?.amount?.max;
    const bad = a?.amount !== undefined && (n === undefined || (max !== undefined && n > max));
    number.setAttribute("aria-invalid", String(bad));
    yes.title = ok || !a
      ? ""
      : bad
      ? `${a.amount?.label}: a whole number from 1${max === undefined ? "" : ` to ${max}`}`
      : `No ${a.choice?.label.toLowerCase() ?? "option"} to pick`;
    const why = byId("confirm-why");
    why.textContent = yes.title;
    why.hidden = !yes.title;
  }

  #closeConfirm(): void {
    const a = this.#pending;
    this.#pending = undefined;
    byId("confirm").hidden = true;
    this.#inertPage(false);
    if (a) uiDocument().getElementById(actionId(a))?.focus();
  }

  async #confirmed(): Promise<void> {
    const a = this.#pending, picks = this.#picks();
    if (a && !picks) return;
    this.#closeConfirm();
    if (!a || !picks) return;
    const verb = actionVerb(a);
    this.#showResult(`${verb}: sending…`, "info");
    let body: Record<string, unknown> | undefined;
    try {
      // What the action reads when it is sent (prepare) is read now, not when the operator asked.
      body = a.prepare ? await a.prepare(picks, this.api.call.bind(this.api)) : actionBody(a, picks);
      const reply = await this.api.call<Record<string, unknown>>(a.procedure, body);
      this.#showResult(a.describe(reply, body), "ok");
    } catch (e) {
      // The refresh below finds a 401 too and asks for credentials.
      const text = errorText(e);
      this.#showResult(`${verb} failed: ${body && a.explain ? a.explain(text, body) : text}`, "error");
    }
    await this.refresh();
  }

  #showResult(text: string, tone: "info" | "ok" | "error"): void {
    const box = byId("result");
    box.className = `result ${tone}`;
    byId("result-text").textContent = text;
    box.hidden = false;
  }
}

export const APP_CODE = [parseRoute, hostsHash, notFoundView, viewOf, UiApp];
