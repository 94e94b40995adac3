/** The emulated master's rules: subscription and failover, task launch, updates, kills, reconciliation, agent loss. */
import { type AgentContext, EmuAgent, type EmuAgentConfig } from "./master_agent.ts";
import { AgentIds } from "./master_agent_ids.ts";
import { AgentLifecycle } from "./master_agents.ts";
import { Maintenance } from "./master_maintenance.ts";
import { MaintenanceFile } from "./master_maintenance_file.ts";
import { reconcile } from "./master_reconcile.ts";
import { subscribeProblem } from "./master_validation.ts";
import { Allocator } from "./master_offers.ts";
import { CheckpointFile } from "./master_volumes.ts";
import {
  type AgentRec,
  executorIdOf,
  type Framework,
  type MasterTask,
  MAX_TIMER_MS,
  type Subscription,
} from "./master_types.ts";
import {
  type Call,
  durationToMs,
  type Event,
  isTerminalState,
  type MasterInfo,
  type TaskInfo,
  type TaskState,
  type TaskStatus,
  type TaskStatusReason,
} from "./protocol.ts";
import type { Bag } from "./resources.ts";
import { createSpawner, type Spawner } from "../minicluster/spawner.ts";

export interface MasterCoreOptions {
  dataDir: string;
  hostname: string;
  port: number;
  agents: Omit<EmuAgentConfig, "id" | "port">[];
  heartbeatIntervalMs: number;
  allocationIntervalMs: number;
  offerTimeoutMs?: number;
  statusRetryMinMs: number;
  statusRetryMaxMs: number;
  /** The command executor's default SIGTERM→SIGKILL grace. */
  defaultKillGraceMs: number;
  /** Mesos's `--max_completed_tasks_per_framework` (1000). */
  maxCompletedTasks: number;
  /**
   * Start task processes from a worker thread (posix_spawn through libc where it can be used), so a burst
   * of launches does not stall the master.
   */
  spawnInWorker?: boolean;
  log?: (line: string) => void;
}

export class MasterCore {
  readonly allocator: Allocator;
  readonly maintenance: Maintenance;
  readonly agentLifecycle: AgentLifecycle;
  readonly #o: MasterCoreOptions;
  readonly #frameworks = new Map<string, Framework>();
  readonly #removed = new Set<string>();
  readonly #agents = new Map<string, AgentRec>();
  readonly #agentCtx: AgentContext;
  readonly #spawner?: Spawner;
  readonly #pending = new Set<Promise<void>>();
  readonly #shutdownExecutors = new Set<string>();
  readonly #agentIds: AgentIds;
  #masterId = crypto.randomUUID();
  #frameworkSeq = 0;
  #agentSeq = 0;
  #stopped = false;

