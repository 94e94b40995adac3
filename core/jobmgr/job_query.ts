/** Job queries: the `QuerySpec` of v0 `JobManager.Query` and v1alpha `QueryJobs`, read and run against the store. */
import { isTerminalJobState, JOB_STATES, type JobState } from "../model/states.ts";
import { parseRfc3339 } from "../model/time_format.ts";
import { JOB_ORDER_PROPERTIES, type JobQuery, type Store } from "../ports/store.ts";
import { type Body, idValue, type JobView, labelList, uint32Of, valueMessage } from "./api_json.ts";
import { listOf, messageOf, type Parsed, parseOrderBy } from "./query_spec.ts";

/** What a query spec's pool fields name: v0's and v1alpha's `respool` (a ResourcePoolPath), `respoolID` ours. */
const POOL_FIELDS = { respool: "a resource pool path", respoolID: "a resource pool id" } as const;

/** Jobs a query returns when its `pagination.limit` is 0 or absent. */
export const DEFAULT_QUERY_LIMIT = 100;

/** How far back a query of terminal states without time ranges looks (Peloton's `jobQueryDefaultSpanInDays`). */
export const DEFAULT_TERMINAL_SPAN_MS = 7 * 24 * 3600_000;
/** How far past now that window reaches, for jobs just created (Peloton's `jobQueryJitter`). */
const QUERY_JITTER_MS = 30_000;

export interface TimeRange {
  minMs?: number;
  maxMs?: number;
}

/** A query spec as read: what the store filters on, what is filtered here, and the page. */
export interface JobQuerySpec {
  store: Omit<JobQuery, "offset" | "limit" | "respoolId">;
  keywords: string[];
  creation?: TimeRange;
  completion?: TimeRange;
  page: { offset: number; limit: number; maxLimit: number };
  /**
   * The spec as Peloton's handler echoes it in the response: the QuerySpec it decoded, so the proto fields
   * the request gave, each as read (numbers given as text are numbers, enums by name), and no other field.
   */
  echo: Body;
}

/**
 * Reads a QuerySpec (job states as `RUNNING` or `JOB_STATE_RUNNING` in v0, as `JOB_STATE_RUNNING` alone in
 * v1alpha, or their numbers; the page's `orderBy` properties `creation_time`, `completion_time`, `name`,
 * `owner` (the owning team) and `state`, as Peloton's job index names them); a bad field, of the wrong type
 * too, is named with the value and what was expected.
 */
