/**
 * Peloton's v1alpha pod API (`peloton.api.v1alpha.pod.svc.PodService`, `pkg/jobmgr/podsvc/handler.go`): a
 * pod is one instance of a job, named `<jobId>-<instanceId>`; its runs are pod ids `<jobId>-<instanceId>-<run>`.
 */
import type { TaskConfig } from "../model/config_types.ts";
import {
  mesosTaskId,
  parseMesosTaskId,
  pastRun,
  type TaskEventRecord,
  type TaskRecord,
} from "../model/records.ts";
import { isTerminalJobState } from "../model/states.ts";
import { MAX_UINT32 } from "../model/_schema_kit.ts";
import { taskConfigToPodSpec } from "../model/stateless_spec.ts";
import { rfc3339 } from "../model/time_format.ts";
import {
  type Body,
  type JobView,
  prevRunId,
  type Reply,
  terminationStatusJson,
  time,
  valueMessage,
} from "./api_json.ts";
import type { JobApi } from "./job_api.ts";
import type { JobEntry } from "./job_entry.ts";
import { availability, maintenanceLimit, unavailableCount } from "./sla_drain.ts";
import { flagOf, wholeNumber } from "./query_spec.ts";
import { podNameOf, podSpecJson, podStateName } from "./v1alpha_json.ts";

export const POD_SERVICE = "peloton.api.v1alpha.pod.svc.PodService";

const METHODS = new Set([
  "GetPod",
  "GetPodCache",
  "GetPodEvents",
  "BrowsePodSandbox",
  "StartPod",
  "StopPod",
  "RestartPod",
  "RefreshPod",
  "DeletePodEvents",
]);

/**
 * A request's `podId` (`{value}`, Peloton's PodID message), lower-cased (pod names are); absent or empty
 * means the current run, as in Peloton. An Error naming it when it is not such a message.
 */
function podIdOf(body: Body): string | undefined | Error {
  const id = valueMessage(body.podId, "podId", "a pod id");
  return id instanceof Error ? id : id?.toLowerCase() || undefined;
}

/** v1alpha `pod.HealthState` of v0's `healthy` (the enums line up; Peloton casts the number across). */
const HEALTH_STATE: Record<string, string> = {
  DISABLED: "HEALTH_STATE_DISABLED",
  HEALTH_UNKNOWN: "HEALTH_STATE_UNKNOWN",
  HEALTHY: "HEALTH_STATE_HEALTHY",
  UNHEALTHY: "HEALTH_STATE_UNHEALTHY",
};

export class PodApi {
  constructor(private readonly api: JobApi) {}

