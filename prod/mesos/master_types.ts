/** The Mesos master emulator's state: frameworks, agents, tasks and offers, shared by its parts. */
import type { EmuAgent } from "./master_agent.ts";
import type { Event, FrameworkInfo, TaskInfo, TaskState } from "./protocol.ts";
import type { Bag } from "./resources.ts";

/** One SUBSCRIBE connection: events go out on it until it closes. */
export interface Subscription {
  readonly streamId: string;
  send(event: Event): void;
  /** Ends the HTTP response. */
  close(): void;
}

export interface Framework {
  id: string;
  info: FrameworkInfo;
  capabilities: Set<string>;
  /** The role offers are allocated to (the first of `roles`, or the deprecated `role`). */
  role: string;
  sub?: Subscription;
  suppressed: Set<string>;
  /** Decline filters: agent id → time (ms) until which that agent is not offered. */
  filters: Map<string, number>;
  failoverTimer?: ReturnType<typeof setTimeout>;
  /** Tasks the master knows: live ones and terminal ones whose last update is not acknowledged. */
  tasks: Map<string, MasterTask>;
  /** Tasks on agents that became unreachable. */
  unreachable: Map<string, MasterTask & { unreachableMs: number }>;
  /** Terminal, acknowledged tasks, oldest first, up to `--max_completed_tasks_per_framework`. */
  completed: Map<string, MasterTask>;
  /** Learned from re-registering agents after a master failover; no SUBSCRIBE seen yet. */
  recovered: boolean;
}

export interface MasterTask {
  info: TaskInfo;
  frameworkId: string;
  agentId: string;
  /** The latest state the agent reported (TASK_STAGING until the first update). */
  state: TaskState;
  bag: Bag;
  /** Resources were returned to the agent (terminal state seen). */
  freed: boolean;
}

export interface OfferRec {
  id: string;
  frameworkId: string;
  agentId: string;
  bag: Bag;
  role: string;
  timer?: ReturnType<typeof setTimeout>;
}

/**
 * `recovering`: known from before a master failover, not re-registered yet (reconciliation stays silent);
 * `unreachable`: partitioned away; `gone`: removed for maintenance (DOWN) or by an operator.
 */
export type AgentState = "active" | "recovering" | "unreachable" | "gone";

export interface AgentRec {
  agent: EmuAgent;
  state: AgentState;
  registeredMs: number;
  /** A gone agent whose machine came back up under a new agent id. */
  replaced?: boolean;
}

/** The executor a task runs under: its custom executor, or the command executor named after the task. */
export function executorIdOf(info: TaskInfo): string {
  return info.executor?.executor_id.value ?? info.task_id.value;
}

export function isPartitionAware(fw: Framework): boolean {
  return fw.capabilities.has("PARTITION_AWARE");
}

/** Timers above this overflow to an immediate fire; such failover timeouts never expire in the emulator. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
