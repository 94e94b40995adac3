/**
 * A pool looked up for a job being created is claimed: DeleteResourcePool refuses it as busy, naming the
 * job, until the job's tasks are enqueued (they keep it busy), the claim is released, or it expires.
 */
import assert from "node:assert/strict";
import type { ApiReply, ApiRequest } from "../messages.ts";
import { makePorts, makeRespoolConfig } from "../testing/harness.ts";
import { makeJobRecord, makeRmTask } from "../testing/fixtures.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "./resmgr.ts";
import { RESPOOL_SERVICE } from "./respool_api.ts";
import { PoolClaims } from "./pool_claims.ts";

type Body = Record<string, unknown>;
const JOB = "11111111-2222-4333-8444-555555555555";
const CLAIM_MS = 10_000;

function setup() {
  const ports = makePorts();
  const rm = new ResourceManager(
    { ...ports, self: "resmgr", hostmgr: "hostmgr" },
    { ...DEFAULT_RESMGR_CONFIG, poolClaimMs: CLAIM_MS },
  );
  let reqId = 0;
  const call = (method: string, body: unknown, poolClaim?: ApiRequest["poolClaim"]): ApiReply => {
    const req = {
      kind: "api" as const,
      reqId: ++reqId,
      replyTo: "api/1",
      procedure: `${RESPOOL_SERVICE}::${method}`,
      body,
    };
    rm.receive(poolClaim === undefined ? req : { ...req, poolClaim });
    ports.store.settle();
    const [r] = ports.transport.take("api-reply", "api/1");
    assert.ok(r, `a reply to ${method}`);
    return r;
  };
  const pool = (call("CreateResourcePool", { config: makeRespoolConfig("a") }).body as Body).result as Body;
  const poolId = pool.value as string;
  const lookUp = (claim?: ApiRequest["poolClaim"]) =>
    call("GetResourcePool", { id: { value: poolId } }, claim);
  // A delete of an idle leaf first reads the store for jobs still in it.
  const del = async () => {
    const req = {
      kind: "api" as const,
      reqId: ++reqId,
      replyTo: "api/1",
      procedure: `${RESPOOL_SERVICE}::DeleteResourcePool`,
      body: { path: { value: "/a" } },
    };
    rm.receive(req);
    await new Promise((resolve) => setTimeout(resolve, 0));
    ports.store.settle();
    const [r] = ports.transport.take("api-reply", "api/1");
    assert.ok(r, "a reply to DeleteResourcePool");
    return (r.body ?? {}) as Body;
  };
  return { ...ports, rm, poolId, lookUp, del };
}

Deno.test("a pool looked up for a job being created cannot be deleted: refused as busy, naming the job", async () => {
  const { rm, lookUp, del } = setup();
  assert.ok(lookUp({ key: JOB, jobId: JOB }).body, "the lookup answers as ever");
  assert.deepEqual(
    (((await del()).error as Body).isBusy as Body).message,
    `resource pool /a is busy: job ${JOB} is being created in it`,
  );
  assert.ok(rm.tree.lookup("/a"), "the pool stays");
});

Deno.test("the job's tasks enqueued end its claim; they keep the pool busy as long as they are there", async () => {
  const { rm, poolId, lookUp, del } = setup();
  lookUp({ key: JOB, jobId: JOB });
  const task = makeRmTask({ taskId: `${JOB}-0-1`, jobId: JOB, respoolId: poolId });
  rm.receive({ kind: "enqueue-gangs", gangs: [{ tasks: [task] }] });
  assert.equal(rm.claims.size, 0, "claim ended");
  assert.deepEqual((((await del()).error as Body).isBusy as Body).message, "resource pool /a is busy");
  rm.receive({ kind: "drop-tasks", taskIds: [task.taskId] });
  assert.deepEqual(await del(), {}, "idle again: deleted");
});

Deno.test("a claim made before the job was named is refused as a job's; once named, by the job and its tasks", async () => {
  const { rm, poolId, lookUp, del } = setup();
  lookUp({ key: "jobmgr request 7" });
  assert.deepEqual(
    (((await del()).error as Body).isBusy as Body).message,
    "resource pool /a is busy: a job is being created in it",
  );
  rm.receive({ kind: "name-pool-claim", key: "jobmgr request 7", jobId: JOB });
  assert.deepEqual(
    (((await del()).error as Body).isBusy as Body).message,
    `resource pool /a is busy: job ${JOB} is being created in it`,
  );
  const task = makeRmTask({ taskId: `${JOB}-0-1`, jobId: JOB, respoolId: poolId });
  rm.receive({ kind: "enqueue-gangs", gangs: [{ tasks: [task] }] });
  assert.equal(rm.claims.size, 0, "its tasks ended it");
});

Deno.test("a create that failed releases its claim: the pool can be deleted (twice released is once)", async () => {
  const { rm, lookUp, del } = setup();
  lookUp({ key: JOB, jobId: JOB });
  rm.receive({ kind: "release-pool-claim", key: JOB });
  rm.receive({ kind: "release-pool-claim", key: JOB });
  assert.deepEqual(await del(), {});
  assert.equal(rm.tree.lookup("/a"), undefined);
});

Deno.test("a claim nothing ends expires after poolClaimMs: no pool is held for good", async () => {
  const { clock, lookUp, del } = setup();
  lookUp({ key: JOB, jobId: JOB });
  clock.advance(CLAIM_MS - 1);
  assert.ok(((await del()).error as Body).isBusy, "held until then");
  clock.advance(1);
  assert.deepEqual(await del(), {});
});

Deno.test("a lookup that claims nothing (a plain GetResourcePool) leaves deletion as it was", async () => {
  const { rm, lookUp, del } = setup();
  lookUp();
  assert.equal(rm.claims.size, 0);
  assert.deepEqual(await del(), {});
});

Deno.test("PoolClaims: a claim again renews it; expired ones go first; holder is a live claim of the pool", () => {
  const claims = new PoolClaims(100);
  claims.claim("p", "j1", 0, "j1");
  claims.claim("q", "k2", 50);
  claims.claim("p", "j1", 60, "j1");
  assert.equal(claims.holder("p", 120)?.jobId, "j1", "renewed until 160");
  assert.equal(claims.holder("q", 149)?.jobId, undefined, "k2 unnamed");
  assert.ok(claims.holder("q", 149));
  assert.equal(claims.holder("q", 150), undefined, "k2 expired at 150");
  assert.equal(claims.size, 1);
  claims.name("nothing", "j3", 150);
  assert.equal(claims.size, 1, "naming an unknown claim makes none");
  assert.equal(claims.holder("p", 160), undefined);
  assert.equal(claims.size, 0);
});

Deno.test("a job not ended in the store keeps its pool, though no claim or task of it is here (a new leader's case)", async () => {
  const { store, poolId, del } = setup();
  const job = makeJobRecord(JOB, { respoolId: poolId }, { state: "INITIALIZED" });
  store.jobs.set(JOB, job);
  assert.deepEqual(
    ((await del()).error as Body).isBusy,
    { id: { value: poolId }, message: `resource pool /a is busy: job ${JOB} (INITIALIZED) is in it` },
  );
  store.jobs.set(JOB, { ...job, runtime: { ...job.runtime, state: "KILLED" } });
  assert.deepEqual(await del(), {}, "an ended job does not hold it");
});
