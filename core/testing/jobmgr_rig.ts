/** Drives a job manager by hand in tests: API calls, resmgr replies, placements and backend statuses. */
import type {
  AdmissionWaits,
  ApiReply,
  Gang,
  HostPlacement,
  Preemption,
  RmStateChange,
} from "../messages.ts";
import type { JobConfig } from "../model/config_types.ts";
import { mesosTaskId, type TaskRecord } from "../model/records.ts";
import { MESOS_TO_TASK_STATE, type MesosTaskState } from "../model/states.ts";
import { JOB_SERVICE, jobConfigJson, TASK_SERVICE } from "../jobmgr/job_api.ts";
import {
  DEFAULT_JOBMGR_CONFIG,
  type JobEntry,
  JobManager,
  type JobmgrConfig,
  type JobmgrDeps,
} from "../jobmgr/jobmgr.ts";
import { jobsToRecover, recoveredJob } from "../jobmgr/job_load.ts";
import { STATELESS_SERVICE } from "../jobmgr/stateless_api.ts";
import { makeJobConfig, makePorts, type TestPorts } from "./harness.ts";

export const JOB_ID = "11111111-2222-4333-8444-555555555555";

export class JobmgrRig {
  readonly ports: TestPorts = makePorts();
  readonly jm: JobManager;
  #reqId = 0;

  constructor(config: Partial<JobmgrConfig> = {}, deps: Partial<JobmgrDeps> = {}) {
    this.jm = new JobManager(
      { ...this.ports, self: "jobmgr", resmgr: "resmgr", hostmgr: "hostmgr", ...deps },
      { ...DEFAULT_JOBMGR_CONFIG, ...config },
    );
    this.jm.start();
  }

  /**
   * The process dies and a new job manager starts over the rig's ports: the rig's own is stopped, and the
   * new one recovers from the store what production's recovery reads (active jobs with their tasks and the
   * config versions they use, and the workflows in progress) and starts. What the old one left in the
   * transport stays there for the test to look at or drop.
   */
  async restartJobManager(): Promise<JobManager> {
    this.jm.stop();
    const jm = new JobManager(
      { ...this.ports, self: "jobmgr", resmgr: "resmgr", hostmgr: "hostmgr" },
      DEFAULT_JOBMGR_CONFIG,
    );
    const updates = await this.store.activeUpdates();
    const active = await jobsToRecover(this.store, updates);
    jm.recover(await Promise.all(active.map((job) => recoveredJob(this.store, job, updates))), updates);
    jm.start();
    return jm;
  }

  /** Lets the goal-state engines run what is due now (they act on timers, as in the daemon). */
  tick(ms = 0): void {
    this.ports.clock.advance(ms);
  }

  get transport() {
    return this.ports.transport;
  }

  get store() {
    return this.ports.store;
  }

