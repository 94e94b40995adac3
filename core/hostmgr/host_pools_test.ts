import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import type { Constraint } from "../model/config_types.ts";
import { makeHost, makePorts } from "../testing/harness.ts";
import { HostManager } from "./hostmgr.ts";
import { FakeBackend, hostmgrRig } from "./testing.ts";

const HOST = "peloton.api.v0.host.svc.HostService";
type Rig = ReturnType<typeof hostmgrRig>;

/** Sends an API call; answers come once the store has the change, so `settle` says whether to make it durable. */
function call(rig: Rig, method: string, body: unknown, settle = true): ApiReply | undefined {
  rig.hm.receive({ kind: "api", reqId: 1, replyTo: "cli", procedure: `${HOST}::${method}`, body });
  if (settle) rig.store.settle();
  return rig.transport.take("api-reply", "cli")[0];
}

const api = (rig: Rig, method: string, body: unknown) => call(rig, method, body)!;
const pools = (rig: Rig) => (api(rig, "ListHostPools", {}).body as { pools: unknown[] }).pools;
const onPool = (pool: string): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: {
    kind: "HOST",
    condition: "EQUAL",
    label: { key: "host_pool", value: pool },
    requirement: 1,
  },
});
/** The hosts a placement asking for `pool` would lease now (the leases are given back). */
function leasable(rig: Rig, pool: string): string[] {
  const leases = rig.acquire({ constraint: onPool(pool), maxHosts: 10 }).leases;
  rig.hm.receive({ kind: "release-hosts", leaseIds: leases.map((l) => l.leaseId) });
  return leases.map((l) => l.hostname).sort();
}

const cluster = () =>
  hostmgrRig([
    ["h1", { attributes: { host_pool: "batch" } }],
    ["h2", { attributes: { host_pool: "batch" } }],
    ["h3"],
  ]);

Deno.test("every host is in one host pool: the one its agent names, else the default pool, as its host_pool label", () => {
  const rig = cluster();
  assert.deepEqual(pools(rig), [{ name: "batch", hosts: ["h1", "h2"] }, { name: "default", hosts: ["h3"] }]);
  const infos = (api(rig, "QueryHosts", {}).body as {
    hostInfos: { hostname: string; currentPool: string; desiredPool: string; labels: unknown[] }[];
  }).hostInfos;
  assert.deepEqual(infos.map((h) => [h.hostname, h.currentPool, h.desiredPool]), [
    ["h1", "batch", "batch"],
    ["h2", "batch", "batch"],
    ["h3", "default", "default"],
  ]);
  assert.deepEqual(infos[2].labels, [{ key: "host_pool", value: "default" }]);
  assert.deepEqual(leasable(rig, "default"), ["h3"], "a host_pool constraint matches the default pool too");
});

Deno.test("ChangeHostPool moves a host at once for placement, and answers once the move is stored", () => {
  const rig = cluster();
  assert.deepEqual(leasable(rig, "batch"), ["h1", "h2"]);
  const before = rig.store.batches.length;
  assert.equal(
    call(rig, "ChangeHostPool", { hostname: "h3", sourcePool: "default", destinationPool: "batch" }, false),
    undefined,
    "no answer before the store has it",
  );
  assert.deepEqual(leasable(rig, "batch"), ["h1", "h2", "h3"]);
  assert.deepEqual(leasable(rig, "default"), []);
  assert.deepEqual(rig.store.batches.slice(before).flat().map((w) => w.kind), ["hostpool.assign"]);
  rig.store.settle();
  assert.deepEqual(rig.transport.takeOne("api-reply", "cli").body, {});
  assert.deepEqual(pools(rig), [{ name: "batch", hosts: ["h1", "h2", "h3"] }, {
    name: "default",
    hosts: [],
  }]);
  // The job manager's daemon jobs see the new label.
  const inventory = rig.transport.take("host-inventory", "jobmgr").flatMap((m) => m.hosts);
  assert.deepEqual(inventory.at(-1), {
    hostname: "h3",
    attributes: { host_pool: "batch" },
    state: "HOST_STATE_UP",
  });
  // The source may be left out; a move to the pool the host is in stores nothing.
  assert.deepEqual(api(rig, "ChangeHostPool", { hostname: "h1", destinationPool: "default" }).body, {});
  const stored = rig.store.batches.length;
  assert.deepEqual(api(rig, "ChangeHostPool", { hostname: "h1", destinationPool: "default" }).body, {});
  assert.equal(rig.store.batches.length, stored);
  assert.deepEqual(leasable(rig, "default"), ["h1"]);
});

Deno.test("host pools are created and deleted; a deleted pool's hosts go to the default pool", () => {
  const rig = cluster();
  assert.deepEqual(api(rig, "CreateHostPool", { name: "stateless" }).body, {});
  assert.deepEqual(pools(rig).map((p) => (p as { name: string }).name), ["batch", "default", "stateless"]);
  api(rig, "ChangeHostPool", { hostname: "h3", sourcePool: "default", destinationPool: "stateless" });
  assert.deepEqual(leasable(rig, "stateless"), ["h3"]);
  assert.deepEqual(api(rig, "DeleteHostPool", { name: "stateless" }).body, {});
  assert.deepEqual(leasable(rig, "default"), ["h3"]);
  // A pool its agents name is deleted too: the operator's move outranks the agents' attribute.
  const before = rig.store.batches.length;
  assert.deepEqual(api(rig, "DeleteHostPool", { name: "batch" }).body, {});
  assert.deepEqual(
    rig.store.batches.slice(before).map((b) => b.map((w) => w.kind)),
    [["hostpool.assign", "hostpool.assign"]],
    "the moves of one request are stored in one batch",
  );
  assert.deepEqual(pools(rig), [{ name: "default", hosts: ["h1", "h2", "h3"] }]);
  assert.deepEqual(leasable(rig, "batch"), []);
});

