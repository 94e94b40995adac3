/** The hosts gate: a new host manager term holds requests for hosts until its hosts have registered. */
import assert from "node:assert/strict";
import type { Message } from "../../core/messages.ts";
import type { VolumeRef } from "../../core/ports/host_backend.ts";
import type { SandboxBackend } from "../backends.ts";
import type { Minicluster } from "../minicluster/minicluster.ts";
import { MesosBackend } from "../mesos/mesos_backend.ts";
import { HostsGate, HostsRegistration, KeptMinicluster, watchHosts } from "./hostmgr_backend.ts";
import type { HostManager } from "../../core/hostmgr/hostmgr.ts";
import type { BackendEvent } from "../../core/ports/host_backend.ts";
import { SystemClock } from "../clock.ts";

const filter = { resources: { cpuMilli: 1000, memMb: 0, diskMb: 0, gpuMilli: 0 }, count: 1 } as never;

Deno.test("the hosts gate holds requests for hosts until the hosts are in, then passes them on in order", () => {
  const seen: Message[] = [];
  const gate = new HostsGate({ receive: (m) => void seen.push(m) });
  const acquire1: Message = { kind: "acquire-hosts", reqId: 1, replyTo: "placement", filters: [filter] };
  const reserve: Message = {
    kind: "reserve-host",
    reqId: 2,
    replyTo: "placement",
    taskId: "t-1",
    reservationId: "r-1",
    filter,
  };
  const release: Message = { kind: "release-hosts", leaseIds: ["l-1"] };
  const capacity: Message = { kind: "get-cluster-capacity", reqId: 3, replyTo: "resmgr" };
  const acquire2: Message = { kind: "acquire-hosts", reqId: 4, replyTo: "placement", filters: [filter] };

  assert.deepEqual(gate.open, false);
  for (const m of [acquire1, reserve, release, capacity, acquire2]) gate.receive(m);
  // Everything but a request for hosts goes through at once: a release or a capacity read needs no hosts.
  assert.deepEqual(seen, [release, capacity]);

  gate.openNow();
  assert.deepEqual(gate.open, true);
  assert.deepEqual(seen, [release, capacity, acquire1, reserve, acquire2]);

  // Open, it holds nothing back.
  const acquire3: Message = { kind: "acquire-hosts", reqId: 5, replyTo: "placement", filters: [filter] };
  gate.receive(acquire3);
  assert.deepEqual(seen.at(-1), acquire3);
  gate.openNow();
  assert.deepEqual(seen.length, 6);
});

Deno.test("deleted volumes reach the minicluster through a term's view and the host watch; a backend without volumes has none", () => {
  const destroyed: VolumeRef[][] = [];
  const minicluster = {
    destroyVolumes: (volumes: VolumeRef[]) => (destroyed.push(volumes), Promise.resolve()),
  } as unknown as Minicluster;
  const view = watchHosts(new KeptMinicluster(minicluster).view(), () => {});
  const volumes = [{ volumeId: "j-0-volume", hostname: "agent-1", agentId: "minicluster-S1" }];
  view.destroyVolumes!(volumes);
  assert.deepEqual(destroyed, [volumes]);

  const plain: SandboxBackend = {
    start() {},
    launch() {},
    kill() {},
    reconcile() {},
    logs: () => Promise.resolve(undefined),
    stop: () => Promise.resolve(),
  };
  assert.equal(watchHosts(plain, () => {}).destroyVolumes, undefined);
});

Deno.test("a new term's host manager is told the minicluster's hosts, slack and volume reservations again", async () => {
  let emit: (events: BackendEvent[]) => void = () => {};
  const minicluster = { start: (sink: typeof emit) => (emit = sink) } as unknown as Minicluster;
  const kept = new KeptMinicluster(minicluster);
  const host = { hostname: "agent-1", agentId: "minicluster-S1" } as never;
  const volumes = [{
    volumeId: "j-0-v",
    resources: { cpuMilli: 1000, memMb: 64, diskMb: 1500, gpuMilli: 0 },
  }];
  const first: BackendEvent[] = [];
  kept.view().start((events) => first.push(...events));
  emit([{ kind: "host-up", host }, { kind: "volume-reservations", hostname: "agent-1", volumes }]);
  emit([{ kind: "host-up", host: { hostname: "agent-2", agentId: "minicluster-S2" } as never }]);
  emit([{ kind: "volume-reservations", hostname: "agent-2", volumes: [] }]);
  assert.equal(first.length, 4);
  kept.detach();

  const second: BackendEvent[] = [];
  kept.view().start((events) => second.push(...events));
  await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(second.map((e) => e.kind), ["host-up", "host-up", "volume-reservations"]);
  assert.deepEqual(second[2], { kind: "volume-reservations", hostname: "agent-1", volumes });
});

Deno.test("the host watch keeps a backend's fixed volumes (Mesos), and the Mesos backend has them", () => {
  const plain: SandboxBackend = {
    start() {},
    launch() {},
    kill() {},
    reconcile() {},
    logs: () => Promise.resolve(undefined),
    stop: () => Promise.resolve(),
  };
  assert.equal(watchHosts(plain, () => {}).fixedVolumes, undefined);
  assert.equal(watchHosts({ ...plain, fixedVolumes: true }, () => {}).fixedVolumes, true);
  const mesos = new MesosBackend({
    masterUrl: "http://127.0.0.1:1",
    idStore: { load: () => Promise.resolve(undefined), save: () => Promise.resolve() },
  });
  assert.equal(mesos.fixedVolumes, true);
});

Deno.test("hosts registering: the gate opens and the inventory goes out as soon as the backend reports a host", async () => {
  let sink: ((events: BackendEvent[]) => void) | undefined;
  const backend: SandboxBackend = {
    start: (s) => void (sink = s),
    launch() {},
    kill() {},
    reconcile() {},
    logs: () => Promise.resolve(undefined),
    stop: () => Promise.resolve(),
  };
  const clock = new SystemClock();
  const logged: string[] = [];
  let released = 0;
  const registration = new HostsRegistration(backend, {
    clock,
    // Not connected (a Mesos master out of reach): only a host opens the gate.
    connected: () => false,
    log: (msg) => void logged.push(msg),
  });
  const hm = { hosts: [], releaseInventory: () => void released++ } as unknown as HostManager;
  const seen: Message[] = [];
  const gate = registration.hold(hm, { receive: (m) => void seen.push(m) });
  const acquire: Message = { kind: "acquire-hosts", reqId: 1, replyTo: "placement", filters: [filter] };
  try {
    gate.receive(acquire);
    registration.backend.start(() => {});
    registration.watch();
    await new Promise((r) => setTimeout(r, 250));
    assert.equal(registration.open, false);
    assert.deepEqual([seen, released, logged], [[], 0, []]);
    sink!([{ kind: "host-up", host: { hostname: "a" } as never }]);
    // On the next turn, not a poll later.
    await Promise.resolve();
    assert.equal(registration.open, true);
    assert.deepEqual([seen, released, logged], [[acquire], 1, ["hosts registered"]]);
  } finally {
    clock.cancelAll();
  }
});
