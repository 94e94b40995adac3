/**
 * A resource pool deleted while a job is being created in it: exactly one wins. The job manager's pool
 * lookup claims the pool at the resource manager, so a delete that comes after it is refused as busy,
 * naming the job, until the job's tasks are in the pool; one that comes before it makes the create fail.
 * A job manager and a resource manager over one transport, each message delivered by hand.
 */
import assert from "node:assert/strict";
import { jobConfigJson } from "./job_api.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";
import { ResourceManager } from "../resmgr/resmgr.ts";
import { RESPOOL_SERVICE } from "../resmgr/respool_api.ts";
import { makeJobConfig, makeRespoolConfig, makeStatelessSpec } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

type Body = Record<string, unknown>;
const BUSY = `resource pool /a is busy: job ${JOB_ID} is being created in it`;

function setup() {
  const rig = new JobmgrRig();
  const rm = new ResourceManager({ ...rig.ports, self: "resmgr", hostmgr: "hostmgr" });
  let reqId = 0;
  /** An operator's respool call, answered by the resource manager once durable. */
  const admin = (method: string, body: unknown): Body => {
    rm.receive({
      kind: "api",
      reqId: ++reqId,
      replyTo: "admin",
      procedure: `${RESPOOL_SERVICE}::${method}`,
      body,
    });
    rig.store.settle();
    const [r] = rig.transport.take("api-reply", "admin");
    assert.ok(r, `a reply to ${method}`);
    return (r.body ?? {}) as Body;
  };
  admin("CreateResourcePool", { id: { value: "pool-a" }, config: makeRespoolConfig("a") });
  /** A delete of an idle leaf first reads the store for jobs still in it: answered after that read. */
  const deletePool = async (): Promise<Body> => {
    rm.receive({
      kind: "api",
      reqId: ++reqId,
      replyTo: "admin",
      procedure: `${RESPOOL_SERVICE}::DeleteResourcePool`,
      body: { path: { value: "/a" } },
    });
    await new Promise((resolve) => setTimeout(resolve, 0));
    rig.store.settle();
    const [r] = rig.transport.take("api-reply", "admin");
    assert.ok(r, "a reply to DeleteResourcePool");
    return (r.body ?? {}) as Body;
  };
  /** The job manager's messages to the resource manager, delivered; and the replies back. */
  const toResmgr = () => rig.transport.deliverTo("resmgr", rm);
  const toJobmgr = () => {
    rig.transport.deliverTo("jobmgr", rig.jm);
    rig.tick();
  };
  /** Lets the create finish: its writes durable, its tasks enqueued at the resource manager. */
  const settle = () => {
    rig.store.settle();
    rig.tick();
    toResmgr();
  };
  const createV0 = () =>
    rig.api("job", "Create", {
      id: { value: JOB_ID },
      config: jobConfigJson(makeJobConfig({ instanceCount: 2 })),
    });
  return { rig, rm, deletePool, toResmgr, toJobmgr, settle, createV0 };
}

function busyMessage(reply: Body): unknown {
  return ((reply.error as Body | undefined)?.isBusy as Body | undefined)?.message;
}

Deno.test("a pool deleted while a v0 Create's lookup is answered is refused busy, naming the job; the job runs", async () => {
  const { rig, rm, deletePool, toResmgr, toJobmgr, settle, createV0 } = setup();
  createV0();
  toResmgr();
  assert.equal(busyMessage(await deletePool()), BUSY, "before the job manager has the answer");
  toJobmgr();
  assert.equal(busyMessage(await deletePool()), BUSY, "while the job is being stored");
  settle();
  const [reply] = rig.replies();
  assert.deepEqual((reply.body as Body).jobId, { value: JOB_ID }, "the create is answered");
  assert.equal(busyMessage(await deletePool()), "resource pool /a is busy", "its tasks keep the pool");
  assert.equal(rm.claims.size, 0, "the claim ended with the enqueue");
  assert.deepEqual([...rig.job().tasks.values()].map((t) => t.state), ["PENDING", "PENDING"]);
  assert.ok(rm.tree.lookup("/a"));
});

