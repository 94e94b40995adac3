import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { makeHost, makePorts, type TestPorts } from "../testing/harness.ts";
import { HostManager } from "./hostmgr.ts";
import { FakeBackend, hostmgrRig, MachineFakeBackend } from "./testing.ts";

const HOST = "peloton.api.v0.host.svc.HostService";
const shared = { attributes: { host_pool: "shared" } };

type Node = { hm: HostManager; ports: TestPorts; backend: MachineFakeBackend };

/** An API call answered once the store has its change. */
function api(n: Pick<Node, "hm" | "ports">, method: string, body: unknown): ApiReply {
  n.hm.receive({ kind: "api", reqId: 1, replyTo: "cli", procedure: `${HOST}::${method}`, body });
  n.ports.store.settle();
  return n.ports.transport.takeOne("api-reply", "cli");
}

const pools = (n: Pick<Node, "hm" | "ports">) =>
  Object.fromEntries(
    (api(n, "ListHostPools", {}).body as { pools: { name: string; hosts: string[] }[] }).pools
      .map((p) => [p.name, p.hosts]),
  );

type Info = {
  hostname: string;
  state: string;
  currentPool?: string;
  desiredPool?: string;
  labels: unknown[];
  resources: { total: { cpuLimit: number } };
};
const infos = (n: Node) => (api(n, "QueryHosts", {}).body as { hostInfos: Info[] }).hostInfos;
const info = (n: Node, hostname: string) => infos(n).find((h) => h.hostname === hostname);

/**
 * Four `shared` hosts; an operator puts h1 in `xcpool`; h1 and h2 go into maintenance and DOWN (their
 * machines taken down, their agents gone). Then the host manager restarts on the same store, and only h3
 * and h4 register again: h1's and h2's machines are down.
 */
async function restartedWithTwoDown(): Promise<Node> {
  const rig = hostmgrRig([["h1", shared], ["h2", shared], ["h3", shared], ["h4", shared]]);
  const before: Node = { hm: rig.hm, ports: rig, backend: rig.backend as MachineFakeBackend };
  assert.deepEqual(api(before, "CreateHostPool", { name: "xcpool" }).body, {});
  assert.deepEqual(api(before, "ChangeHostPool", { hostname: "h1", destinationPool: "xcpool" }).body, {});
  for (const name of ["h1", "h2"]) {
    const stored = rig.store.batches.length;
    assert.deepEqual(api(before, "StartMaintenance", { hostname: name }).body, { hostname: name });
    // Its pool is stored with its maintenance, unless an operator's move stored it already.
    assert.deepEqual(
      rig.store.batches.slice(stored, stored + 1).flat().map((w) => w.kind),
      name === "h1" ? ["maintenance.put"] : ["maintenance.put", "hostpool.assign"],
    );
    rig.backend.emit({ kind: "host-lost", hostname: name, agentId: `agent-${name}`, reason: "machine down" });
    rig.store.settle();
  }
  assert.deepEqual(
    infos(before).map((h) => [h.hostname, h.state, h.currentPool]).slice(0, 2),
    [["h1", "HOST_STATE_DOWN", "xcpool"], ["h2", "HOST_STATE_DOWN", "shared"]],
  );

  const ports: TestPorts = { ...makePorts(), store: rig.store };
  const backend = new MachineFakeBackend();
  const hm = new HostManager(
    { ...ports, backend, self: "hostmgr", jobmgr: "jobmgr", resmgr: "resmgr" },
    { leaseTimeoutMs: 60_000, scarceGpu: true },
  );
  const [maintenance, hostPools] = await Promise.all([rig.store.hostMaintenance(), rig.store.hostPools()]);
  hm.recover(maintenance);
  hm.recoverHostPools(hostPools);
  hm.start();
  backend.emit(
    { kind: "host-up", host: makeHost("h3", shared) },
    { kind: "host-up", host: makeHost("h4", shared) },
  );
  ports.transport.drain();
  return { hm, ports, backend };
}

Deno.test("after a restart, a DOWN host whose agent does not come back is listed in its stored pool", async () => {
  const n = await restartedWithTwoDown();
  assert.deepEqual(pools(n), { default: [], shared: ["h2", "h3", "h4"], xcpool: ["h1"] });
  const h1 = info(n, "h1")!;
  assert.deepEqual([h1.state, h1.currentPool, h1.desiredPool], ["HOST_STATE_DOWN", "xcpool", "xcpool"]);
  assert.deepEqual(h1.labels, [{ key: "host_pool", value: "xcpool" }]);
  // What its agent reported is not stored: no resources are known, and its machine is down.
  assert.equal(h1.resources.total.cpuLimit, 0);
  assert.equal(
    info(n, "h2")!.currentPool,
    "shared",
    "the pool its agent named, stored as it went into maintenance",
  );
});

