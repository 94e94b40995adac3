/** Reconciliation as `Master::reconcile` answers it: implicit, and the explicit case table. */
import { type AgentRec, type Framework, isPartitionAware, type MasterTask } from "./master_types.ts";
import type { TaskState, TaskStatus, TaskStatusReason } from "./protocol.ts";

/** Sends a master-generated update (no uuid). */
export type MasterUpdate = (
  fw: Framework,
  taskId: string,
  agentId: string | undefined,
  state: TaskState,
  reason: TaskStatusReason,
  message: string,
  extra?: Partial<TaskStatus>,
) => void;

/**
 * Implicit (empty list): the latest state of every task the master knows, unreachable ones included.
 * Explicit, per task: known → latest state; unknown on an agent still re-registering → no answer;
 * on a registered agent → TASK_GONE; unreachable → TASK_UNREACHABLE; gone → TASK_GONE_BY_OPERATOR;
 * unknown agent → TASK_UNKNOWN; frameworks without PARTITION_AWARE get TASK_LOST for all unknown cases.
 */
export function reconcile(
  fw: Framework,
  tasks: { task_id: { value: string }; agent_id?: { value: string } }[],
  agents: ReadonlyMap<string, AgentRec>,
  update: MasterUpdate,
): void {
  const pa = isPartitionAware(fw);
  const latest = (t: MasterTask) =>
    update(
      fw,
      t.info.task_id.value,
      t.agentId,
      t.state,
      "REASON_RECONCILIATION",
      "Reconciliation: Latest task state",
    );
  const unreachable = (t: MasterTask & { unreachableMs: number }) =>
    update(
      fw,
      t.info.task_id.value,
      t.agentId,
      pa ? "TASK_UNREACHABLE" : "TASK_LOST",
      "REASON_RECONCILIATION",
      "Reconciliation: Task is unreachable",
      { unreachable_time: { nanoseconds: t.unreachableMs * 1e6 } },
    );
  if (tasks.length === 0) {
    for (const t of fw.tasks.values()) latest(t);
    for (const t of fw.unreachable.values()) unreachable(t);
    return;
  }
  const recovering = [...agents.values()].some((a) => a.state === "recovering");
  for (const { task_id, agent_id } of tasks) {
    const id = task_id.value, agentId = agent_id?.value;
    const known = fw.tasks.get(id), gone = fw.unreachable.get(id);
    if (known) latest(known);
    else if (gone) unreachable(gone);
    else if (agentId !== undefined) {
      const rec = agents.get(agentId);
      // An agent still re-registering after a master failover may yet report the task: no answer.
      if (rec?.state === "recovering") continue;
      const [state, message]: [TaskState, string] = !rec
        ? ["TASK_UNKNOWN", "Reconciliation: Task is unknown"]
        : rec.state === "active"
        ? ["TASK_GONE", "Reconciliation: Task is unknown to the agent"]
        : rec.state === "unreachable"
        ? ["TASK_UNREACHABLE", "Reconciliation: Task is unreachable"]
        : ["TASK_GONE_BY_OPERATOR", "Reconciliation: Task is gone"];
      update(fw, id, agentId, pa ? state : "TASK_LOST", "REASON_RECONCILIATION", message);
    } else if (!recovering) {
      update(
        fw,
        id,
        undefined,
        pa ? "TASK_UNKNOWN" : "TASK_LOST",
        "REASON_RECONCILIATION",
        "Reconciliation: Task is unknown",
      );
    }
  }
}