Deno.test("a pool deleted before the create's lookup: the create fails pool-not-found, nothing is stored", async () => {
  const { rig, deletePool, toResmgr, toJobmgr, createV0 } = setup();
  createV0();
  assert.deepEqual(await deletePool(), {}, "the delete comes first");
  toResmgr();
  toJobmgr();
  const [reply] = rig.replies();
  const error = (reply.body as Body).error as Body;
  assert.match(String((error.invalidConfig as Body).message), /resource pool pool-a not found/);
  assert.equal(rig.jm.jobs.has(JOB_ID), false);
  assert.equal(rig.store.jobs.has(JOB_ID), false);
});

Deno.test("a create that fails to be stored releases its claim: the pool can be deleted", async () => {
  const { rig, rm, deletePool, toResmgr, toJobmgr, createV0 } = setup();
  createV0();
  toResmgr();
  rig.store.failNextWrite(new Error("disk full"));
  toJobmgr();
  rig.store.settle();
  rig.tick();
  assert.equal(rig.replies()[0].error?.code, "internal");
  toResmgr();
  assert.equal(rm.claims.size, 0, "released");
  assert.deepEqual(await deletePool(), {});
});

Deno.test("a v1alpha CreateJob claims its pool too: refused busy while it is looked up, naming the job once named", async () => {
  const { rig, rm, deletePool, toResmgr, toJobmgr, settle } = setup();
  rig.call(STATELESS_SERVICE, "CreateJob", { jobId: { value: JOB_ID }, spec: makeStatelessSpec(1) });
  toResmgr();
  assert.equal(busyMessage(await deletePool()), "resource pool /a is busy: a job is being created in it");
  toJobmgr();
  toResmgr();
  assert.equal(busyMessage(await deletePool()), BUSY);
  settle();
  assert.equal(rig.replies()[0].error, undefined);
  assert.equal(rm.claims.size, 0);
  assert.equal(rig.task(0).state, "PENDING");
});

Deno.test("a create of a job that exists already releases the claim its lookup made", async () => {
  const { rig, rm, toResmgr, toJobmgr, settle, createV0, deletePool } = setup();
  createV0();
  toResmgr();
  toJobmgr();
  settle();
  rig.replies();
  createV0();
  toResmgr();
  toJobmgr();
  const [reply] = rig.replies();
  assert.ok((reply.body as Body).error, "already exists");
  toResmgr();
  assert.equal(rm.claims.size, 0);
  assert.equal(
    busyMessage(await deletePool()),
    "resource pool /a is busy",
    "busy with the first job's tasks alone",
  );
});

Deno.test("a child pool made under a pool a job is being created in is refused: the pool stays a leaf", () => {
  const { rig, rm, toResmgr, toJobmgr, settle, createV0 } = setup();
  createV0();
  toResmgr();
  rm.receive({
    kind: "api",
    reqId: 99,
    replyTo: "admin",
    procedure: `${RESPOOL_SERVICE}::CreateResourcePool`,
    body: {
      config: { ...makeRespoolConfig("child", { cpu: 1, memory: 1024 }), parent: { value: "pool-a" } },
    },
  });
  const [r] = rig.transport.take("api-reply", "admin");
  const error = (r.body as Body).error as Body;
  assert.equal(
    (error.invalidResourcePoolConfig as Body).message,
    `parent resource pool /a is busy: job ${JOB_ID} is being created in it`,
  );
  toJobmgr();
  settle();
  assert.deepEqual([...rig.job().tasks.values()].map((t) => t.state), ["PENDING", "PENDING"]);
});

Deno.test("a second create of the same job, refused as a duplicate, releases only its own claim", async () => {
  const { rig, deletePool, toResmgr, toJobmgr, settle, createV0 } = setup();
  // Both lookups are answered before either create goes on.
  createV0();
  createV0();
  toResmgr();
  toJobmgr();
  // The second is refused alreadyExists, its release delivered: the first's claim still holds the pool
  // while its job is stored.
  toResmgr();
  assert.equal(busyMessage(await deletePool()), BUSY, "the first create still holds the pool");
  settle();
  const replies = rig.replies().map((r) => r.body as Body);
  assert.ok(replies.some((b) => (b.error as Body | undefined)?.alreadyExists), JSON.stringify(replies));
  assert.ok(replies.some((b) => (b.jobId as Body | undefined)?.value === JOB_ID), JSON.stringify(replies));
  assert.deepEqual([...rig.job().tasks.values()].map((t) => t.state), ["PENDING", "PENDING"]);
});