Deno.test("bad host pool requests are refused naming the field, and change nothing", () => {
  const rig = cluster();
  const before = rig.store.batches.length;
  const refused = (method: string, body: unknown) => api(rig, method, body).error;
  assert.deepEqual(refused("CreateHostPool", { name: "batch" }), {
    code: "already-exists",
    message: "host pool batch already exists",
  });
  assert.equal(refused("CreateHostPool", { name: "default" })?.code, "already-exists");
  assert.match(
    refused("CreateHostPool", { name: "a b" })!.message,
    /^name: got "a b", expected a host pool name/,
  );
  assert.equal(refused("CreateHostPool", {})?.code, "invalid-argument");
  assert.deepEqual(refused("DeleteHostPool", { name: "default" }), {
    code: "invalid-argument",
    message: "name: the default host pool cannot be deleted",
  });
  assert.deepEqual(refused("DeleteHostPool", { name: "gone" }), {
    code: "not-found",
    message: "host pool gone not found",
  });
  assert.deepEqual(refused("ChangeHostPool", { hostname: "h9", destinationPool: "batch" }), {
    code: "not-found",
    message: "host h9 not found",
  });
  assert.deepEqual(
    refused("ChangeHostPool", { hostname: "h1", sourcePool: "default", destinationPool: "x" }),
    {
      code: "invalid-argument",
      message: 'sourcePool: host h1 is in host pool batch, not "default"',
    },
  );
  assert.deepEqual(refused("ChangeHostPool", { hostname: "h1", destinationPool: "nope" }), {
    code: "invalid-argument",
    message: "destinationPool: host pool nope does not exist (create it first)",
  });
  // A field left out (or null, as protobuf's JSON reads it) is missing, never JavaScript's "got undefined".
  const poolName = "expected a host pool name (1 to 128 letters, digits, '.', '_' or '-', starting with a " +
    "letter or digit)";
  for (const absent of [undefined, null]) {
    assert.deepEqual(refused("ChangeHostPool", { hostname: "h1", destinationPool: absent }), {
      code: "invalid-argument",
      message: `destinationPool: missing, ${poolName}`,
    });
    assert.deepEqual(refused("ChangeHostPool", { hostname: absent, destinationPool: "batch" }), {
      code: "invalid-argument",
      message: "hostname: missing, expected a host name",
    });
    assert.equal(refused("CreateHostPool", { name: absent })!.message, `name: missing, ${poolName}`);
  }
  assert.equal(
    refused("ChangeHostPool", { hostname: 5, destinationPool: "batch" })!.message,
    "hostname: got 5, expected a host name",
  );
  assert.equal(rig.store.batches.length, before, "nothing stored");
  assert.deepEqual(pools(rig), [{ name: "batch", hosts: ["h1", "h2"] }, { name: "default", hosts: ["h3"] }]);
});

Deno.test("host pools outlive a restart: created pools, and hosts where an operator put them when they register", () => {
  const rig = cluster();
  api(rig, "CreateHostPool", { name: "stateless" });
  api(rig, "CreateHostPool", { name: "spare" });
  api(rig, "ChangeHostPool", { hostname: "h1", destinationPool: "stateless" });
  api(rig, "ChangeHostPool", { hostname: "h3", destinationPool: "batch" });
  api(rig, "DeleteHostPool", { name: "spare" });

  // A new host manager on the same store; the agents register again with the attributes they had.
  const ports = makePorts();
  const backend = new FakeBackend();
  const hm = new HostManager(
    { ...ports, backend, self: "hostmgr", jobmgr: "jobmgr", resmgr: "resmgr" },
    { leaseTimeoutMs: 60_000, scarceGpu: true },
  );
  return rig.store.hostPools().then((stored) => {
    hm.recoverHostPools(stored);
    hm.start();
    backend.emit(
      { kind: "host-up", host: makeHost("h1", { attributes: { host_pool: "batch" } }) },
      { kind: "host-up", host: makeHost("h2", { attributes: { host_pool: "batch" } }) },
      { kind: "host-up", host: makeHost("h3") },
    );
    assert.deepEqual(hm.hostPools.list(), [
      { name: "batch", hosts: ["h2", "h3"] },
      { name: "default", hosts: [] },
      { name: "stateless", hosts: ["h1"] },
    ]);
    assert.equal(hm.host("h1")!.info.attributes.host_pool, "stateless");
  });
});

Deno.test("a host pool change the store refuses is answered internal and undone", () => {
  const rig = cluster();
  api(rig, "CreateHostPool", { name: "stateless" });
  api(rig, "ChangeHostPool", { hostname: "h3", destinationPool: "stateless" });
  const listed = pools(rig);

  rig.store.failNextWrite(new Error("disk full"));
  assert.deepEqual(api(rig, "DeleteHostPool", { name: "stateless" }).error, {
    code: "internal",
    message: "storing the host pool change: disk full",
  });
  rig.store.failNextWrite(new Error("disk full"));
  assert.equal(
    api(rig, "ChangeHostPool", { hostname: "h1", destinationPool: "stateless" }).error?.code,
    "internal",
  );
  rig.store.failNextWrite(new Error("disk full"));
  assert.equal(api(rig, "CreateHostPool", { name: "spare" }).error?.code, "internal");
  assert.deepEqual(pools(rig), listed, "every pool and host as stored");
  assert.deepEqual(leasable(rig, "stateless"), ["h3"]);
  assert.deepEqual(leasable(rig, "batch"), ["h1", "h2"]);
  assert.equal(rig.hm.host("h3")!.info.attributes.host_pool, "stateless");
});
