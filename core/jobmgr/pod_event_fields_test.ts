/** Pod events carry the task's goal, versions, agent, health and runs of their moment, in v0's and v1alpha's shapes. */
import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { POD_SERVICE } from "./pod_api.ts";

type Body = Record<string, unknown>;

const run = (r: number) => `${JOB_ID}-0-${r}`;

function ok(r: ApiReply): Body {
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.body as Body;
}

async function v0Events(rig: JobmgrRig): Promise<Body[]> {
  rig.store.settle();
  rig.api("task", "GetPodEvents", { jobId: { value: JOB_ID }, instanceId: 0 });
  await rig.reads();
  return ok(rig.replies()[0]).result as Body[];
}

async function v1Events(rig: JobmgrRig, podId?: string): Promise<Body[]> {
  rig.store.settle();
  rig.call(POD_SERVICE, "GetPodEvents", {
    podName: { value: `${JOB_ID}-0` },
    podId: podId && { value: podId },
  });
  await rig.reads();
  return ok(rig.replies()[0]).events as Body[];
}

/** A task that ran healthy on h1, was restarted (its kill asked for run 2) and was placed again. */
async function restarted(): Promise<JobmgrRig> {
  const rig = new JobmgrRig();
  rig.create({
    type: "SERVICE",
    task: {
      healthCheck: {
        enabled: true,
        type: "COMMAND",
        commandCheck: { command: "true" },
        initialIntervalSecs: 1,
        intervalSecs: 1,
        maxConsecutiveFailures: 2,
        timeoutSecs: 1,
      },
    },
  });
  rig.launch([0], "h1");
  rig.status(run(1), "TASK_RUNNING", { healthy: true });
  rig.call(POD_SERVICE, "RestartPod", { podName: { value: `${JOB_ID}-0` } });
  await rig.reads();
  ok(rig.replies()[0]);
  rig.status(run(1), "TASK_KILLED");
  return rig;
}

const id = (r: number) => ({ value: run(r) });
/** Each event's state and the fields of it that a test looks at. */
const pick = (events: Body[], ...fields: string[]) => events.map((e) => fields.map((f) => e[f]));

Deno.test("task GetPodEvents: each event has the goal, versions, agent, health and runs of its moment", async () => {
  const rig = await restarted();
  const events = (await v0Events(rig)).reverse(); // oldest first
  assert.deepEqual(pick(events, "actualState", "goalState", "configVersion", "desiredConfigVersion"), [
    ["PENDING", "RUNNING", 1, 1],
    ["LAUNCHING", "RUNNING", 1, 1],
    ["RUNNING", "RUNNING", 1, 1],
    ["KILLING", "RUNNING", 1, 1],
    ["KILLED", "RUNNING", 1, 1],
    ["INITIALIZED", "RUNNING", 1, 1],
    ["PENDING", "RUNNING", 1, 1],
  ]);
  // The agent and health of the run as the event found them; run 2 has neither yet.
  assert.deepEqual(pick(events, "agentID", "healthy"), [
    [undefined, undefined],
    ["agent-h1", undefined],
    ["agent-h1", "HEALTHY"],
    ["agent-h1", "HEALTHY"],
    ["agent-h1", "HEALTHY"],
    [undefined, undefined],
    [undefined, undefined],
  ]);
  // The restart asked for run 2 while run 1 was still being killed.
  assert.deepEqual(pick(events, "taskId", "prevTaskId", "desriedTaskId"), [
    [id(1), undefined, id(1)],
    [id(1), undefined, id(1)],
    [id(1), undefined, id(1)],
    [id(1), undefined, id(2)],
    [id(1), undefined, id(2)],
    [id(2), id(1), id(2)],
    [id(2), id(1), id(2)],
  ]);
});

Deno.test("PodService GetPodEvents: the same fields in v1alpha's names and types", async () => {
  const rig = await restarted();
  const [killed, killing, running] = await v1Events(rig, run(1));
  assert.deepEqual(running, {
    podId: id(1),
    actualState: "POD_STATE_RUNNING",
    desiredState: "POD_STATE_RUNNING",
    timestamp: "1970-01-01T00:00:00.000Z",
    version: { value: "1-0-0" },
    desiredVersion: { value: "1-0-0" },
    agentId: "agent-h1",
    hostname: "h1",
    message: undefined,
    reason: undefined,
    prevPodId: undefined,
    healthy: "HEALTH_STATE_HEALTHY",
    desiredPodId: id(1),
  });
  assert.deepEqual([killing.desiredPodId, killed.desiredPodId], [id(2), id(2)]);
  const [pending] = await v1Events(rig);
  assert.deepEqual([pending.podId, pending.prevPodId, pending.desiredPodId], [id(2), id(1), id(2)]);
  assert.equal(pending.agentId, undefined);
});

Deno.test("events stored before their goal, versions, agent and health were kept answer without them", async () => {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: 2 } } });
  rig.launch([0], "h1");
  rig.status(run(1), "TASK_FAILED");
  rig.store.settle();
  const stored = rig.store.events;
  stored.splice(
    0,
    stored.length,
    ...stored.map(({ jobId, instanceId, runId, state, timeMs, hostname }) => ({
      jobId,
      instanceId,
      runId,
      state,
      timeMs,
      hostname,
    })),
  );
  const present = (e: Body) => Object.keys(e).filter((k) => e[k] !== undefined).sort();
  const v0 = await v0Events(rig);
  const bare = ["actualState", "taskId", "timestamp"],
    placed = ["actualState", "hostname", "taskId", "timestamp"];
  // Run 2's PENDING and INITIALIZED, run 1's FAILED, LAUNCHING and PENDING.
  assert.deepEqual(v0.map(present), [bare, bare, placed, placed, bare]);
  // v1alpha still names the run before, which its own run gives.
  const v1 = await v1Events(rig);
  const v1Bare = ["actualState", "podId", "prevPodId", "timestamp"];
  assert.deepEqual(v1.map(present), [v1Bare, v1Bare]);
});