export function parseQuerySpec(
  raw: unknown,
  where = "spec",
  api: "v0" | "v1alpha" = "v0",
): Parsed<JobQuerySpec> {
  const fail = (field: string, got: unknown, expected: string): Parsed<JobQuerySpec> => ({
    ok: false,
    message: `${where}.${field}: got ${JSON.stringify(got)}, expected ${expected}`,
  });
  const parsed = messageOf(raw, where);
  if (!parsed.ok) return parsed;
  const spec = parsed.value;
  const pagination = messageOf(spec.pagination, `${where}.pagination`);
  if (!pagination.ok) return pagination;
  const page = { offset: 0, limit: 0, maxLimit: 0 };
  // uint32s in Peloton's PaginationSpec: a larger number is refused saying so, not read as some other page.
  for (const k of ["offset", "limit", "maxLimit"] as const) {
    const n = uint32Of(pagination.value[k], `${where}.pagination.${k}`);
    if (typeof n === "string") return { ok: false, message: n };
    page[k] = n;
  }
  const order = parseOrderBy(pagination.value.orderBy, `${where}.pagination.orderBy`, JOB_ORDER_PROPERTIES);
  if (!order.ok) return order;
  const jobStates = listOf(spec.jobStates, `${where}.jobStates`);
  if (!jobStates.ok) return jobStates;
  const states: string[] = [];
  for (const [i, s] of jobStates.value.entries()) {
    const state = api === "v1alpha" ? v1alphaJobState(s) : jobState(s);
    if (!state) {
      const names = api === "v1alpha"
        ? `v1alpha job states (or their numbers): ${V1ALPHA_JOB_STATES.join(", ")}`
        : `one of ${Object.keys(JOB_STATES).join(", ")}`;
      return fail(`jobStates[${i}]`, s, names);
    }
    states.push(state);
  }
  const labels = labelList(spec.labels, `${where}.labels`);
  if (typeof labels === "string") return { ok: false, message: labels };
  const keywords = listOf(spec.keywords, `${where}.keywords`);
  if (!keywords.ok) return keywords;
  const badKeyword = keywords.value.findIndex((k) => typeof k !== "string");
  if (badKeyword >= 0) return fail(`keywords[${badKeyword}]`, keywords.value[badKeyword], "a string");
  const ranges: Partial<Record<"creation" | "completion", TimeRange>> = {};
  for (const which of ["creation", "completion"] as const) {
    const given = spec[`${which}TimeRange`];
    const times = messageOf(given, `${where}.${which}TimeRange`);
    if (!times.ok) return times;
    if (given === undefined || given === null) continue;
    const range: TimeRange = {};
    for (const end of ["min", "max"] as const) {
      const v = times.value[end];
      if (v === undefined || v === null) continue;
      const ms = typeof v === "string" ? parseRfc3339(v) : undefined;
      if (ms === undefined) return fail(`${which}TimeRange.${end}`, v, "an RFC 3339 time");
      range[`${end}Ms`] = ms;
    }
    ranges[which] = range;
  }
  for (const f of ["owner", "name"] as const) {
    if (spec[f] !== undefined && typeof spec[f] !== "string") return fail(f, spec[f], "a string");
  }
  // The pool is read by the caller (v0 names it by id, v1alpha by path); a pool of the wrong type would
  // otherwise be no filter at all.
  for (const f of ["respool", "respoolID"] as const) {
    const pool = valueMessage(spec[f], `${where}.${f}`, POOL_FIELDS[f]);
    if (pool instanceof Error) return { ok: false, message: pool.message };
  }
  const given = (v: unknown) => v !== undefined && v !== null;
  const echo: Body = {};
  if (given(spec.pagination)) {
    const p: Body = {};
    for (const k of ["offset", "limit"] as const) if (given(pagination.value[k])) p[k] = page[k];
    if (given(pagination.value.orderBy)) {
      const name = (desc: boolean) => `${api === "v1alpha" ? "ORDER_BY_" : ""}${desc ? "DESC" : "ASC"}`;
      p.orderBy = order.value.map((o) => ({ order: name(o.desc), property: { value: o.property } }));
    }
    if (given(pagination.value.maxLimit)) p.maxLimit = page.maxLimit;
    echo.pagination = p;
  }
  if (given(spec.labels)) echo.labels = labels;
  if (given(spec.keywords)) echo.keywords = keywords.value;
  if (given(spec.jobStates)) {
    echo.jobStates = api === "v1alpha"
      ? states.map((s) => (s === "UNKNOWN" ? "JOB_STATE_INVALID" : `JOB_STATE_${s}`))
      : states;
  }
  if (given(spec.respool)) echo.respool = { value: idValue(spec.respool) };
  for (const f of ["owner", "name"] as const) if (given(spec[f])) echo[f] = spec[f];
  for (const which of ["creation", "completion"] as const) {
    const range = spec[`${which}TimeRange`] as Body | undefined | null;
    if (!given(range)) continue;
    const times: Body = {};
    for (const end of ["min", "max"] as const) if (given(range![end])) times[end] = range![end];
    echo[`${which}TimeRange`] = times;
  }
  return {
    ok: true,
    value: {
      echo,
      store: {
        states: states.length ? states : undefined,
        owner: (spec.owner as string) || undefined,
        name: (spec.name as string) || undefined,
        labels: labels.length ? labels : undefined,
        order: order.value.length ? order.value : undefined,
      },
      keywords: keywords.value as string[],
      ...ranges,
      page,
    },
  };
}

/** A page of jobs and where it is among all the matches. */
export interface JobPage {
  jobs: JobView[];
  pagination: { offset: number; limit: number; total: number };
}

/** The page of a query no job can match (its pool does not exist): empty, where `runJobQuery` would put it. */
export function noJobs(spec: JobQuerySpec): JobPage {
  return {
    jobs: [],
    pagination: { offset: spec.page.offset, limit: spec.page.limit || DEFAULT_QUERY_LIMIT, total: 0 },
  };
}

/**
 * One page of the jobs matching `spec`, in its order (newest first by default; see `compareJobs`), each as
 * the job manager holds it when it does (sorted by what the store holds, which a live job may be ahead of).
 * `offset` matches are skipped and at most `limit` returned (0: 100, our CLI's default; Peloton's was 10);
 * `maxLimit`, when given, caps the matches considered, as Peloton's store did. Peloton capped them at 100
 * when it was absent; here they are all counted (the store counts in SQL and reads only the page), so
 * `total` is the true number and every page can be reached. Keywords and time ranges are not in the
 * store's index: with them, every match of the other fields is read, in order, and those are checked here.
 * A query of any terminal state without a creation or completion time range sees only the jobs created in
 * the 7 days before `nowMs` (to 30 s after it), as Peloton's store limits it.
 */
