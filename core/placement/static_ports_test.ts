/**
 * A task with a static port, through the engine and a real host manager: it goes to a host that offers the
 * port free, whichever host best fit would pick, and when none does its reason names the port.
 */
import assert from "node:assert/strict";
import { hostmgrRig } from "../hostmgr/testing.ts";
import { resources } from "../model/resources.ts";
import type { HostSpec } from "../testing/fixtures.ts";
import { makeRmTask } from "../testing/harness.ts";
import { engineRig } from "./testing.ts";

/** An engine wired by hand to a real host manager over `hosts`. */
function wired(hosts: [string, HostSpec][]) {
  const hm = hostmgrRig(hosts);
  const pe = engineRig();
  const relay = () => {
    while (
      pe.transport.deliverTo("hostmgr", hm.hm).length + hm.transport.deliverTo("placement", pe.pe).length
    );
  };
  const sent = () => {
    const sets = pe.transport.take("set-placements", "resmgr");
    return {
      placed: sets.flatMap((s) => s.placements).flatMap((p) => p.tasks.map((t) => [p.hostname, t.ports])),
      pending: sets.flatMap((s) => s.pending ?? []).map((p) => p.reason),
    };
  };
  return { hm, pe, relay, sent };
}

const http = (value: number) => [{ name: "http", value }];
const task = (jobId: string, port: number) =>
  makeRmTask({ jobId, resources: resources(500, 10), ports: http(port) });

Deno.test("a static port only one host offers: the task goes there, not to the host best fit leases", () => {
  // As the minicluster's agents: each its own port range; best fit prefers the smaller a1 and a2.
  const { pe, relay, sent } = wired([
    ["a0", { cpu: 8, ports: [[31000, 31999]] }],
    ["a1", { cpu: 2, ports: [[32000, 32999]] }],
    ["a2", { cpu: 2, ports: [[33000, 33999]] }],
  ]);
  pe.gangs({ tasks: [task("static", 31003)] });
  relay();
  assert.deepEqual(sent(), { placed: [["a0", { http: 31003 }]], pending: [] });
});

Deno.test("a static port in use on the busiest host: the next job with it goes to another host", () => {
  const same: HostSpec = { ports: [[31000, 31004]] };
  const { hm, pe, relay, sent } = wired([["a0", same], ["a1", same], ["a2", same], ["a3", same]]);
  hm.launch("busy-0-1", "a2", 3, { ports: { http: 31003 } });
  hm.transport.drain();
  pe.gangs({ tasks: [task("second", 31003)] });
  relay();
  const { placed, pending } = sent();
  assert.equal(placed.length, 1);
  assert.notEqual(placed[0][0], "a2");
  assert.deepEqual(pending, []);
});

Deno.test("no host offers the static port free: the reason names the port", () => {
  const { hm, pe, relay, sent } = wired([["a0", { ports: [[31000, 31004]] }], ["a1", {
    ports: [[32000, 32004]],
  }]]);
  hm.launch("busy-0-1", "a0", 1, { ports: { http: 31003 } });
  hm.transport.drain();
  pe.gangs({ tasks: [task("static", 31003)] });
  relay();
  assert.deepEqual(sent(), {
    placed: [],
    pending: ["no host with port 31003 free: static port 31003 taken or not offered on 2 hosts"],
  });
});
