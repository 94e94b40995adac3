import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { makeHost, makePorts } from "../testing/harness.ts";
import { moveOrder } from "./host_mover.ts";
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
const pools = (rig: Rig) =>
  Object.fromEntries(
    (api(rig, "ListHostPools", {}).body as { pools: { name: string; hosts: string[] }[] }).pools
      .map((p) => [p.name, p.hosts]),
  );
const move = (source: string, dest: string, srcDesired: unknown, destDesired: unknown) => ({
  sourcePool: source,
  srcPoolDesiredHosts: srcDesired,
  destinationPool: dest,
  destPoolDesiredHosts: destDesired,
});
const shared = { attributes: { host_pool: "shared" } };

/** Seven `shared` hosts, each busy in its own way, and an empty `stateless` pool. */
function busyCluster(): Rig {
  const rig = hostmgrRig([
    ["a", shared],
    ["b", { ...shared, cpu: 8 }],
    ["c", shared],
    ["d", shared],
    ["e", shared],
    ["f", shared],
    ["g", shared],
  ]);
  rig.launch("c-1", "c", 1);
  rig.launch("d-1", "d", 1);
  rig.launch("d-2", "d", 1);
  assert.deepEqual(api(rig, "StartMaintenance", { hostname: "e" }).body, { hostname: "e" });
  assert.equal(rig.acquire({ requiredHost: "f" }).leases.length, 1, "f is leased to a placement engine");
  rig.backend.emit({ kind: "host-lost", hostname: "g", agentId: "agent-g", reason: "powered off" });
  assert.deepEqual(api(rig, "CreateHostPool", { name: "stateless" }).body, {});
  rig.transport.drain();
  return rig;
}

Deno.test("hosts are given up idle and roomy first; held, lost and in-maintenance hosts last; ties by name", () => {
  const rig = busyCluster();
  const order = moveOrder(rig.hm.hosts, rig.clock.now());
  // b and a are empty and usable (b has more free cpu), c runs one task, d two; f is leased, g's agent is
  // lost, e is in maintenance.
  assert.deepEqual(order, ["b", "a", "c", "d", "f", "g", "e"]);

  const twins = hostmgrRig([["y"], ["x"], ["z", { memMb: 16_384 }]]);
  assert.deepEqual(moveOrder(twins.hm.hosts, 0), ["z", "x", "y"]);
});

Deno.test("MoveHosts moves the chosen hosts at once, stores them in one batch, and answers once stored", () => {
  const rig = busyCluster();
  const before = rig.store.batches.length;
  assert.equal(call(rig, "MoveHosts", move("shared", "stateless", 4, 3), false), undefined, "not stored yet");
  assert.deepEqual(
    rig.store.batches.slice(before).map((b) => b.map((w) => w.kind === "hostpool.assign" && w.assignment)),
    [[
      { hostname: "b", pool: "stateless", changedMs: rig.clock.now() },
      { hostname: "a", pool: "stateless", changedMs: rig.clock.now() },
      { hostname: "c", pool: "stateless", changedMs: rig.clock.now() },
    ]],
    "one batch for the whole move",
  );
  // Placement sees the new pools before the answer.
  assert.equal(rig.hm.host("b")!.info.attributes.host_pool, "stateless");
  rig.store.settle();
  assert.deepEqual(rig.transport.takeOne("api-reply", "cli").body, { hosts: ["b", "a", "c"] });
  assert.deepEqual(pools(rig), { default: [], shared: ["d", "e", "f", "g"], stateless: ["a", "b", "c"] });
  const inventory = rig.transport.take("host-inventory", "jobmgr").flatMap((m) => m.hosts);
  assert.deepEqual(
    inventory.filter((h) => h.attributes.host_pool === "stateless").map((h) => h.hostname).sort(),
    ["a", "b", "c"],
    "the job manager hears of the moves",
  );

  // The same request again finds it done: nothing moves, nothing is stored (a retry does not move twice).
  const stored = rig.store.batches.length;
  assert.deepEqual(api(rig, "MoveHosts", move("shared", "stateless", 4, 3)).body, { hosts: [] });
  assert.equal(rig.store.batches.length, stored);
  // Counts may come as proto3 JSON's strings; the rest go back, in maintenance last.
  assert.deepEqual(api(rig, "MoveHosts", move("shared", "stateless", "0", "7")).body, {
    hosts: ["d", "f", "g", "e"],
  });
  // A pool only agents name exists while it has hosts, as before.
  assert.deepEqual(pools(rig), { default: [], stateless: ["a", "b", "c", "d", "e", "f", "g"] });
});

