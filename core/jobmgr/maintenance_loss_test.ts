/** A task LOST because its host went down for maintenance runs again at once, uncounted; a lost agent counts. */
import assert from "node:assert/strict";
import { MESOS_TO_TASK_STATE } from "../model/states.ts";
import { JobmgrRig } from "../testing/jobmgr_rig.ts";

const HOST = "agent-2";

/** A stateful service of one instance, RUNNING on HOST (its volume's host, so pinned there). */
function statefulOnHost(): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1, task: { volume: { containerPath: "data", sizeMB: 8 } } });
  rig.launch([0], HOST);
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: HOST });
  return rig;
}

/** Instance 0's run LOST, as the host manager forwards it: with the reason and message given. */
function lost(rig: JobmgrRig, reason: string, message: string): void {
  rig.jm.receive({
    kind: "task-statuses",
    statuses: [{
      taskId: rig.taskId(0),
      state: "TASK_LOST",
      pelotonState: MESOS_TO_TASK_STATE.TASK_LOST,
      hostname: HOST,
      agentId: `agent-${HOST}`,
      timeMs: rig.ports.clock.now(),
      reason,
      message,
    }],
  });
  rig.tick();
}

const MAINTENANCE: [string, string, string][] = [
  // The host manager's LOST for a task still on the host when the minicluster took its machine down.
  ["the host manager's", "REASON_AGENT_REMOVED", `host ${HOST} lost: machine down for maintenance`],
  // The agent's own (the minicluster's, Mesos's: the operator removed the machine's agent).
  [
    "the agent's",
    "REASON_AGENT_REMOVED_BY_OPERATOR",
    "Agent minicluster-S2 removed: its machine is down for maintenance; Command terminated with signal 9",
  ],
];

for (const [whose, reason, message] of MAINTENANCE) {
  Deno.test(`a task LOST to host maintenance (${whose} status) runs again at once, uncounted, never throttled`, () => {
    const rig = statefulOnHost();
    for (let down = 1; down <= 3; down++) {
      lost(rig, reason, message);
      const t = rig.task(0);
      assert.equal(t.failureCount, 0, `time ${down}: not the task's failure`);
      assert.equal(t.runId, down + 1, `time ${down}: a new run at once`);
      assert.notEqual(t.message, "Task throttled due to failure");
      assert.notEqual(t.terminationReason, "SYSTEM_FAILURE");
      assert.equal(t.requiredHost, HOST, "still pinned to its volume's host, to run there once it is back");
      assert.equal(t.history?.at(-1)?.reason, reason, "the lost run stays in its history");
      assert.notEqual(rig.job().runtime.state, "FAILED");
      rig.launch([0], HOST);
      rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: HOST });
    }
  });
}

const AGENT_LOST: [string, string][] = [
  // The minicluster's removeAgent, as the host manager says it; an agent's own, as the emulator's.
  [`host ${HOST} lost: REASON_AGENT_REMOVED`, "the host manager's"],
  ["Agent removed", "the agent's"],
];

for (const [message, whose] of AGENT_LOST) {
  Deno.test(`a task LOST with its agent, no maintenance (${whose} status), is still a counted system failure`, () => {
    const rig = statefulOnHost();
    lost(rig, "REASON_AGENT_REMOVED", message);
    const t = rig.task(0);
    assert.equal(t.failureCount, 1);
    assert.equal(t.terminationReason, "SYSTEM_FAILURE");
    assert.equal(t.state, "LOST");
    assert.equal(t.message, "Task throttled due to failure");
    assert.equal(t.runId, 1, "held back, not run again at once");
  });
}
