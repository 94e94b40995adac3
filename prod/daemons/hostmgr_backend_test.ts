/** The hosts gate: a new host manager term holds requests for hosts until its hosts have registered. */
import assert from "node:assert/strict";
import type { Message } from "../../core/messages.ts";
import type { VolumeRef } from "../../core/ports/host_backend.ts";
import type { SandboxBackend } from "../backends.ts";
import type { Minicluster } from "../minicluster/minicluster.ts";
import { MesosBackend } from "../mesos/mesos_backend.ts";
import { HostsGate, KeptMinicluster, watchHosts } from "./hostmgr_backend.ts";

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
