/** Agent lifecycle in the emulator: loss and partition, healing, maintenance removal and return, re-registration. */
import type { EmuAgentConfig } from "./master_agent.ts";
import type { Allocator } from "./master_offers.ts";
import { type AgentRec, type Framework, isPartitionAware } from "./master_types.ts";
import {
  type Event,
  isTerminalState,
  type TaskState,
  type TaskStatus,
  type TaskStatusReason,
} from "./protocol.ts";
import { bagFromMesos } from "./resources.ts";

/** The slice of the master the agent lifecycle works on. */
export interface AgentHost {
  readonly agents: Map<string, AgentRec>;
  readonly frameworks: Map<string, Framework>;
  readonly allocator: Allocator;
  masterUpdate(
    fw: Framework,
    taskId: string,
    agentId: string | undefined,
    state: TaskState,
    reason: TaskStatusReason,
    message: string,
    extra?: Partial<TaskStatus>,
  ): void;
  send(fw: Framework, event: Event): void;
  newFramework(id: string): Framework;
  addAgent(config: Omit<EmuAgentConfig, "id" | "port">): AgentRec;
  /** Keeps a shutdown's promise so the master's stop can wait for it. */
  track(p: Promise<void>): void;
}

export class AgentLifecycle {
  readonly #h: AgentHost;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(host: AgentHost) {
    this.#h = host;
  }

  /**
   * Fault: the agent stops answering; partition-aware frameworks see TASK_UNREACHABLE, others TASK_LOST.
   * With `partition` its processes keep running and `healAgent` brings it back with them.
   */
  lose(agentId: string, partition = false): boolean {
    const rec = this.#h.agents.get(agentId);
    if (!rec || rec.state !== "active") return false;
    this.remove(rec, "unreachable", partition);
    return true;
  }

  /** The partition heals: the agent re-registers with its live tasks, which leave the unreachable set. */
  heal(agentId: string): boolean {
    const rec = this.#h.agents.get(agentId);
    if (!rec || rec.state !== "unreachable") return false;
    rec.state = "active";
    rec.registeredMs = Date.now();
    for (const fw of this.#h.frameworks.values()) {
      for (const [id, t] of [...fw.unreachable]) {
        const live = rec.agent.task(id);
        if (t.agentId !== agentId || !live) continue;
        fw.unreachable.delete(id);
        fw.tasks.set(id, {
          info: t.info,
          frameworkId: fw.id,
          agentId,
          state: live.latest,
          bag: t.bag,
          freed: false,
        });
      }
    }
    rec.agent.resume();
    this.#h.allocator.schedule();
    return true;
  }

  /** Unreachable (lost) or gone (maintenance DOWN): updates for its tasks, offers rescinded, FAILURE. */
  remove(rec: AgentRec, kind: "unreachable" | "gone", partition = false): void {
    rec.state = kind;
    const agentId = rec.agent.id;
    this.#h.allocator.rescindAgent(agentId);
    const now = Date.now();
    for (const fw of this.#h.frameworks.values()) {
      const pa = isPartitionAware(fw);
      for (const task of [...fw.tasks.values()].filter((t) => t.agentId === agentId)) {
        fw.tasks.delete(task.info.task_id.value);
        task.freed = true;
        if (kind === "unreachable") {
          fw.unreachable.set(task.info.task_id.value, { ...task, unreachableMs: now });
          this.#h.masterUpdate(
            fw,
            task.info.task_id.value,
            agentId,
            pa ? "TASK_UNREACHABLE" : "TASK_LOST",
            "REASON_AGENT_REMOVED",
            `Agent ${agentId} is unreachable`,
            { unreachable_time: { nanoseconds: now * 1e6 } },
          );
        } else {
          this.#h.masterUpdate(
            fw,
            task.info.task_id.value,
            agentId,
            pa ? "TASK_GONE_BY_OPERATOR" : "TASK_LOST",
            "REASON_AGENT_REMOVED_BY_OPERATOR",
            `Agent ${agentId} was removed for maintenance`,
          );
        }
      }
      this.#h.send(fw, { type: "FAILURE", failure: { agent_id: { value: agentId } } });
    }
    if (!partition) this.#h.track(rec.agent.crash());
  }

  /** STOP_MAINTENANCE: the machine's agent registers again under a new id, without tasks. */
  restore(rec: AgentRec): void {
    if (rec.replaced) return;
    rec.replaced = true;
    const { hostname, ip, resources, attributes } = rec.agent.config;
    this.#h.addAgent({ hostname, ip, resources, attributes });
  }

  /** After a master failover: agents are "recovering" until they re-register, reporting their tasks. */
  recover(reregisterDelayMs: number): void {
    const recovering = [...this.#h.agents.values()].filter((a) => a.state === "active");
    for (const rec of recovering) rec.state = "recovering";
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      for (const rec of recovering) this.#reregister(rec);
    }, reregisterDelayMs);
    this.#timers.add(timer);
  }

  #reregister(rec: AgentRec): void {
    if (rec.state !== "recovering") return;
    rec.state = "active";
    rec.registeredMs = Date.now();
    for (const t of rec.agent.tasks()) {
      const fw = this.#h.frameworks.get(t.frameworkId) ?? this.#h.newFramework(t.frameworkId);
      const id = t.info.task_id.value;
      if (fw.tasks.has(id)) continue;
      const bag = bagFromMesos(t.info.resources ?? []);
      fw.tasks.set(id, {
        info: t.info,
        frameworkId: fw.id,
        agentId: rec.agent.id,
        state: t.latest,
        bag,
        freed: isTerminalState(t.latest),
      });
    }
    rec.agent.resume();
    this.#h.allocator.schedule();
  }

  stop(): void {
    for (const t of this.#timers) clearTimeout(t);
  }
}
