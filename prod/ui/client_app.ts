/**
 * Browser code of the web UI, part 5: the app. It routes on the URL hash (#/jobs, #/jobs/ID, #/pools,
 * #/hosts), loads what the view needs on every refresh (every few seconds unless paused), shows every
 * API error it gets, asks for credentials on a 401, and runs operator actions after a confirm step.
 * Runs in the browser (see client_dom.ts for the rules).
 */
import type {
  HostInfoJson,
  JobInfoJson,
  RespoolInfoJson,
  Snapshot,
  TaskInfoJson,
  UiAction,
  UpdateInfoJson,
} from "./api_types.ts";
import { errorText, needsSignIn, UiApi } from "./client_api.ts";
import { byId, h, when } from "./client_dom.ts";
import { hostsView, poolsView, summaryView } from "./client_cluster.ts";
import { jobsView, jobView, Rpc } from "./client_views.ts";

export type Route = { view: "jobs" | "pools" | "hosts" } | { view: "job"; id: string };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter((p) => p).map(decodeURIComponent);
  if (parts[0] === "jobs" && parts[1]) return { view: "job", id: parts[1] };
  if (parts[0] === "pools" || parts[0] === "hosts") return { view: parts[0] };
  return { view: "jobs" };
}

export class UiApp {
  readonly api = new UiApi();
  readonly refreshMs: number;
  #snapshot: Snapshot = {};
  #errors: unknown[] = [];
  #refreshedAt?: Date;
  #timer?: ReturnType<typeof setTimeout>;
  #paused = false;
  #busy = false;
  #again = false;
  #pending?: UiAction;

  /** `?refresh=SECONDS` in the page's URL overrides the default period (at least half a second). */
  constructor(defaultRefreshMs: number) {
    const asked = Number(new URLSearchParams(location.search).get("refresh"));
    this.refreshMs = asked > 0 ? Math.max(500, asked * 1000) : defaultRefreshMs;
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
    byId("result-close").addEventListener("click", () => {
      byId("result").hidden = true;
    });
    byId("filter").addEventListener("input", () => this.render());
    addEventListener("hashchange", () => {
      byId("filter").value = "";
      this.render();
      this.refresh();
    });
    this.refresh();
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
      const load = <T>(p: Promise<T>): Promise<T | undefined> =>
        p.catch((e) => {
          errors.push(e);
          return undefined;
        });
      const [jobs, pools, hosts, job] = await Promise.all([
        load(
          this.api.call<{ records: JobInfoJson[] }>(`${Rpc.JOB}::Query`, {
            spec: { pagination: { limit: 1000 } },
          }),
        ),
        load(this.api.call<{ resourcePools: RespoolInfoJson[] }>(`${Rpc.RESPOOL}::Query`, {})),
        load(this.api.call<{ hostInfos: HostInfoJson[] }>(`${Rpc.HOST}::QueryHosts`, {})),
        route.view === "job" ? this.#loadJob(route.id, load) : Promise.resolve(undefined),
      ]);
      this.#snapshot = { jobs: jobs?.records, pools: pools?.resourcePools, hosts: hosts?.hostInfos, job };
      this.#errors = errors;
      this.#refreshedAt = new Date();
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

  #loadJob(id: string, load: <T>(p: Promise<T>) => Promise<T | undefined>): Promise<Snapshot["job"]> {
    const jobId = { value: id };
    return Promise.all([
      load(this.api.call<{ jobInfo: JobInfoJson }>(`${Rpc.JOB}::Get`, { id: jobId })),
      load(
        this.api.call<{ result: { value: Record<string, TaskInfoJson> } }>(`${Rpc.TASK}::List`, { jobId }),
      ),
      load(this.api.call<{ updateInfo: UpdateInfoJson[] }>(`${Rpc.UPDATE}::ListUpdates`, { jobID: jobId })),
    ]).then(([info, tasks, updates]) => ({
      info: info?.jobInfo,
      tasks: tasks && Object.values(tasks.result?.value ?? {}),
      updates: updates?.updateInfo,
    }));
  }

  render(): void {
    const route = parseRoute(location.hash);
    const active = route.view === "job" ? "jobs" : route.view;
    for (const v of ["jobs", "pools", "hosts"]) byId(`nav-${v}`).classList.toggle("active", v === active);
    const filter = byId("filter");
    filter.hidden = route.view !== "jobs" && route.view !== "hosts";
    const snap = this.#snapshot, act = (a: UiAction) => this.#ask(a);
    try {
      byId("summary").replaceChildren(summaryView(snap));
      const view = route.view === "job"
        ? jobView(snap, route.id, act)
        : route.view === "pools"
        ? poolsView(snap)
        : route.view === "hosts"
        ? hostsView(snap, filter.value, act)
        : jobsView(snap, filter.value);
      byId("view").replaceChildren(view);
    } catch (e) {
      // A reply of an unexpected shape must show up as an error, not as a blank page.
      this.#errors = [...this.#errors, new Error(`Cannot show the ${route.view} view: ${errorText(e)}`)];
    }
    this.#renderErrors();
    this.#renderStatus();
  }

  #renderErrors(): void {
    const box = byId("errors");
    box.hidden = this.#errors.length === 0;
    box.replaceChildren(
      ...(this.#errors.length ? [h("strong", {}, "The API returned errors:")] : []),
      ...this.#errors.map((e) => h("div", { class: "error-line" }, errorText(e))),
    );
    const signIn = this.#signInNeeded();
    byId("login").hidden = !signIn;
    if (signIn) {
      byId("login-why").textContent = this.api.authorization()
        ? "The server refused these credentials; sign in again."
        : "The server requires credentials (its --auth-config).";
    }
    byId("sign-out").hidden = !this.api.authorization();
  }

  #signInNeeded(): boolean {
    return this.#errors.some(needsSignIn);
  }

  #renderStatus(): void {
    const at = this.#refreshedAt ? ` · updated ${when(this.#refreshedAt.toISOString()).slice(11)}` : "";
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

  /** The confirm step: the action runs only when the operator presses Confirm. */
  #ask(a: UiAction): void {
    if (a.disabled) return;
    this.#pending = a;
    byId("confirm-text").textContent = a.question;
    const yes = byId("confirm-yes");
    yes.textContent = a.label;
    yes.className = a.danger ? "danger" : "primary";
    byId("confirm").hidden = false;
    yes.focus();
  }

  #closeConfirm(): void {
    this.#pending = undefined;
    byId("confirm").hidden = true;
  }

  async #confirmed(): Promise<void> {
    const a = this.#pending;
    this.#closeConfirm();
    if (!a) return;
    this.#showResult(`${a.label}: sending…`, "info");
    try {
      const reply = await this.api.call(a.procedure, a.body);
      this.#showResult(a.describe(reply), "ok");
    } catch (e) {
      // The refresh below finds a 401 too and asks for credentials.
      this.#showResult(`${a.label} failed: ${errorText(e)}`, "error");
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

export const APP_CODE = [parseRoute, UiApp];