  /** Sends one public API call to the job manager; returns its reqId. */
  api(service: "job" | "task", method: string, body: unknown): number {
    const procedure = `${service === "job" ? JOB_SERVICE : TASK_SERVICE}::${method}`;
    this.jm.receive({ kind: "api", reqId: ++this.#reqId, replyTo: "api/1", procedure, body });
    this.tick();
    return this.#reqId;
  }

  /** Sends a call to any job manager service by its full name. */
  call(service: string, method: string, body: unknown): void {
    this.jm.receive({
      kind: "api",
      reqId: ++this.#reqId,
      replyTo: "api/1",
      procedure: `${service}::${method}`,
      body,
    });
    this.tick();
  }

  /** Lets API reads that go to the store (finished jobs, updates) answer. */
  async reads(): Promise<void> {
    // Store reads resolve through a few promise hops; let them all run.
    for (let i = 0; i < 10; i++) await Promise.resolve();
    this.tick();
  }

  /**
   * API replies to the client, taken out of the transport, once every write so far is durable (as a real
   * store soon makes them): calls that change something answer only then.
   */
  replies(): ApiReply[] {
    this.store.settle();
    return this.repliesSoFar();
  }

  /** API replies sent so far, with the store left as it is (for tests of what waits for durability). */
  repliesSoFar(): ApiReply[] {
    return this.transport.take("api-reply", "api/1");
  }

  /** Answers the job manager's GetResourcePool call as the resource manager would. */
  answerPool(children: string[] = []): void {
    const req = this.transport.takeOne("api", "resmgr");
    const poolinfo = { id: { value: "pool-a" }, children: children.map((value) => ({ value })) };
    this.jm.receive({ kind: "api-reply", reqId: req.reqId, body: { poolinfo } });
    this.tick();
  }

  /**
   * Answers the job manager's GetAdmissionWaits call (task List and Get of PENDING tasks) as the resource
   * manager would: pool /pool-a, limits far above any test task's, and the queues' waits given.
   */
  answerWaits(
    queues: AdmissionWaits["queues"] = {},
    limit = { cpu: 1000, memory: 1e9, disk: 1e9, gpu: 1000 },
    preemption = true,
  ): void {
    const req = this.transport.takeOne("api", "resmgr");
    if (!req.procedure.endsWith("::GetAdmissionWaits")) {
      throw new Error(`expected a GetAdmissionWaits call to the resource manager, got ${req.procedure}`);
    }
    this.jm.receive({
      kind: "api-reply",
      reqId: req.reqId,
      body: { waits: { path: "/pool-a", limit, preemption, queues } },
    });
  }

  answerPoolMissing(): void {
    const req = this.transport.takeOne("api", "resmgr");
    this.jm.receive({
      kind: "api-reply",
      reqId: req.reqId,
      body: { error: { notFound: { message: "nope" } } },
    });
  }

  /** Creates a job through the API, durable, and returns what the resource manager was sent. */
  create(overrides: Parameters<typeof makeJobConfig>[0] = {}, jobId = JOB_ID): { gangs: Gang[] } {
    const config: JobConfig = makeJobConfig(overrides);
    this.api("job", "Create", { id: { value: jobId }, config: jobConfigJson(config) });
    this.answerPool();
    this.store.settle();
    this.tick();
    const reply = this.replies();
    if (reply.length !== 1 || (reply[0].body as { error?: unknown })?.error) {
      throw new Error(`Cannot create job: ${JSON.stringify(reply)}`);
    }
    return { gangs: this.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs) };
  }

  /**
   * Creates a job through the v1alpha JobService (`body` holds the spec and whatever else CreateJob takes;
   * the job id is JOB_ID unless it gives one), answers the pool lookup and lets the engines run; the reply.
   */
  createStateless(body: Record<string, unknown>): ApiReply {
    this.call(STATELESS_SERVICE, "CreateJob", { jobId: { value: JOB_ID }, ...body });
    this.answerPool();
    this.store.settle();
    this.tick();
    return this.replies()[0];
  }

  job(jobId = JOB_ID): JobEntry {
    return this.jm.jobs.get(jobId)!;
  }

  task(instanceId: number, jobId = JOB_ID): TaskRecord {
    return this.job(jobId).tasks.get(instanceId)!;
  }

  /** The current Mesos task id of an instance. */
  taskId(instanceId: number, jobId = JOB_ID): string {
    return mesosTaskId(jobId, instanceId, this.task(instanceId, jobId).runId);
  }

  /** Answers the pending get-placements poll. */
  placements(
    placements: HostPlacement[],
    changes: RmStateChange[] = [],
    preemptions: Preemption[] = [],
  ): void {
    const req = this.transport.takeOne("get-placements", "resmgr");
    this.jm.receive({ kind: "placements", reqId: req.reqId, placements, changes, preemptions });
    this.tick();
  }

  /** Places instances on a host and returns the launch-tasks message the host manager got. */
  launch(instances: number[], hostname = "h1") {
    const tasks = instances.map((i) => ({ taskId: this.taskId(i), ports: {} }));
    this.placements([{ leaseId: `${hostname}#1`, hostname, agentId: `agent-${hostname}`, tasks }]);
    // A launch goes out once its tasks are stored LAUNCHING.
    this.store.settle();
    return this.transport.takeOne("launch-tasks", "hostmgr");
  }

  /** Delivers a backend status (as the host manager maps and forwards it). */
  status(
    taskId: string,
    state: MesosTaskState,
    extra: { reason?: string; hostname?: string; healthy?: boolean; timeMs?: number } = {},
  ): void {
    this.report(this.jm, taskId, state, extra);
    this.tick();
  }

  /**
   * A backend status of a task to `jm` (this rig's, or one `restartJobManager` recovered), as the host
   * manager forwards it; nothing due is run (`status` then ticks).
   */
  report(
    jm: JobManager,
    taskId: string,
    state: MesosTaskState,
    extra: { reason?: string; hostname?: string; healthy?: boolean; timeMs?: number } = {},
  ): void {
    const hostname = extra.hostname ?? "h1";
    jm.receive({
      kind: "task-statuses",
      statuses: [{
        taskId,
        state,
        pelotonState: MESOS_TO_TASK_STATE[state],
        hostname,
        agentId: `agent-${hostname}`,
        timeMs: extra.timeMs ?? this.ports.clock.now(),
        reason: extra.reason,
        healthy: extra.healthy,
      }],
    });
  }

  /**
   * Finishes a workflow's batch: each instance it stopped is KILLED, placed again and reports `outcome`.
   * Returns the batch's instances.
   */
  rollBatch(outcome: "TASK_RUNNING" | "TASK_FAILED" = "TASK_RUNNING"): number[] {
    const kills = this.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
    const batch = kills.map((id) => Number(id.split("-").at(-2)));
    for (const id of kills) this.status(id, "TASK_KILLED");
    this.launch(batch);
    for (const i of batch) this.status(this.taskId(i), outcome);
    return batch;
  }

  /** Places one instance with the given ports and returns the launch-tasks message. */
  placeWithPorts(instanceId: number, ports: Record<string, number>, hostname = "h1") {
    const tasks = [{ taskId: this.taskId(instanceId), ports }];
    this.placements([{ leaseId: `${hostname}#1`, hostname, agentId: `agent-${hostname}`, tasks }]);
    this.store.settle();
    return this.transport.takeOne("launch-tasks", "hostmgr");
  }
}

/** What `runningService` may change: the rig's config and ports, the job's config, and whether it settles. */
export interface RunningServiceOptions {
  config?: ConstructorParameters<typeof JobmgrRig>[0];
  deps?: ConstructorParameters<typeof JobmgrRig>[1];
  job?: Parameters<typeof makeJobConfig>[0];
  /** Its writes stored and its replies taken. */
  settled?: boolean;
}

/** A service job of `n` instances (with `job`'s overrides), all RUNNING on host h1. */
export function runningService(n: number, o: RunningServiceOptions = {}): JobmgrRig {
  const rig = new JobmgrRig(o.config, o.deps);
  rig.create({ ...o.job, type: "SERVICE", instanceCount: n });
  const all = [...Array(n).keys()];
  rig.launch(all);
  for (const i of all) rig.status(rig.taskId(i), "TASK_RUNNING");
  if (o.settled) {
    rig.store.settle();
    rig.replies();
  }
  return rig;
}

/** A shell command as a job config's task command. */
export const shellCommand = (value: string) => ({
  shell: true,
  value,
  arguments: [],
  environment: { variables: [] },
  uris: [],
});

/**
 * A v0 CreateUpdate of the job to a service config of `instanceCount` instances running `command`, from the
 * job's current config version; the update's id (the test fails on an error).
 */
export function createServiceUpdate(
  rig: JobmgrRig,
  command: string,
  instanceCount: number,
  updateConfig: object,
): string {
  const config = makeJobConfig({ type: "SERVICE", instanceCount, task: { command: shellCommand(command) } });
  rig.call("peloton.api.v0.update.svc.UpdateService", "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(config), changeLog: { version: rig.job().configVersion } },
    updateConfig,
  });
  const [reply] = rig.replies();
  if (reply.error) throw new Error(`CreateUpdate failed: ${JSON.stringify(reply.error)}`);
  return (reply.body as { updateID: { value: string } }).updateID.value;
}

/**
 * `rounds` times: a second passes, every run the job manager killed ends, and every PENDING instance is
 * launched and RUNNING; then `settleMs` pass (a run's default `minRunningSeconds`).
 */
export function relaunchKilled(rig: JobmgrRig, rounds: number, settleMs = 10_000): void {
  for (let round = 0; round < rounds; round++) {
    rig.tick(1_000);
    for (const k of rig.transport.take("kill-tasks", "hostmgr").flatMap((m) => m.tasks)) {
      rig.status(k.taskId, "TASK_KILLED");
    }
    const pending = [...rig.job().tasks.values()].filter((t) => t.state === "PENDING").map((t) =>
      t.instanceId
    );
    if (pending.length) {
      rig.launch(pending);
      for (const p of pending) rig.status(rig.taskId(p), "TASK_RUNNING");
    }
  }
  rig.tick(settleMs);
}