  constructor(options: MasterCoreOptions) {
    this.#o = options;
    this.#agentIds = new AgentIds(options.dataDir);
    this.#spawner = options.spawnInWorker ? createSpawner("auto") : undefined;
    this.#agentCtx = {
      spawner: this.#spawner,
      dataDir: options.dataDir,
      checkpoints: new CheckpointFile(options.dataDir, options.log),
      log: options.log,
      retryMinMs: options.statusRetryMinMs,
      retryMaxMs: options.statusRetryMaxMs,
      forward: (agent, fwId, status, latest) => this.#forward(agent, fwId, status, latest),
      executorExited: (agent, fwId, executorId, status) =>
        this.#executorExited(agent, fwId, executorId, status),
    };
    const host = {
      frameworks: () => this.#frameworks.values(),
      agents: () => this.#agents.values(),
      masterId: () => this.#masterId,
      tasksOn: (agentId: string) => this.tasksOn(agentId),
      send: (fw: Framework, e: Event) => this.send(fw, e),
    };
    this.allocator = new Allocator({
      ...host,
      unavailability: (agentId) => this.maintenance.unavailability(agentId),
      launch: (fw, rec, info, bag) => this.#launch(fw, rec, info, bag),
      masterUpdate: (fw, taskId, agentId, state, reason, message) =>
        this.masterUpdate(fw, taskId, agentId, state, reason as TaskStatusReason, message),
      afterAllocation: () => this.maintenance.sendInverseOffers(),
      log: options.log,
    }, {
      allocationIntervalMs: options.allocationIntervalMs,
      offerTimeoutMs: options.offerTimeoutMs,
      now: Date.now,
    });
    this.maintenance = new Maintenance({
      ...host,
      rescindAgentOffers: (agentId) => this.allocator.rescindAgent(agentId),
      removeAgent: (rec) => this.agentLifecycle.remove(rec, "gone"),
      restoreAgent: (rec) => this.agentLifecycle.restore(rec),
    }, new MaintenanceFile(options.dataDir));
    this.agentLifecycle = new AgentLifecycle({
      agents: this.#agents,
      frameworks: this.#frameworks,
      allocator: this.allocator,
      masterUpdate: (...a) => this.masterUpdate(...a),
      send: (fw, e) => this.send(fw, e),
      newFramework: (id) => this.#newFramework(id),
      addAgent: (config) => this.#addAgent(config),
      track: (p) => this.#track(p),
    });
    // The agents it starts with are those of its last run on this data dir: each registers under its id,
    // except on a machine the stored maintenance has DOWN, whose agent cannot register until it is brought up.
    for (const a of options.agents) {
      const down = this.maintenance.machineIsDown(a.hostname, a.ip);
      if (down) {
        options.log?.(`emulator: machine ${a.hostname} (${a.ip}) is DOWN for maintenance; its agent waits`);
      }
      this.#addAgent(a, this.#agentIds.saved(a.hostname), down ? "gone" : "active");
    }
  }

  get masterId(): string {
    return this.#masterId;
  }

  masterInfo(): MasterInfo {
    const { hostname, port } = this.#o;
    const ip = hostname.split(".").map(Number);
    const ipNum = ip.length === 4 && ip.every((n) => n >= 0 && n < 256)
      ? ((ip[3] << 24) | (ip[2] << 16) | (ip[1] << 8) | ip[0]) >>> 0
      : 0;
    return {
      id: this.#masterId,
      ip: ipNum,
      port,
      hostname,
      version: "1.11.0",
      address: { hostname, ip: hostname, port },
    };
  }

  framework(id: string | undefined): Framework | undefined {
    return id === undefined ? undefined : this.#frameworks.get(id);
  }

  frameworks(): Framework[] {
    return [...this.#frameworks.values()];
  }

  agents(): AgentRec[] {
    return [...this.#agents.values()];
  }

  agent(agentId: string): AgentRec | undefined {
    return this.#agents.get(agentId);
  }

  tasksOn(agentId: string): MasterTask[] {
    const out: MasterTask[] = [];
    for (const fw of this.#frameworks.values()) {
      for (const t of fw.tasks.values()) if (t.agentId === agentId && !t.freed) out.push(t);
    }
    return out;
  }

  send(fw: Framework, event: Event): void {
    if (!fw.sub) return; // dropped for a disconnected framework, as the master does
    fw.sub.send(event);
  }

  /**
   * SUBSCRIBE after HTTP validation: the framework id once SUBSCRIBED was sent, or the ERROR message of
   * a refused subscription (the caller sends it on the stream, which then closes).
   */
  subscribe(
    call: Extract<Call, { type: "SUBSCRIBE" }>,
    sub: Subscription,
  ): { frameworkId: string } | { error: string } {
    const id = call.framework_id?.value;
    const error = id !== undefined && this.#removed.has(id)
      ? "Framework has been removed"
      : subscribeProblem(call);
    if (error) return { error };
    return { frameworkId: this.#subscribe(call, sub) };
  }

  #subscribe(call: Extract<Call, { type: "SUBSCRIBE" }>, sub: Subscription): string {
    const info = call.subscribe.framework_info;
    const capabilities = new Set((info.capabilities ?? []).map((c) => c.type));
    const roles = info.roles?.length ? info.roles : [info.role ?? "*"];
    const id = call.framework_id?.value;
    let fw = this.framework(id);
    if (fw) {
      // A new subscription with the same id always wins; the old stream learns why it ends.
      if (fw.sub) {
        fw.sub.send({ type: "ERROR", error: { message: "Framework failed over" } });
        fw.sub.close();
      }
      clearTimeout(fw.failoverTimer);
      this.allocator.discard(fw.id);
      this.maintenance.discard(fw.id);
    } else {
      fw = this.#newFramework(id ?? `${this.#masterId}-${String(this.#frameworkSeq++).padStart(4, "0")}`);
    }
    Object.assign(fw, {
      info: { ...info, id: { value: fw.id } },
      capabilities,
      role: roles[0],
      recovered: false,
      sub,
    });
    fw.suppressed = new Set(call.subscribe.suppressed_roles ?? []);
    this.send(fw, {
      type: "SUBSCRIBED",
      subscribed: {
        framework_id: { value: fw.id },
        heartbeat_interval_seconds: this.#o.heartbeatIntervalMs / 1000,
        master_info: this.masterInfo(),
      },
    });
    this.allocator.schedule(0);
    return fw.id;
  }

  /** The subscription connection closed: offers are recovered and the failover timeout starts. */
  disconnected(frameworkId: string, sub: Subscription): void {
    const fw = this.#frameworks.get(frameworkId);
    if (!fw || fw.sub !== sub) return;
    fw.sub = undefined;
    this.allocator.discard(fw.id);
    this.maintenance.discard(fw.id);
    this.#startFailover(fw);
  }

  /** Every non-SUBSCRIBE call of a connected framework (validated by the HTTP layer). */
  handle(fw: Framework, call: Call): void {
    switch (call.type) {
      case "TEARDOWN":
        return this.#removeFramework(fw);
      case "ACCEPT":
        return this.allocator.accept(fw, call.accept);
      case "DECLINE":
        return this.allocator.decline(fw, call.decline.offer_ids.map((o) => o.value), call.decline.filters);
      case "REVIVE":
        return this.allocator.revive(fw, call.revive?.roles);
      case "SUPPRESS":
        return this.allocator.suppress(fw, call.suppress?.roles);
      case "ACCEPT_INVERSE_OFFERS":
        return this.maintenance.respond(
          fw,
          call.accept_inverse_offers.inverse_offer_ids.map((i) => i.value),
          "ACCEPT",
          Date.now(),
        );
      case "DECLINE_INVERSE_OFFERS":
        return this.maintenance.respond(
          fw,
          call.decline_inverse_offers.inverse_offer_ids.map((i) => i.value),
          "DECLINE",
          Date.now(),
        );
      case "KILL":
        return this.#kill(fw, call.kill);
      case "SHUTDOWN":
        return this.#shutdownExecutor(fw, call.shutdown.executor_id.value, call.shutdown.agent_id.value);
      case "ACKNOWLEDGE":
        return this.#acknowledge(fw, call.acknowledge);
      case "RECONCILE":
        return this.reconcile(fw, call.reconcile.tasks ?? []);
      case "MESSAGE": // the command executor has no handler for framework messages
      case "REQUEST": // ignored by Mesos's built-in allocator
        return;
    }
  }

  /** Sends a status the master generated itself: no uuid, never acknowledged, lost if disconnected. */
  masterUpdate(
    fw: Framework,
    taskId: string,
    agentId: string | undefined,
    state: TaskState,
    reason: TaskStatusReason,
    message: string,
    extra: Partial<TaskStatus> = {},
  ): void {
    const status: TaskStatus = {
      task_id: { value: taskId },
      state,
      message,
      source: "SOURCE_MASTER",
      reason,
      ...extra,
    };
    if (agentId) status.agent_id = { value: agentId };
    status.timestamp = Date.now() / 1000;
    this.send(fw, { type: "UPDATE", update: { status } });
  }

  /** RECONCILE: implicit for an empty list, otherwise the explicit case table. */
  reconcile(fw: Framework, tasks: { task_id: { value: string }; agent_id?: { value: string } }[]): void {
    reconcile(fw, tasks, this.#agents, (...a) => this.masterUpdate(...a));
  }

  #kill(fw: Framework, kill: Extract<Call, { type: "KILL" }>["kill"]): void {
    const id = kill.task_id.value;
    const task = fw.tasks.get(id);
    // A kill of an unknown task is answered by reconciling it.
    if (!task) {
      return this.reconcile(fw, [{
        task_id: kill.task_id,
        ...(kill.agent_id ? { agent_id: kill.agent_id } : {}),
      }]);
    }
    // Mesos silently ignores a kill naming another agent than the task's ("TODO: Return a Bad Request").
    if (kill.agent_id && kill.agent_id.value !== task.agentId) return;
    const rec = this.#agents.get(task.agentId);
    if (!rec || rec.state !== "active") return;
    const graceMs = durationToMs(kill.kill_policy?.grace_period) ??
      durationToMs(task.info.kill_policy?.grace_period) ?? this.#o.defaultKillGraceMs;
    rec.agent.kill(id, graceMs, fw.capabilities.has("TASK_KILLING_STATE"));
  }

  #shutdownExecutor(fw: Framework, executorId: string, agentId: string): void {
    const task = [...fw.tasks.values()].find((t) =>
      t.agentId === agentId && executorIdOf(t.info) === executorId
    );
    const rec = this.#agents.get(agentId);
    if (!task || rec?.state !== "active") return;
    // A custom executor's exit is reported when its process ends (`#executorExited`).
    if (!task.info.executor) this.#shutdownExecutors.add(executorId);
    rec.agent.kill(task.info.task_id.value, 0, false);
  }

  #acknowledge(fw: Framework, ack: Extract<Call, { type: "ACKNOWLEDGE" }>["acknowledge"]): void {
    const rec = this.#agents.get(ack.agent_id.value);
    if (!rec || rec.state !== "active") return; // dropped: the agent resends once it is back
    if (rec.agent.acknowledge(ack.task_id.value, ack.uuid) === "acked-terminal") {
      const task = fw.tasks.get(ack.task_id.value);
      if (task && task.agentId === rec.agent.id) {
        fw.tasks.delete(ack.task_id.value);
        // Mesos keeps the last completed tasks of a framework for the operator API.
        fw.completed.set(ack.task_id.value, task);
        if (fw.completed.size > this.#o.maxCompletedTasks) {
          fw.completed.delete(fw.completed.keys().next().value!);
        }
      }
    }
  }

  #launch(fw: Framework, rec: AgentRec, info: TaskInfo, bag: Bag): void {
    const id = info.task_id.value;
    fw.tasks.set(id, {
      info,
      frameworkId: fw.id,
      agentId: rec.agent.id,
      state: "TASK_STAGING",
      bag,
      freed: false,
    });
    rec.agent.launch(fw.id, info, this.#o.defaultKillGraceMs);
  }

  #forward(agent: EmuAgent, frameworkId: string, status: TaskStatus, latest: TaskState): void {
    const rec = this.#agents.get(agent.id);
    if (this.#stopped || !rec || rec.agent !== agent || rec.state !== "active") return; // retried after re-registration
    const fw = this.#frameworks.get(frameworkId);
    if (!fw) return;
    const task = fw.tasks.get(status.task_id.value);
    if (task && task.agentId === agent.id) {
      task.state = latest;
      if (isTerminalState(latest) && !task.freed) {
        task.freed = true;
        this.allocator.schedule();
      }
    }
    this.send(fw, { type: "UPDATE", update: { status } });
    const executor = status.executor_id?.value ?? status.task_id.value;
    if (isTerminalState(status.state) && this.#shutdownExecutors.delete(executor)) {
      // The command executor was shut down: FAILURE with its raw wait status (killed by SIGKILL).
      this.send(fw, {
        type: "FAILURE",
        failure: { agent_id: { value: agent.id }, executor_id: { value: executor }, status: 9 },
      });
    }
  }

  /** A custom executor exited: FAILURE with its id and wait status, lost if the framework is disconnected. */
  #executorExited(
    agent: EmuAgent,
    frameworkId: string,
    executorId: string,
    status: number | undefined,
  ): void {
    const rec = this.#agents.get(agent.id);
    const fw = this.#frameworks.get(frameworkId);
    if (this.#stopped || !fw || rec?.agent !== agent || rec.state !== "active") return;
    const failure = { agent_id: { value: agent.id }, executor_id: { value: executorId } };
    this.send(fw, { type: "FAILURE", failure: status === undefined ? failure : { ...failure, status } });
  }

  #newFramework(id: string): Framework {
    const fw: Framework = {
      id,
      info: { user: "", name: "" },
      capabilities: new Set(),
      role: "*",
      suppressed: new Set(),
      filters: new Map(),
      tasks: new Map(),
      unreachable: new Map(),
      completed: new Map(),
      recovered: true,
    };
    this.#frameworks.set(id, fw);
    return fw;
  }

  #startFailover(fw: Framework): void {
    clearTimeout(fw.failoverTimer);
    const ms = (fw.info.failover_timeout ?? 0) * 1000;
    if (ms > MAX_TIMER_MS) return; // weeks-long timeouts outlive the emulator anyway
    fw.failoverTimer = setTimeout(() => {
      this.#o.log?.(`emulator: framework ${fw.id} did not re-subscribe within ${ms} ms; removing it`);
      this.#removeFramework(fw);
    }, ms);
  }

  /** TEARDOWN or failover timeout: every task is killed and the id can never subscribe again. */
  #removeFramework(fw: Framework): void {
    clearTimeout(fw.failoverTimer);
    fw.sub?.close();
    fw.sub = undefined;
    this.allocator.discard(fw.id);
    this.maintenance.discard(fw.id);
    for (const rec of this.#agents.values()) this.#track(rec.agent.shutdownFramework(fw.id));
    this.#frameworks.delete(fw.id);
    this.#removed.add(fw.id);
    this.allocator.schedule();
  }

  /**
   * Registers an agent under `savedId` when no agent has it yet, else under a new id; one `gone` (its machine
   * DOWN) is only known, so that bringing its machine up registers it.
   */
  #addAgent(
    config: Omit<EmuAgentConfig, "id" | "port">,
    savedId?: string,
    state: "active" | "gone" = "active",
  ): AgentRec {
    const id = savedId !== undefined && !this.#agents.has(savedId)
      ? savedId
      : `${this.#masterId}-S${this.#agentSeq++}`;
    const previous = this.#agentIds.saved(config.hostname);
    if (previous !== undefined && previous !== id && this.#agents.get(previous)?.state !== "active") {
      this.#adoptVolumes(previous, id);
    }
    this.#agentIds.record(config.hostname, id);
    const agent = new EmuAgent({ ...config, id, port: this.#o.port }, this.#agentCtx);
    const rec: AgentRec = { agent, state, registeredMs: Date.now() };
    this.#agents.set(id, rec);
    this.allocator.schedule();
    return rec;
  }

  /**
   * The machine's persistent volumes go to its agent's new id: a Mesos agent keeps them in its work dir
   * (`volumes/roles/<role>/<id>`), whatever id it registers under, and recovers them with its checkpointed
   * resources. The emulator keeps them under the agent id (`<dir>/agents/<id>/volumes`), so they move.
   */
  #adoptVolumes(from: string, to: string): void {
    const dir = (id: string) => `${this.#o.dataDir}/agents/${id}/volumes`;
    try {
      Deno.statSync(dir(to));
      return; // the new id has volumes of its own already: nothing is merged
    } catch { /* none yet */ }
    try {
      Deno.mkdirSync(`${this.#o.dataDir}/agents/${to}`, { recursive: true });
      Deno.renameSync(dir(from), dir(to));
      this.#o.log?.(`emulator: agent ${to} recovered the persistent volumes of ${from} (same machine)`);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) {
        this.#o.log?.(`emulator: cannot move the volumes of agent ${from} to ${to}: ${(e as Error).message}`);
      }
    }
  }

  /** Adds an agent at runtime (tests). */
  addAgent(config: Omit<EmuAgentConfig, "id" | "port">): string {
    return this.#addAgent(config).agent.id;
  }

  /**
   * Fault: the master process restarts. Every stream drops; with `keepState` false the frameworks and
   * the task table are forgotten, and agents re-register (reporting their tasks) after a delay.
   */
  restart(keepState: boolean, reregisterDelayMs: number): void {
    this.#masterId = crypto.randomUUID();
    for (const fw of this.#frameworks.values()) {
      fw.sub?.close();
      fw.sub = undefined;
      this.allocator.discard(fw.id);
      this.maintenance.discard(fw.id);
      if (keepState) this.#startFailover(fw);
      else clearTimeout(fw.failoverTimer);
    }
    if (keepState) return;
    this.#frameworks.clear();
    this.#removed.clear();
    this.agentLifecycle.recover(reregisterDelayMs);
  }

  loseAgent(agentId: string, partition = false): boolean {
    return this.agentLifecycle.lose(agentId, partition);
  }

  healAgent(agentId: string): boolean {
    return this.agentLifecycle.heal(agentId);
  }

  /**
   * The task a framework's executor runs, for `/files`: a custom executor's task, live, unreachable or
   * completed; otherwise the id itself, a command task's executor id being its task id.
   */
  taskOfExecutor(frameworkId: string, executorId: string): string {
    const fw = this.#frameworks.get(frameworkId);
    const tasks = fw ? [...fw.tasks.values(), ...fw.unreachable.values(), ...fw.completed.values()] : [];
    return tasks.find((t) => t.info.executor?.executor_id.value === executorId)?.info.task_id.value ??
      executorId;
  }

  /** Sandbox of a task on any agent (for the `/files` endpoint). */
  sandboxOf(taskId: string): string | undefined {
    for (const rec of this.#agents.values()) {
      if (rec.agent.task(taskId)) return rec.agent.sandbox(taskId);
    }
    return undefined;
  }

  #track(p: Promise<void>): void {
    this.#pending.add(p);
    p.finally(() => this.#pending.delete(p));
  }

  /** Drops every subscription and waits for every task process to be gone. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.agentLifecycle.stop();
    for (const fw of this.#frameworks.values()) {
      clearTimeout(fw.failoverTimer);
      fw.sub?.close();
      fw.sub = undefined;
    }
    this.allocator.stop();
    await Promise.all([...this.#agents.values()].map((a) => a.agent.stop()));
    await this.#spawner?.close();
    await Promise.all([...this.#pending]);
  }
}