  handle(method: string, body: Body, r: Reply): void {
    if (!METHODS.has(method)) {
      return r.error("unimplemented", `procedure ${POD_SERVICE}::${method} is not implemented`);
    }
    const pod = podNameOf(body.podName, "podName");
    if (pod instanceof Error) return r.error("invalid-argument", pod.message);
    const { jobId, instanceId, name } = pod;
    const notFound = () => r.error("not-found", `pod ${name} not found`);
    const read = (fn: (job: JobView) => void) => this.api.withJob(r, jobId, fn, true, notFound);
    switch (method) {
      case "GetPod": {
        // A uint32, as GetPodRequest's limit.
        const limit = wholeNumber(body.limit);
        if (limit === undefined || limit > MAX_UINT32) {
          const expected =
            `a whole number of runs from 0 to ${MAX_UINT32} (1 for the current run alone, 0 for all)`;
          return r.error(
            "invalid-argument",
            `limit: got ${JSON.stringify(body.limit)}, expected ${expected}`,
          );
        }
        const statusOnly = flagOf(body.statusOnly, "statusOnly");
        if (!statusOnly.ok) return r.error("invalid-argument", statusOnly.message);
        return read((job) => this.#get(r, job, instanceId, statusOnly.value, limit));
      }
      case "GetPodCache": {
        // The job manager's memory, as Peloton's cache: a job it does not drive is not loaded for this.
        const task = this.api.jm.jobs.get(jobId)?.tasks.get(instanceId);
        return task
          ? r.ok({ status: podStatusJson(task) })
          : r.error("not-found", `pod ${name} not found in cache`);
      }
      case "GetPodEvents":
      case "BrowsePodSandbox": {
        const podId = podIdOf(body);
        if (podId instanceof Error) return r.error("invalid-argument", podId.message);
        return method === "GetPodEvents"
          ? read((job) => this.#events(r, job, instanceId, podId))
          : read((job) => this.#sandbox(r, job, instanceId, podId));
      }
      case "StartPod":
      case "StopPod":
      case "RestartPod": {
        // RestartPod's alone: the other two have no such field.
        const checkSla = flagOf(method === "RestartPod" ? body.checkSla : undefined, "checkSla");
        if (!checkSla.ok) return r.error("invalid-argument", checkSla.message);
        return this.#live(r, jobId, instanceId, notFound, (job, task) => {
          const jm = this.api.jm;
          if (method === "StartPod") {
            // Peloton's: a finished batch job's pods do not start again, nor does a pod being deleted.
            if (job.config.type === "BATCH" && isTerminalJobState(job.runtime.state)) {
              return r.error(
                "invalid-argument",
                `job ${jobId} is a finished batch job: its pods cannot start again`,
              );
            }
            if (task.goalState === "DELETED") {
              return r.error("invalid-argument", `pod ${name} is being deleted`);
            }
            // A pod started in a stopped job starts the job again, as Peloton's StartPod does.
            if (job.runtime.goalState === "KILLED") jm.restoreJobGoal(job);
            jm.startTasks(job, [instanceId]);
          } else if (method === "StopPod") jm.stopTasks(job, [instanceId]);
          else {
            // `checkSla`: an available pod is not restarted while its job already has as many pods down as
            // its SLA allows (Peloton's filterRuntimeDiffsBySLA); one that is down already may restart.
            const limit = maintenanceLimit(job);
            if (
              checkSla.value && limit > 0 && availability(task) === "AVAILABLE" &&
              unavailableCount(job) >= limit
            ) {
              return r.error(
                "aborted",
                `pod restart would violate SLA: job ${jobId} has ${
                  unavailableCount(job)
                } pods unavailable, ` +
                  `its sla.maximumUnavailableInstances is ${limit}`,
              );
            }
            jm.restartTasks(job, [instanceId]);
          }
          // Asynchronous, as Peloton's: answered once the change is stored, not once the pod got there.
          this.api.whenDurable(r, `${method} of pod ${name}`, {});
        });
      }
      case "RefreshPod":
        // Peloton reloads the pod from its store and runs its goal-state action again: the store and the job
        // manager's memory agree here, so the action is run again.
        return this.#live(r, jobId, instanceId, notFound, (_job, task) => {
          this.api.jm.taskEngine.enqueue(task);
          r.ok({});
        });
      default: {
        // DeletePodEvents: the events of the pod's runs up to the one `podId` names (Peloton's, to bound their
        // growth); the current run's among them if it is named. A run after the current one never was:
        // Peloton deleted up to it, the current run's events with the rest; here it is refused.
        const podId = podIdOf(body);
        if (podId instanceof Error) return r.error("invalid-argument", podId.message);
        return this.#live(r, jobId, instanceId, notFound, (job, task) => {
          const id = podId === undefined ? undefined : parseMesosTaskId(podId);
          if (!id || id.jobId !== jobId || id.instanceId !== instanceId) {
            return r.error(
              "invalid-argument",
              `podId: got ${JSON.stringify(podId ?? null)}, expected a run of ${name}: ${name}-RUN`,
            );
          }
          if (id.runId > task.runId) {
            return r.error(
              "invalid-argument",
              `podId: got "${podId}", expected a run of ${name} up to its current run, ${name}-${task.runId}`,
            );
          }
          this.api.jm.write({ kind: "task.events.delete", jobId: job.jobId, instanceId, runId: id.runId });
          this.api.whenDurable(r, `DeletePodEvents of pod ${name}`, {});
        });
      }
    }
  }

  /** The pod's task in the job manager's memory (a job it drives), loading a stored job first. */
  #live(
    r: Reply,
    jobId: string,
    instanceId: number,
    notFound: () => void,
    fn: (job: JobEntry, task: TaskRecord) => void,
  ): void {
    this.api.withLiveJob(r, jobId, (job) => {
      const task = job.tasks.get(instanceId);
      if (!task) return notFound();
      fn(job, task);
    }, notFound);
  }

  /**
   * `GetPodResponse`: the current run and, newest first, the runs before it, with the pod's spec unless
   * `statusOnly`. A `limit` counts the current run, as Peloton's GetPod does: 1 is the current run alone,
   * N at most N-1 runs before it, 0 all of them.
   */
  #get(r: Reply, job: JobView, instanceId: number, statusOnly: boolean, limit: number): void {
    const task = job.tasks?.get(instanceId);
    if (!task) return r.error("not-found", `pod ${job.jobId}-${instanceId} not found`);
    // Each run with the config it ran (an earlier run's spec is left out when its version is not at hand).
    const info = (t: TaskRecord): Body => {
      const tc = t === task
        ? this.api.configOf(job, t.configVersion).get(instanceId)
        : this.api.configAt(job, t.configVersion)?.get(instanceId);
      return statusOnly || !tc
        ? { status: podStatusJson(t) }
        : { spec: podSpecOf(job, tc, instanceId), status: podStatusJson(t) };
    };
    const earlier = (task.history ?? []).slice().reverse();
    const previous = (limit ? earlier.slice(0, limit - 1) : earlier).map((run) => info(pastRun(task, run)));
    r.ok({ current: info(task), previous });
  }

  /** `GetPodEventsResponse`: the events of one run (the current one unless `podId` names another), newest first. */
  #events(r: Reply, job: JobView, instanceId: number, podId: string | undefined): void {
    const task = job.tasks?.get(instanceId);
    const name = `${job.jobId}-${instanceId}`;
    let runId = task?.runId;
    if (podId !== undefined) {
      const id = parseMesosTaskId(podId);
      if (!id || id.jobId !== job.jobId || id.instanceId !== instanceId) {
        return r.error("invalid-argument", `podId: got "${podId}", expected a run of ${name}: ${name}-RUN`);
      }
      runId = id.runId;
    }
    if (runId === undefined) return r.error("not-found", `pod ${name} not found`);
    this.api.jm.deps.store.getTaskEvents(job.jobId, instanceId).then(
      (events) =>
        r.ok({
          events: events.filter((e) => e.runId === runId).reverse().map(podEventJson),
        }),
      (err) => r.storeError(err),
    );
  }

  /** `BrowsePodSandboxResponse`: where a run's sandbox is, and its files. */
  #sandbox(r: Reply, job: JobView, instanceId: number, podId: string | undefined): void {
    const task = job.tasks?.get(instanceId);
    const name = `${job.jobId}-${instanceId}`;
    if (!task) return r.error("not-found", `pod ${name} not found`);
    let run: { runId: number; hostname?: string; agentId?: string } | undefined = task;
    if (podId !== undefined) {
      const id = parseMesosTaskId(podId);
      if (!id || id.jobId !== job.jobId || id.instanceId !== instanceId) {
        return r.error("invalid-argument", `podId: got "${podId}", expected a run of ${name}: ${name}-RUN`);
      }
      run = task.runId === id.runId ? task : task.history?.find((h) => h.runId === id.runId);
      if (!run) return r.error("not-found", `pod ${name} has no run ${id.runId}`);
    }
    // Peloton answers ABORTED for a pod that has not run; for a current run not launched yet whose earlier
    // runs were (its host in maintenance, say), the latest of those is named, so that it can be asked for.
    if (!run.hostname) {
      const launched = podId === undefined ? task.history?.findLast((h) => h.hostname) : undefined;
      if (!launched) return r.error("aborted", `pod ${name} has not been launched on any host`);
      const latest = mesosTaskId(job.jobId, instanceId, launched.runId);
      return r.error(
        "aborted",
        `pod ${name}: its current run ${mesosTaskId(job.jobId, instanceId, task.runId)} has not been ` +
          `launched yet; its latest launched run is ${latest}, on ${launched.hostname} (podId ${latest} ` +
          "browses its sandbox)",
      );
    }
    // The files are read through this API's sandbox endpoint (the CLI's `task logs`), not from a Mesos agent
    // port: the port and the master's address are left empty.
    r.ok({
      hostname: run.hostname,
      port: "",
      paths: ["stdout", "stderr"],
      mesosMasterHostname: "",
      mesosMasterPort: "",
    });
  }
}