Deno.test("bad MoveHosts requests are refused naming the field, and change nothing", () => {
  const rig = busyCluster();
  const before = rig.store.batches.length, listed = pools(rig);
  const refused = (body: unknown) => {
    const r = api(rig, "MoveHosts", body).error!;
    assert.equal(r.code, "invalid-argument", r.message);
    return r.message;
  };
  assert.equal(refused(move("nope", "stateless", 6, 1)), "sourcePool: host pool nope does not exist");
  assert.equal(refused(move("shared", "nope", 6, 1)), "destinationPool: host pool nope does not exist");
  assert.match(refused({ destinationPool: "stateless" }), /^sourcePool: missing, expected a host pool name/);
  assert.match(
    refused({ sourcePool: "shared", destinationPool: null }),
    /^destinationPool: missing, expected a host pool name/,
  );
  assert.match(
    refused(move("shared", "a b", 6, 1)),
    /^destinationPool: got "a b", expected a host pool name/,
  );
  assert.equal(
    refused(move("shared", "shared", 6, 1)),
    'destinationPool: got "shared", the same as sourcePool; hosts move between two pools',
  );
  for (const bad of [-1, 1.5, "2x", true, 2 ** 31]) {
    assert.equal(
      refused(move("shared", "stateless", bad, 1)),
      `srcPoolDesiredHosts: got ${JSON.stringify(bad)}, expected a whole number of hosts (0 to 2147483647)`,
    );
    assert.match(refused(move("shared", "stateless", 6, bad)), /^destPoolDesiredHosts: got /);
  }
  // No count at all (proto3's 0) asks the destination to have no hosts: nothing to move is an error.
  assert.equal(
    refused({ sourcePool: "shared", destinationPool: "stateless" }),
    "destPoolDesiredHosts: got 0, but host pool stateless has 0 hosts already; " +
      "expected more than 0 (the hosts it has plus the number to move)",
  );
  assert.equal(
    refused(move("shared", "stateless", 0, 8)),
    "destPoolDesiredHosts: got 8, which moves 8 hosts into host pool stateless (it has 0), " +
      "but host pool shared has only 7 hosts",
  );
  assert.equal(
    refused(move("shared", "stateless", 6, 2)),
    "srcPoolDesiredHosts: got 6, but moving 2 hosts out of host pool shared (it has 7) leaves 5; " +
      "the two pools' counts must change by the same number",
  );
  api(rig, "MoveHosts", move("shared", "stateless", 5, 2));
  assert.match(
    refused(move("shared", "stateless", 6, 1)),
    /^destPoolDesiredHosts: got 1, but host pool stateless has 2/,
  );
  assert.equal(rig.store.batches.length, before + 1, "only the good request stored");
  assert.deepEqual(pools(rig), { ...listed, shared: ["c", "d", "e", "f", "g"], stateless: ["a", "b"] });
});

Deno.test("a MoveHosts the store refuses is answered internal, and every host is back in its pool", () => {
  const rig = busyCluster();
  const listed = pools(rig);
  rig.store.failNextWrite(new Error("disk full"));
  assert.deepEqual(api(rig, "MoveHosts", move("shared", "stateless", 3, 4)).error, {
    code: "internal",
    message: "storing the host pool change: disk full",
  });
  assert.deepEqual(pools(rig), listed);
  for (const h of ["a", "b", "c", "d"]) assert.equal(rig.hm.host(h)!.info.attributes.host_pool, "shared");
  const leases = rig.acquire({
    constraint: {
      type: "LABEL_CONSTRAINT",
      labelConstraint: {
        kind: "HOST",
        condition: "EQUAL",
        label: { key: "host_pool", value: "stateless" },
        requirement: 1,
      },
    },
  }).leases;
  assert.deepEqual(leases, [], "placement finds no host in stateless");
});

Deno.test("hosts MoveHosts moved are in the destination after a restart, whatever their agents say", () => {
  const rig = hostmgrRig([["h1", shared], ["h2", shared], ["h3", shared]]);
  api(rig, "CreateHostPool", { name: "stateless" });
  rig.launch("t", "h1", 1);
  assert.deepEqual(api(rig, "MoveHosts", move("shared", "stateless", 1, 2)).body, { hosts: ["h2", "h3"] });

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
      ...["h1", "h2", "h3"].map((name) => ({ kind: "host-up" as const, host: makeHost(name, shared) })),
    );
    assert.deepEqual(hm.hostPools.list(), [
      { name: "default", hosts: [] },
      { name: "shared", hosts: ["h1"] },
      { name: "stateless", hosts: ["h2", "h3"] },
    ]);
    assert.equal(hm.host("h3")!.info.attributes.host_pool, "stateless");
  });
});