Deno.test("after a restart, a DOWN host whose agent does not come back can change pools, and keeps the change", async () => {
  const n = await restartedWithTwoDown();
  assert.deepEqual(
    api(n, "ChangeHostPool", { hostname: "h1", sourcePool: "shared", destinationPool: "default" }).error,
    {
      code: "invalid-argument",
      message: 'sourcePool: host h1 is in host pool xcpool, not "shared"',
    },
  );
  assert.deepEqual(
    api(n, "ChangeHostPool", { hostname: "h1", sourcePool: "xcpool", destinationPool: "shared" }).body,
    {},
  );
  assert.deepEqual(pools(n), { default: [], shared: ["h1", "h2", "h3", "h4"], xcpool: [] });
  assert.equal(info(n, "h1")!.currentPool, "shared");
  assert.deepEqual(
    (await n.ports.store.hostPools()).assignments.find((a) => a.hostname === "h1")?.pool,
    "shared",
  );

  // Deleting a pool moves such a host to the default pool too.
  assert.deepEqual(api(n, "DeleteHostPool", { name: "shared" }).body, {});
  assert.deepEqual(pools(n), { default: ["h1", "h2", "h3", "h4"], xcpool: [] });

  // Its maintenance completed, it is listed nowhere until its agent registers, in the pool it was put in.
  assert.deepEqual(api(n, "CompleteMaintenance", { hostname: "h1" }).body, { hostname: "h1" });
  assert.equal(info(n, "h1"), undefined);
  assert.deepEqual(pools(n).default, ["h2", "h3", "h4"]);
  assert.equal(
    api(n, "ChangeHostPool", { hostname: "h1", destinationPool: "xcpool" }).error?.code,
    "not-found",
  );
  n.backend.emit({ kind: "host-up", host: makeHost("h1", shared) });
  assert.deepEqual(pools(n).default, ["h1", "h2", "h3", "h4"]);
  assert.equal(info(n, "h1")!.state, "HOST_STATE_UP");
});

Deno.test("after a restart, MoveHosts moves a DOWN host whose agent does not come back, after usable hosts", async () => {
  const n = await restartedWithTwoDown();
  const move = (srcPoolDesiredHosts: number, destPoolDesiredHosts: number) => ({
    sourcePool: "shared",
    destinationPool: "xcpool",
    srcPoolDesiredHosts,
    destPoolDesiredHosts,
  });
  assert.deepEqual(api(n, "MoveHosts", move(1, 3)).body, { hosts: ["h3", "h4"] });
  assert.deepEqual(api(n, "MoveHosts", move(0, 4)).body, { hosts: ["h2"] });
  // A pool only agents named goes with its last host.
  assert.deepEqual(pools(n), { default: [], xcpool: ["h1", "h2", "h3", "h4"] });
});

Deno.test("a host in maintenance whose pool was never stored is in the default pool until its agent names one", () => {
  // Say, a down machine the cluster manager reports whose agent never registered here.
  const ports = makePorts();
  const backend = new MachineFakeBackend();
  const hm = new HostManager(
    { ...ports, backend, self: "hostmgr", jobmgr: "jobmgr", resmgr: "resmgr" },
    { leaseTimeoutMs: 60_000, scarceGpu: true },
  );
  const n: Node = { hm, ports, backend };
  hm.recover([{ hostname: "h9", state: "HOST_STATE_DOWN", startTimeMs: 1 }]);
  hm.recoverHostPools({ pools: [], assignments: [] });
  hm.start();
  assert.deepEqual(pools(n), { default: ["h9"] });
  assert.equal(info(n, "h9")!.currentPool, "default");
  backend.emit({ kind: "host-up", host: makeHost("h9", shared) });
  assert.deepEqual(pools(n), { default: [], shared: ["h9"] });
});

Deno.test("a down machine adopted from the cluster manager, its agent never seen here, has no pool stored", () => {
  const ports = makePorts();
  const backend = new FakeBackend();
  const hm = new HostManager(
    { ...ports, backend, self: "hostmgr", jobmgr: "jobmgr", resmgr: "resmgr" },
    { leaseTimeoutMs: 60_000, scarceGpu: true, clusterMaintenance: true },
  );
  const n = { hm, ports };
  hm.recover([]);
  hm.recoverHostPools({ pools: [], assignments: [] });
  hm.start();
  hm.adoptMaintenance("h8", "HOST_STATE_DOWN");
  ports.store.settle();
  assert.deepEqual(pools(n), { default: ["h8"] });
  assert.equal(ports.store.hostPoolRows.assignments.size, 0, "its pool is not known: none is stored");
  backend.emit({ kind: "host-up", host: makeHost("h8", shared) });
  assert.deepEqual(pools(n), { default: [], shared: ["h8"] });
});

Deno.test("the pool kept with a maintenance the store refuses is forgotten with it", () => {
  const rig = hostmgrRig([["h1", shared]]);
  const n: Node = { hm: rig.hm, ports: rig, backend: rig.backend as MachineFakeBackend };
  rig.store.failNextWrite(new Error("disk full"));
  assert.equal(api(n, "StartMaintenance", { hostname: "h1" }).error?.code, "internal");
  assert.equal(rig.store.hostPoolRows.assignments.size, 0);
  // Not kept in memory either: its agent's pool still decides, as for any host an operator did not move.
  rig.backend.emit({ kind: "host-up", host: makeHost("h1", { attributes: { host_pool: "batch" } }) });
  assert.deepEqual(pools(n), { batch: ["h1"], default: [] });
});