/** The pod's spec as `ConvertTaskConfigToPodSpec` makes it, named after the pod. */
export function podSpecOf(job: JobView, tc: TaskConfig, instanceId: number): Body {
  return { ...podSpecJson(taskConfigToPodSpec(tc)), podName: { value: `${job.jobId}-${instanceId}` } };
}

/** `<configVersion>-0-0`, Peloton's `GetPodEntityVersion`. */
const podVersion = (v: number | undefined) => (v === undefined ? undefined : { value: `${v}-0-0` });

/** v1alpha `pod.PodStatus` of a run, as `ConvertTaskRuntimeToPodStatus` makes it. */
export function podStatusJson(t: TaskRecord): Body {
  const id = (run: number | undefined) =>
    run === undefined ? undefined : { value: mesosTaskId(t.jobId, t.instanceId, run) };
  const start = time(t.startTimeMs), end = time(t.completionTimeMs);
  return {
    state: podStateName(t.state),
    podId: id(t.runId),
    startTime: start,
    completionTime: end,
    host: t.hostname,
    containersStatus: [{
      ports: t.ports,
      healthy: {
        state: t.healthy ? HEALTH_STATE[t.healthy] ?? "HEALTH_STATE_INVALID" : "HEALTH_STATE_INVALID",
      },
      startTime: start,
      completionTime: end,
      message: t.message,
      reason: t.reason,
      terminationStatus: terminationStatusJson(t),
    }],
    desiredState: podStateName(t.goalState),
    message: t.message,
    reason: t.reason,
    failureCount: t.failureCount,
    volumeId: t.volumeId ? { value: t.volumeId } : undefined,
    version: podVersion(t.configVersion),
    desiredVersion: podVersion(t.desiredConfigVersion ?? t.configVersion),
    agentId: t.agentId ? { value: t.agentId } : undefined,
    prevPodId: id(prevRunId(t)),
    desiredPodId: id(t.desiredRunId ?? t.runId),
  };
}

/**
 * v1alpha `pod.PodEvent` of a stored task event, as Peloton's `ConvertTaskEventsToPodEvents` makes it. An
 * event stored before goals, versions, agents and health were kept lacks them: they are left out rather
 * than filled with today's (its previous run is still known from its own).
 */
function podEventJson(e: TaskEventRecord): Body {
  const id = (run: number | undefined) =>
    run === undefined ? undefined : { value: mesosTaskId(e.jobId, e.instanceId, run) };
  return {
    podId: id(e.runId),
    actualState: podStateName(e.state),
    desiredState: e.goalState && podStateName(e.goalState),
    timestamp: rfc3339(e.timeMs),
    version: podVersion(e.configVersion),
    desiredVersion: podVersion(e.desiredConfigVersion),
    agentId: e.agentId,
    hostname: e.hostname,
    message: e.message,
    reason: e.reason,
    prevPodId: id(e.prevRunId ?? (e.runId > 1 ? e.runId - 1 : undefined)),
    healthy: e.healthy && (HEALTH_STATE[e.healthy] ?? "HEALTH_STATE_INVALID"),
    desiredPodId: id(e.desiredRunId),
  };
}
