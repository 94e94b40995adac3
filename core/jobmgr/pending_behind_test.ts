/** A PENDING task behind another job's gang at the head of its pool's queue is told so, not told of it as its own. */
import assert from "node:assert/strict";
import type { AdmissionWaits } from "../messages.ts";
import { DEFAULT_SLA } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

type Body = Record<string, unknown>;

const PENDING =
  "resource pool /pool-a has no room in its entitlement for the first task in line: cpu 12 of 12 " +
  "in use; it asks for cpu 1, memory 128 MB";

/** Asks for instance 0 and answers the resource manager's GetAdmissionWaits with these heads. */
function messageWith(heads: AdmissionWaits["heads"]): unknown {
  const rig = new JobmgrRig();
  rig.create({ sla: { ...DEFAULT_SLA, preemptible: true } });
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  const req = rig.transport.takeOne("api", "resmgr");
  const limit = { cpu: 1000, memory: 1e9, disk: 1e9, gpu: 1000 };
  const waits: AdmissionWaits = {
    path: "/pool-a",
    limit,
    preemption: true,
    queues: { pending: PENDING },
    heads,
  };
  rig.jm.receive({ kind: "api-reply", reqId: req.reqId, body: { waits } });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return (((reply.body as Body).result as Body).runtime as Body).message;
}

Deno.test("a PENDING task behind another job's task at the head of its pool's queue is told whose it is", () => {
  assert.equal(
    messageWith({ pending: { jobId: "other-job", tasks: 1 } }),
    `behind job other-job's task at the head of resource pool /pool-a's pending queue, which waits: ${PENDING}`,
  );
  assert.equal(
    messageWith({ pending: { jobId: "other-job", tasks: 3 } }),
    "behind job other-job's gang of 3 tasks at the head of resource pool /pool-a's pending queue, which " +
      `waits: ${PENDING}`,
  );
  // Its own job's task at the head: the reason is about its own job's work, as before.
  assert.equal(messageWith({ pending: { jobId: JOB_ID, tasks: 1 } }), PENDING);
  // Another job's gang that is only passed over holds no one: nothing to say.
  assert.equal(messageWith({ pending: { jobId: "other-job", tasks: 1, passedOver: true } }), undefined);
});
