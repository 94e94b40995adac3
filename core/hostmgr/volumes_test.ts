/** Deleted volumes reach the backend with their host's agent, as kills do. */
import assert from "node:assert/strict";
import { resources } from "../model/resources.ts";
import { REJECT } from "./acquire.ts";
import { launchReservation, reservationsEvent } from "./volume_holds.ts";
import { finished, hostmgrRig } from "./testing.ts";

Deno.test("destroy-volumes goes to the backend with each host's agent; a lost host's last, an unknown one's none", () => {
  const { hm, backend } = hostmgrRig([["h1"], ["h2"]]);
  backend.emit({ kind: "host-lost", hostname: "h2", agentId: "agent-h2", reason: "gone" });
  hm.receive({
    kind: "destroy-volumes",
    volumes: [
      { volumeId: "j-0-volume", hostname: "h1" },
      { volumeId: "j-1-volume", hostname: "h2" },
      { volumeId: "j-2-volume", hostname: "h9" },
    ],
  });
  assert.deepEqual(backend.destroyed, [[
    { volumeId: "j-0-volume", hostname: "h1", agentId: "agent-h1" },
    { volumeId: "j-1-volume", hostname: "h2", agentId: "agent-h2" },
    { volumeId: "j-2-volume", hostname: "h9", agentId: "" },
  ]]);
});

Deno.test("remove-sandboxes goes to a backend that removes sandboxes; one that does not is left alone", () => {
  const { hm, backend } = hostmgrRig([["h1"]]);
  hm.receive({ kind: "remove-sandboxes", jobIds: ["j"] });
  const removed: string[][] = [];
  Object.assign(backend, { removeSandboxes: (jobIds: string[]) => removed.push(jobIds) });
  hm.receive({ kind: "remove-sandboxes", jobIds: ["j1", "j2"] });
  assert.deepEqual(removed, [["j1", "j2"]]);
});

Deno.test("volumes-found: a volume the store does not have is destroyed; one it has (even mid-recovery) is kept", async () => {
  const { hm, backend, store } = hostmgrRig([["h1"]]);
  store.volumes.set("j-0-volume-kept", {
    volumeId: "j-0-volume-kept",
    jobId: "j",
    instanceId: 0,
    hostname: "h1",
    containerPath: "data",
    sizeMb: 10,
    state: "CREATED",
    createdMs: 0,
  });
  hm.onBackendEvents([{
    kind: "volumes-found",
    hostname: "h1",
    agentId: "agent-h1",
    volumeIds: ["j-0-volume-kept", "j-1-volume-deleted"],
  }]);
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(backend.destroyed, [[{
    volumeId: "j-1-volume-deleted",
    hostname: "h1",
    agentId: "agent-h1",
  }]]);
});

Deno.test("an idle volume's reservation is held from other work and given to the volume's own task", () => {
  const { hm, backend, acquire, launch, registry } = volumeRig();
  const volumeId = "job-0-volume-u1";
  // h1 has 2 cores; the volume of job's instance 0 holds 1 core, 128 MB and its 10 MB of disk (its task stopped).
  backend.emit({
    kind: "volume-reservations",
    hostname: "h1",
    volumes: [{ volumeId, resources: resources(1000, 128, 10) }],
  });
  const other = acquire({ minResources: resources(2000, 128) });
  assert.equal(other.leases.length, 0, "other work does not see the reservation as free");
  assert.deepEqual(other.rejections, { [REJECT.cpu]: 1 });
  // Another instance pinned to the host (a daemon's, another volume's) does not get it either.
  const stranger = acquire({
    requiredHost: "h1",
    volumeOwners: ["job-1"],
    minResources: resources(2000, 128),
  });
  assert.equal(stranger.leases.length, 0);
  const own = acquire({
    requiredHost: "h1",
    volumeOwners: ["job-0"],
    minResources: resources(2000, 128, 10),
  });
  assert.equal(own.leases.length, 1, "the volume's own task gets it back");
  assert.equal(own.leases[0].free.cpuMilli, 2000);
  assert.equal(own.leases[0].free.diskMb, registry.hosts[0].info.resources.diskMb);
  registry.release(own.leases[0].leaseId);
  assert.equal(hm.allocated().regular.cpuMilli, 0, "held is not allocated");
  // Its launch takes the hold; what is left is free to others; once it ends, the hold is back.
  launch("job-0-1", "h1", 1, {
    jobId: "job",
    instanceId: 0,
    volume: { volumeId, containerPath: "d", sizeMb: 10 },
  });
  assert.equal(backend.launched.at(-1)?.[0].taskId, "job-0-1", "launched, not refused");
  assert.equal(acquire({ minResources: resources(1000, 128) }).leases.length, 1, "the rest is free");
  registry.release(registry.hosts[0].leaseId!);
  backend.emit(finished("job-0-1", "h1"));
  assert.equal(acquire({ minResources: resources(1500, 128) }).leases.length, 0, "held again");
  // A launch that is not the volume's cannot take it (the placement's round may have put it there).
  launch("job-1-1", "h1", 1.5);
  assert.equal(backend.launched.at(-1)?.[0].taskId, "job-0-1", "job-1-1 was refused");
});

Deno.test("without volume reservations (none reported for the host) nothing is held", () => {
  const { acquire } = volumeRig();
  assert.equal(acquire({ minResources: resources(2000, 128) }).leases.length, 1);
});

Deno.test("a backend without reservations of its own reserves with a volume what a Mesos launch RESERVEs", () => {
  const spec = (revocable: boolean) => ({
    resources: resources(500, 256, 1510, 1000),
    volume: { volumeId: "j-0-volume-u", containerPath: "data", sizeMb: 1500 },
    revocable,
  });
  // Its cpus (unless revocable: slack is no one's to reserve), mem and gpus, and the volume's size, not its
  // scratch disk.
  assert.deepEqual(launchReservation(spec(false)), resources(500, 256, 1500, 1000));
  assert.deepEqual(launchReservation(spec(true)), resources(0, 256, 1500, 1000));
  const event = reservationsEvent(
    "h1",
    new Map([["j-1-volume-b", resources(1, 2, 3)], ["j-0-volume-a", resources(4, 5, 6)]]),
  );
  assert.deepEqual(event, {
    kind: "volume-reservations",
    hostname: "h1",
    volumes: [
      { volumeId: "j-0-volume-a", resources: resources(4, 5, 6) },
      { volumeId: "j-1-volume-b", resources: resources(1, 2, 3) },
    ],
  }, "by volume id, whatever the order they were made in");
});

function volumeRig() {
  const rig = hostmgrRig([["h1", { cpu: 2, memMb: 1024, diskMb: 100 }]]);
  return { ...rig, registry: rig.hm.registry };
}
