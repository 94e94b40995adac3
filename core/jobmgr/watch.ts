/**
 * Peloton's v1alpha WatchService (`pkg/jobmgr/watchsvc`): a client watches pods (of one job, or every job,
 * narrowed by pod names and labels) or stateless jobs (by ids and labels) and is sent every change the job
 * manager makes to them, as it makes it, until it cancels. The stream's protocol is `WatchEvent` and
 * `WatchEnd` in core/messages.ts; the HTTP front turns it into a stream of JSON lines.
 *
 * As Peloton's, a watch starts from now (`startRevision` is not replayed), sees only service jobs and their
 * pods (Peloton's listener: "for now watch api only supports stateless"; batch and daemon jobs are not
 * sent), and sees only what this job manager drives: with several job managers, a pod watch naming a job
 * is served by the job's owner. When a watched job moves to another job manager, or this one stops, the
 * stream ends `unavailable`: watch again.
 */
import type { ApiRequest } from "../messages.ts";
import type { Label } from "../model/config_types.ts";
import type { TaskRecord } from "../model/records.ts";
import type { Address, Transport } from "../ports/transport.ts";
import { type Body, hasLabels, jobIdOf, labelList, type Reply } from "./api_json.ts";
import { podNameOf } from "./v1alpha_json.ts";
import { type JobEntry, taskConfigOf } from "./job_entry.ts";
import { podStatusJson } from "./pod_api.ts";

export const WATCH_SERVICE = "peloton.api.v1alpha.watch.svc.WatchService";

/** Watches one job manager serves at once (Peloton's `max_client`). */
export const MAX_WATCHES = 1000;

interface PodWatch {
  sink: Address;
  jobId?: string;
  podNames?: Set<string>;
  labels: Label[];
}

interface JobWatch {
  sink: Address;
  jobIds?: Set<string>;
  labels: Label[];
}

export class Watches {
  readonly #pods = new Map<string, PodWatch>();
  readonly #jobs = new Map<string, JobWatch>();
  #seq = 0;
  /**
   * Job changes whose summary is being read (the job's last workflow, from the store), with those after
   * them: each watch is sent its summaries in the order the changes were made.
   */
  #jobQueue?: Promise<void>;
  #queued = 0;

  constructor(
    private readonly transport: Transport,
    /** This job manager's address: part of each watch id, so a front with several knows where a watch lives. */
    private readonly self: Address,
    /**
     * A job as a v1alpha `JobSummary` as of now; a promise of it when part of it must be read (the job's
     * last workflow, which has ended).
     */
    private readonly summary: (job: JobEntry) => Body | Promise<Body>,
  ) {}

  /** Whether any watch is open: the job manager's hot paths skip the rest when none is. */
  get size(): number {
    return this.#pods.size + this.#jobs.size;
  }

  handle(method: string, body: Body, r: Reply, req: ApiRequest): void {
    if (method === "Watch") return this.#watch(body, r, req.replyTo);
    if (method === "Cancel") return this.#cancel(body, r);
    r.error("unimplemented", `procedure ${WATCH_SERVICE}::${method} is not implemented`);
  }

