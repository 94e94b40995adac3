/** Host classes: the hosts an event's selector picks are counted as the simulator builds them. */
import assert from "node:assert/strict";
import { HostCatalog, type HostClass, hostClass, hostsOf } from "./scenario_hosts.ts";

Deno.test("a selector's host count, worked out from the classes, is the count of the hosts they build", () => {
  const classes: HostClass[] = [
    { name: "std", count: 23, racks: 4, zones: 3 },
    { name: "big", count: 3, racks: 5, zones: 2 },
    { name: "edge", count: 7, zones: 3 },
    { name: "gpu", count: 5, attributes: { rack: "r-gpu", zone: "zone-1" } },
    { name: "none", count: 0, racks: 2 },
  ].map((c) => hostClass.parse({ cpu: 1, memoryMb: 1, ...c }));
  const catalog = new HostCatalog(classes);
  const hosts = classes.flatMap((c) => hostsOf(c));
  const values = (attr: string) => [undefined, ...new Set(hosts.map((h) => h.attributes[attr])), "nope"];
  for (const cls of [undefined, ...classes.map((c) => c.name)]) {
    for (const rack of values("rack")) {
      for (const zone of values("zone")) {
        const s = { class: cls, rack, zone };
        const built = hosts.filter((h) =>
          (cls === undefined || h.attributes.host_class === cls) &&
          (rack === undefined || h.attributes.rack === rack) &&
          (zone === undefined || h.attributes.zone === zone)
        );
        assert.equal(catalog.pick(s).count, built.length, JSON.stringify(s));
        // Named hosts: those the other criteria leave out are named, the others counted once.
        const named = { ...s, hosts: ["std-0", "big-2", "edge-6", "gpu-4", "std-0"] };
        const { count, excluded } = catalog.pick(named);
        const kept = new Set(built.map((h) => h.hostname));
        assert.equal(count, new Set(named.hosts.filter((h) => kept.has(h))).size, JSON.stringify(named));
        assert.deepEqual(
          excluded.map((x) => x.host),
          named.hosts.filter((h) => !kept.has(h)),
          JSON.stringify(named),
        );
      }
    }
  }
  // Hosts an event adds continue the class's numbering, racks and zones.
  catalog.addHosts("big", 4);
  const big = hostsOf(classes[1], 0, 7);
  for (const rack of ["big-rack-4", "big-rack-1"]) {
    assert.equal(
      catalog.pick({ rack, zone: "zone-0" }).count,
      big.filter((h) => h.attributes.rack === rack && h.attributes.zone === "zone-0").length,
    );
  }
});