export async function runJobQuery(
  store: Store,
  spec: JobQuerySpec,
  respoolId: string | undefined,
  live: (jobId: string) => JobView | undefined,
  nowMs: number,
): Promise<JobPage> {
  spec = withDefaultWindow(spec, nowMs);
  const { offset } = spec.page,
    limit = spec.page.limit || DEFAULT_QUERY_LIMIT,
    considered = spec.page.maxLimit || Infinity;
  const pageSize = Math.max(0, Math.min(limit, considered - offset));
  const query: JobQuery = { ...spec.store, respoolId };
  const view = (j: JobView) => live(j.jobId) ?? j;
  if (!spec.keywords.length && !spec.creation && !spec.completion) {
    const { jobs, total } = await store.queryJobs({ ...query, offset, limit: pageSize });
    return { jobs: jobs.map(view), pagination: { offset, limit, total: Math.min(total, considered) } };
  }
  const { jobs } = await store.queryJobs(query);
  const found = jobs.map(view).filter((j) => matchesRest(j, spec));
  return {
    jobs: found.slice(offset, offset + pageSize),
    pagination: { offset, limit, total: Math.min(found.length, considered) },
  };
}

/**
 * The spec with Peloton's default creation window when it asks for a terminal state and gives no time
 * range: terminal jobs pile up for ever, and Peloton's index would otherwise search them all.
 */
function withDefaultWindow(spec: JobQuerySpec, nowMs: number): JobQuerySpec {
  if (spec.creation || spec.completion) return spec;
  if (!spec.store.states?.some((s) => isTerminalJobState(s as JobState))) return spec;
  const maxMs = nowMs + QUERY_JITTER_MS;
  return { ...spec, creation: { minMs: maxMs - DEFAULT_TERMINAL_SPAN_MS, maxMs } };
}

/** Keywords (each must appear, any case, in the name, owner, owning team, description or a label) and times. */
function matchesRest(j: JobView, spec: JobQuerySpec): boolean {
  const c = j.config;
  const text = [c.name, c.owner, c.owningTeam, c.description, ...c.labels.flatMap((l) => [l.key, l.value])]
    .join("\n").toLowerCase();
  if (!spec.keywords.every((k) => text.includes(k.toLowerCase()))) return false;
  return within(j.runtime.creationTimeMs, spec.creation) &&
    within(j.runtime.completionTimeMs, spec.completion);
}

function within(ms: number | undefined, range: TimeRange | undefined): boolean {
  if (!range) return true;
  if (ms === undefined) return false;
  return (range.minMs === undefined || ms >= range.minMs) && (range.maxMs === undefined || ms <= range.maxMs);
}

/**
 * v1alpha `stateless.JobState` names, by number (v0's order; JOB_STATE_INVALID is v0's UNKNOWN). A v1alpha
 * query takes these alone, or their numbers, as protobuf's JSON decoding does: v0's names are not its enum's.
 */
const V1ALPHA_JOB_STATES: readonly string[] = Object.keys(JOB_STATES).map((s) =>
  s === "UNKNOWN" ? "JOB_STATE_INVALID" : `JOB_STATE_${s}`
);

/** `JOB_STATE_RUNNING` or 3 → RUNNING; undefined for any other name, v0's `RUNNING` too. */
function v1alphaJobState(v: unknown): JobState | undefined {
  if (typeof v === "string" && !V1ALPHA_JOB_STATES.includes(v)) return undefined;
  return jobState(v);
}

/** `RUNNING`, `JOB_STATE_RUNNING` or 3 → RUNNING; v1alpha's `JOB_STATE_INVALID` (0) is v0's UNKNOWN. */
function jobState(v: unknown): JobState | undefined {
  if (typeof v === "number") return (Object.keys(JOB_STATES) as JobState[]).find((s) => JOB_STATES[s] === v);
  if (typeof v !== "string") return undefined;
  if (v === "JOB_STATE_INVALID") return "UNKNOWN";
  const name = v.startsWith("JOB_STATE_") ? v.slice("JOB_STATE_".length) : v;
  return name in JOB_STATES ? name as JobState : undefined;
}