  #watch(body: Body, r: Reply, sink: Address): void {
    const pod = body.podFilter, job = body.statelessJobFilter;
    if ((pod === undefined || pod === null) === (job === undefined || job === null)) {
      return r.error("invalid-argument", "podFilter, statelessJobFilter: expected exactly one of them");
    }
    // `startRevision` (WatchRequest's uint64 start_revision) asks for the changes since that revision. None
    // are replayed, whatever it is: the watch starts from now, as Peloton's does. It is checked all the same,
    // so that a malformed request is refused rather than read as some revision.
    const revision = uint64Problem(body.startRevision);
    if (revision) return r.error("invalid-argument", `startRevision: ${revision}`);
    if (this.size >= MAX_WATCHES) {
      return r.error(
        "unavailable",
        `this job manager serves ${MAX_WATCHES} watches already; try again later`,
      );
    }
    const filter = (pod ?? job) as Body;
    const field = pod ? "podFilter" : "statelessJobFilter";
    if (typeof filter !== "object" || Array.isArray(filter)) {
      return r.error("invalid-argument", `${field}: got ${JSON.stringify(filter)}, expected an object`);
    }
    const labels = labelList(filter.labels, `${field}.labels`);
    if (typeof labels === "string") return r.error("invalid-argument", labels);
    const id = `${pod ? "pod" : "job"}-${++this.#seq}@${this.self}`;
    // Ids are read as every other call reads them: a malformed one would be a watch that never reports.
    if (pod) {
      const names = idsOf(filter.podNames, `${field}.podNames`, "pod names", (v, at) => {
        const p = podNameOf(v, at);
        return p instanceof Error ? p : p.name;
      });
      if (names instanceof Error) return r.error("invalid-argument", names.message);
      const given = filter.jobId !== undefined && filter.jobId !== null;
      const jobId = given ? jobIdOf(filter.jobId, `${field}.jobId`) : undefined;
      if (jobId instanceof Error) return r.error("invalid-argument", jobId.message);
      this.#pods.set(id, { sink, jobId, podNames: names, labels });
    } else {
      const ids = idsOf(filter.jobIds, `${field}.jobIds`, "job ids", jobIdOf);
      if (ids instanceof Error) return r.error("invalid-argument", ids.message);
      this.#jobs.set(id, { sink, jobIds: ids, labels });
    }
    r.ok({ watchId: id });
  }

  #cancel(body: Body, r: Reply): void {
    const id = body.watchId;
    if (id === undefined || id === null) {
      return r.error("invalid-argument", "watchId: missing, expected a watch id");
    }
    if (typeof id !== "string" || !id) {
      return r.error("invalid-argument", `watchId: got ${JSON.stringify(id)}, expected a watch id`);
    }
    if (!this.#end(id, "cancelled", `watch cancelled: ${id}`)) {
      return r.error("not-found", `watch ${id} not found`);
    }
    r.ok({});
  }

  /** A task of `job` changed: its pod goes to the watches it matches. */
  podChanged(job: JobEntry, task: TaskRecord): void {
    // Peloton's `TaskRuntimeChanged`: the watch API is for stateless (SERVICE) jobs only.
    if (!this.#pods.size || job.config.type !== "SERVICE") return;
    const name = `${job.jobId}-${task.instanceId}`;
    let pod: Body | undefined;
    for (const [id, w] of this.#pods) {
      if (w.jobId !== undefined && w.jobId !== job.jobId) continue;
      if (w.podNames && !w.podNames.has(name)) continue;
      if (w.labels.length && !hasLabels(taskConfigOf(job, task).labels, w.labels)) continue;
      pod ??= { podName: { value: name }, status: podStatusJson(task) };
      this.#send(id, w.sink, { watchId: id, pods: [pod] });
    }
  }

  /** A job's runtime changed: its summary goes to the job watches it matches. */
  jobChanged(job: JobEntry): void {
    // Peloton's `JobSummaryChanged`: "for now watch api only supports stateless" (SERVICE) jobs.
    if (!this.#jobs.size || job.config.type !== "SERVICE") return;
    const to = [...this.#jobs].filter(([, w]) =>
      (!w.jobIds || w.jobIds.has(job.jobId)) && (!w.labels.length || hasLabels(job.config.labels, w.labels))
    );
    if (!to.length) return;
    const summary = this.summary(job);
    const send = (s: Body) => {
      // A watch that ended meanwhile (cancelled, its job manager stopping) has sent its last line.
      for (const [id, w] of to) {
        if (this.#jobs.get(id) === w) this.#send(id, w.sink, { watchId: id, statelessJobs: [s] });
      }
    };
    if (!(summary instanceof Promise) && !this.#queued) return send(summary);
    this.#queued++;
    this.#jobQueue = (this.#jobQueue ?? Promise.resolve()).then(() => summary).then(send)
      // A summary falls back to what memory holds when its read fails; this keeps the queue going regardless.
      .catch(() => {})
      .finally(() => {
        if (--this.#queued === 0) this.#jobQueue = undefined;
      });
  }

  /** The job moved to another job manager: its watches end, to be made again where it is now. */
  released(jobId: string): void {
    for (const [id, w] of this.#pods) {
      if (w.jobId === jobId) {
        this.#end(id, "unavailable", `job ${jobId} moved to another job manager; watch again`);
      }
    }
  }

  /** The job manager stops: every stream ends. */
  stopAll(): void {
    for (const id of [...this.#pods.keys(), ...this.#jobs.keys()]) {
      this.#end(id, "unavailable", "the job manager stopped; watch again");
    }
  }

  #send(
    id: string,
    sink: Address,
    response: { watchId: string; pods?: unknown[]; statelessJobs?: unknown[] },
  ) {
    this.transport.send(sink, { kind: "watch-event", watchId: id, response });
  }

  #end(id: string, code: "cancelled" | "unavailable", message: string): boolean {
    const w = this.#pods.get(id) ?? this.#jobs.get(id);
    if (!w) return false;
    this.#pods.delete(id);
    this.#jobs.delete(id);
    this.transport.send(w.sink, { kind: "watch-end", watchId: id, error: { code, message } });
    return true;
  }
}

/**
 * A list of ids, each read by `read` (given where it is, `field[i]`); undefined when absent or empty (no
 * narrowing); the first malformed one's Error.
 */
function idsOf(
  raw: unknown,
  field: string,
  what: string,
  read: (v: unknown, at: string) => string | Error,
): Set<string> | undefined | Error {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) {
    return new Error(`${field}: got ${JSON.stringify(raw)}, expected a list of ${what}`);
  }
  const out = new Set<string>();
  for (const [i, v] of raw.entries()) {
    const id = read(v, `${field}[${i}]`);
    if (id instanceof Error) return id;
    out.add(id);
  }
  return out.size ? out : undefined;
}

/** The largest uint64. */
const MAX_UINT64 = 2n ** 64n - 1n;

/**
 * Why a request's uint64 field is not one, or undefined: a whole number from 0 to the largest uint64, as a
 * number or its decimal text (proto3 JSON writes 64-bit integers as text); absent (or null) is 0.
 */
function uint64Problem(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  const ok = typeof raw === "number"
    ? Number.isInteger(raw) && raw >= 0 && raw < 2 ** 64
    : typeof raw === "string" && /^\d+$/.test(raw) && BigInt(raw) <= MAX_UINT64;
  if (ok) return undefined;
  const expected = `a whole number from 0 to ${MAX_UINT64} (a number or its decimal text)`;
  return `got ${JSON.stringify(raw)}, expected ${expected}`;
}
