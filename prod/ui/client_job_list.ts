/**
 * Browser code of the web UI, part 3b: the job list. The API pages and filters it (`JobManager::Query` with
 * Peloton's `spec.pagination {offset, limit}` and its name, owner (the owning team) and state filters),
 * never the page, so every job can be reached however many there are. The query lives in the URL hash
 * (`#/jobs?state=RUNNING&page=3`), so pages are links and the back button works.
 * Runs in the browser (see client_dom.ts for the rules).
 */
import type { JobListQuery, Snapshot } from "./api_types.ts";
import {
  badge,
  byId,
  h,
  pagerView,
  type Paging,
  pathView,
  statsLine,
  table,
  timeView,
  type UiElement,
  wholeParam,
} from "./client_dom.ts";
import { poolPaths } from "./client_views.ts";

/** The list's page sizes and limits. */
export class JobList {
  /** Sizes the form offers; `size=` in the URL may ask for any other up to MAX_SIZE. */
  static readonly SIZES = [25, 50, 100, 200, 500];
  static readonly DEFAULT_SIZE = 50;
  static readonly MAX_SIZE = 1000;
  static readonly MAX_PAGE = 1_000_000;
  /** Active jobs the summary and the pools view read for their task and job counts. */
  static readonly ACTIVE_LIMIT = 1000;
}

/** The jobs view's query from the hash's `?...` part; values out of range fall back to the defaults. */
export function parseJobListQuery(search: string): JobListQuery {
  const p = new URLSearchParams(search);
  return {
    name: (p.get("name") ?? "").trim(),
    owner: (p.get("owner") ?? "").trim(),
    state: (p.get("state") ?? "").trim().toUpperCase(),
    page: wholeParam(p, "page", JobList.MAX_PAGE, 1),
    size: wholeParam(p, "size", JobList.MAX_SIZE, JobList.DEFAULT_SIZE),
  };
}

/** The hash of the jobs view showing `q`; defaults are left out, so the plain list is `#/jobs`. */
export function jobListHash(q: JobListQuery): string {
  const p = new URLSearchParams();
  if (q.name) p.set("name", q.name);
  if (q.owner) p.set("owner", q.owner);
  if (q.state) p.set("state", q.state);
  if (q.size !== JobList.DEFAULT_SIZE) p.set("size", String(q.size));
  if (q.page > 1) p.set("page", String(q.page));
  const search = p.toString();
  return search ? `#/jobs?${search}` : "#/jobs";
}

/** The `JobManager::Query` body for `q`: its filters, and its page as Peloton's offset and limit. */
export function jobListRequest(q: JobListQuery, activeStates: string[]): Record<string, unknown> {
  const spec: Record<string, unknown> = { pagination: { offset: (q.page - 1) * q.size, limit: q.size } };
  if (q.name) spec.name = q.name;
  if (q.owner) spec.owner = q.owner;
  if (q.state) spec.jobStates = q.state === "ACTIVE" ? activeStates : [q.state];
  return { spec };
}

/** The list's pages: `pagerView` with links that keep `q`'s filters and size. */
export function jobPaging(q: JobListQuery, total: number): Paging {
  return { page: q.page, size: q.size, total, noun: "jobs", hashOf: (page) => jobListHash({ ...q, page }) };
}

export function jobsView(snap: Snapshot, q: JobListQuery): UiElement {
  // The snapshot may hold another page or filter (the hash just changed): the refresh under way brings this one.
  if (snap.jobPageFor !== jobListHash(q)) return h("p", { class: "muted" }, "Loading…");
  const page = snap.jobPage;
  if (!page) return h("p", { class: "muted" }, "Jobs could not be loaded (see the error above).");
  const paths = poolPaths(snap.pools);
  const total = page.pagination.total;
  const filtered = q.name !== "" || q.owner !== "" || q.state !== "";
  return h(
    "section",
    {},
    h("h2", {}, filtered ? `Jobs matching the filter (${total})` : `Jobs (${total})`),
    pagerView(jobPaging(q, total), "top"),
    table(
      ["Name", "ID", "Type", "State", "Goal", "Resource pool", "Instances", "Tasks by state", "Created"],
      page.records.map((j) => [
        h("a", { href: `#/jobs/${j.id.value}`, class: "job-link long" }, j.config.name),
        h("code", { class: "long" }, j.id.value),
        j.config.type,
        badge(j.runtime.state),
        j.runtime.goalState,
        pathView(paths.get(j.config.respoolID?.value ?? "") ?? j.config.respoolID?.value ?? "—"),
        j.config.instanceCount,
        statsLine(j.runtime.taskStats),
        timeView(j.runtime.creationTime),
      ]),
      total === 0 ? (filtered ? "No job matches the filter" : "No jobs yet") : "No jobs on this page",
      "jobs",
    ),
    page.records.length > 20 ? pagerView(jobPaging(q, total), "bottom") : null,
  );
}

/** Puts `q` into the job query form (after the hash changed, e.g. by the back button). */
export function showJobListQuery(q: JobListQuery): void {
  byId("job-name").value = q.name;
  byId("job-owner").value = q.owner;
  byId("job-state").value = q.state;
  const size = byId("job-size");
  size.value = String(q.size);
  if (size.value !== String(q.size)) {
    // A size from the URL that the form does not offer: offer it too.
    size.append(h("option", { value: q.size }, `${q.size} a page`));
    size.value = String(q.size);
  }
}

/** The query the form asks for, from its first page. */
export function readJobListQuery(): JobListQuery {
  return {
    name: byId("job-name").value.trim(),
    owner: byId("job-owner").value.trim(),
    state: byId("job-state").value,
    page: 1,
    size: Number(byId("job-size").value) || JobList.DEFAULT_SIZE,
  };
}

export const JOB_LIST_CODE = [
  JobList,
  parseJobListQuery,
  jobListHash,
  jobListRequest,
  jobPaging,
  jobsView,
  showJobListQuery,
  readJobListQuery,
];
