/**
 * A new host manager leader's full inventory waits until its hosts have registered (`holdInventory`): an empty
 * list sent at its start made the job manager remove every daemon instance, then add them all back.
 */
import assert from "node:assert/strict";
import { makeHost, makePorts } from "../testing/harness.ts";
import { HostManager } from "./hostmgr.ts";
import { FakeBackend } from "./testing.ts";

function leader(holdInventory: boolean) {
  const ports = makePorts();
  const backend = new FakeBackend();
  const hm = new HostManager(
    { ...ports, backend, self: "hostmgr", jobmgr: "jobmgr", resmgr: "resmgr" },
    { leaseTimeoutMs: 60_000, scarceGpu: true, holdInventory },
  );
  const inventories = () =>
    ports.transport.take("host-inventory", "jobmgr").map((m) => ({
      full: m.full,
      hosts: m.hosts.map((h) => h.hostname),
    }));
  return { hm, backend, inventories };
}

Deno.test("a backend that keeps volumes as created says so in full inventories, not in changes", () => {
  const ports = makePorts();
  const backend = Object.assign(new FakeBackend(), { fixedVolumes: true });
  const hm = new HostManager(
    { ...ports, backend, self: "hostmgr", jobmgr: "jobmgr", resmgr: "resmgr" },
    { leaseTimeoutMs: 60_000, scarceGpu: true },
  );
  hm.start();
  backend.emit({ kind: "host-up", host: makeHost("h1") });
  hm.receive({ kind: "peer-changed", role: "jobmgr" });
  assert.deepEqual(
    ports.transport.take("host-inventory", "jobmgr").map((m) => [m.full, m.fixedVolumes]),
    [[true, true], [false, undefined], [true, true]],
  );
  const plain = leader(false);
  plain.hm.start();
  plain.hm.receive({ kind: "peer-changed", role: "jobmgr" });
  assert.ok(plain.inventories().length > 0);
});

Deno.test("a leader holding its inventory sends the full list once its hosts registered, never an empty one first", () => {
  const { hm, backend, inventories } = leader(true);
  hm.start();
  assert.deepEqual(inventories(), [], "no full inventory before the hosts are in");
  backend.emit({ kind: "host-up", host: makeHost("h1") }, { kind: "host-up", host: makeHost("h2") });
  assert.deepEqual(inventories(), [{ full: false, hosts: ["h1", "h2"] }], "hosts as they register");
  // A job manager that restarts meanwhile is owed the full list too: still held.
  hm.receive({ kind: "peer-changed", role: "jobmgr" });
  assert.deepEqual(inventories(), []);
  hm.releaseInventory();
  assert.deepEqual(inventories(), [{ full: true, hosts: ["h1", "h2"] }]);
  hm.releaseInventory();
  assert.deepEqual(inventories(), [], "released once");
  hm.receive({ kind: "peer-changed", role: "jobmgr" });
  assert.deepEqual(inventories(), [{ full: true, hosts: ["h1", "h2"] }], "then sent as asked");
});

Deno.test("without holding (one process, the simulator), the full inventory goes out at start as before", () => {
  const { hm, inventories } = leader(false);
  hm.start();
  assert.deepEqual(inventories(), [{ full: true, hosts: [] }]);
});
