/** Events are judged on the hosts there are when they run: those earlier events removed, failed or drained. */
import assert from "node:assert/strict";
import { parseScenario } from "./scenario.ts";

/** std: 12 hosts over 3 racks (std-0, std-3, … in std-rack-0); a: 4 hosts, no racks. */
const BASE = `name: t
durationSec: 3000
hostClasses:
  - {name: std, count: 12, cpu: 8, memoryMb: 16384, racks: 3}
  - {name: a, count: 4, cpu: 8, memoryMb: 16384}
respools:
  - name: pool
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
events:
`;
/** The line of the first event in a scenario made from BASE. */
const FIRST = 11;

function errors(events: string): string[] {
  const res = parseScenario(`${BASE}${events}`, "bad.yaml");
  assert.equal(res.ok, false, "expected the scenario to be refused");
  return res.ok ? [] : res.errors;
}

function accepted(events: string): void {
  const res = parseScenario(`${BASE}${events}`, "ok.yaml");
  assert.ok(res.ok, res.ok ? "" : res.errors.join("\n"));
}

const at = (event: number) => `bad.yaml:${FIRST + event}: events[${event}]`;

Deno.test("an event on hosts an earlier event removed is refused, naming the event that removed them", () => {
  const e = errors(`  - {atSec: 100, removeHosts: {class: a}}
  - {atSec: 200, failHosts: {class: a}}
  - {atSec: 300, drain: {hosts: [a-1]}, durationSec: 60}
  - {atSec: 400, removeHosts: {class: a, count: 1}}
`);
  assert.deepEqual(e, [
    `${at(1)}.failHosts: expected a selector that picks a host that is up at 200 s: the 4 hosts of class a ` +
    "are gone, removed by event 0 at 100 s",
    `${
      at(2)
    }.drain.hosts[0]: got "a-1", expected a host that is up and not in maintenance at 300 s: a-1 is ` +
    "gone, removed by event 0 at 100 s",
    `${
      at(3)
    }.removeHosts: expected a selector that picks a host that is not removed yet at 400 s: the 4 hosts of class a ` +
    "are gone, removed by event 0 at 100 s",
  ]);
  // Events run in time order, whatever their list order: before the removal, the hosts are there.
  accepted(`  - {atSec: 100, removeHosts: {class: a}}
  - {atSec: 50, failHosts: {class: a}, recoverAfterSec: 10}
`);
  // At the same time, in list order.
  assert.deepEqual(
    errors(`  - {atSec: 100, removeHosts: {class: a}}\n  - {atSec: 100, failHosts: {class: a}}\n`),
    [
      `${
        at(1)
      }.failHosts: expected a selector that picks a host that is up at 100 s: the 4 hosts of class a ` +
      "are gone, removed by event 0 at 100 s",
    ],
  );
});

Deno.test("hosts events add after a removal are there for the events after them", () => {
  accepted(`  - {atSec: 100, removeHosts: {class: a}}
  - {atSec: 150, addHosts: {class: a, count: 2}}
  - {atSec: 200, failHosts: {class: a}}
  - {atSec: 250, addHostClass: {name: gpu, count: 1, cpu: 8, memoryMb: 16384}}
  - {atSec: 260, removeHosts: {class: gpu}}
  - {atSec: 270, addHosts: {class: gpu, count: 1}}
  - {atSec: 280, drain: {hosts: [gpu-1]}}
`);
  // The removed ones stay gone: only the hosts added after are picked.
  assert.deepEqual(
    errors(`  - {atSec: 100, removeHosts: {class: a}}
  - {atSec: 150, addHosts: {class: a, count: 2}}
  - {atSec: 200, failHosts: {hosts: [a-3, a-5]}}
`),
    [
      `${
        at(2)
      }.failHosts.hosts[0]: got "a-3", expected a host that is up at 200 s: a-3 is gone, removed by ` +
      "event 0 at 100 s",
    ],
  );
});

Deno.test("a failed host is down until its recoverAfterSec is over, or for good; a lost rack's hosts likewise", () => {
  const e = errors(`  - {atSec: 50, failHosts: {hosts: [std-0]}, recoverAfterSec: 100}
  - {atSec: 120, drain: {hosts: [std-0]}, durationSec: 60}
  - {atSec: 150, failHosts: {hosts: [std-0]}}
  - {atSec: 200, failHosts: {class: a}}
  - {atSec: 300, failHosts: {class: a, count: 1}}
  - {atSec: 400, loseRack: std-rack-1, recoverAfterSec: 600}
  - {atSec: 500, loseRack: std-rack-1}
  - {atSec: 600, drain: {rack: std-rack-1}}
`);
  assert.deepEqual(e, [
    `${
      at(1)
    }.drain.hosts[0]: got "std-0", expected a host that is up and not in maintenance at 120 s: std-0 ` +
    "is down, failed by event 0 at 50 s until 150 s",
    // The simulator brings hosts back after the scenario's events of that time.
    `${
      at(2)
    }.failHosts.hosts[0]: got "std-0", expected a host that is up at 150 s: std-0 is down, failed by ` +
    "event 0 at 50 s until 150 s (after this event)",
    `${
      at(4)
    }.failHosts: expected a selector that picks a host that is up at 300 s: the 4 hosts of class a are ` +
    "down for good, failed by event 3 at 200 s with no recoverAfterSec",
    `${
      at(6)
    }.loseRack: got "std-rack-1", expected a rack with a host that is up at 500 s: the 4 hosts in rack ` +
    "std-rack-1 are down, lost with rack std-rack-1 by event 5 at 400 s until 1000 s",
    `${
      at(7)
    }.drain: expected a selector that picks a host that is up and not in maintenance at 600 s: the 4 ` +
    "hosts in rack std-rack-1 are down, lost with rack std-rack-1 by event 5 at 400 s until 1000 s",
  ]);
  // Once back, they are there again.
  accepted(`  - {atSec: 50, failHosts: {hosts: [std-0]}, recoverAfterSec: 100}
  - {atSec: 150.001, failHosts: {hosts: [std-0]}}
  - {atSec: 400, loseRack: std-rack-1, recoverAfterSec: 600}
  - {atSec: 1001, loseRack: std-rack-1}
`);
});

Deno.test("a removal takes hosts that are down too, which then never come back; count goes by host order", () => {
  const e = errors(`  - {atSec: 50, failHosts: {hosts: [std-0]}, recoverAfterSec: 100}
  - {atSec: 100, removeHosts: {hosts: [std-0]}}
  - {atSec: 400, loseRack: std-rack-1, recoverAfterSec: 600}
  - {atSec: 500, removeHosts: {rack: std-rack-1}}
  - {atSec: 2000, failHosts: {hosts: [std-0]}}
  - {atSec: 2000, drain: {rack: std-rack-1}}
`);
  assert.deepEqual(e, [
    `${
      at(4)
    }.failHosts.hosts[0]: got "std-0", expected a host that is up at 2000 s: std-0 is gone, removed ` +
    "by event 1 at 100 s",
    `${
      at(5)
    }.drain: expected a selector that picks a host that is up and not in maintenance at 2000 s: the 4 hosts ` +
    "in rack std-rack-1 are gone, removed by event 3 at 500 s",
  ]);
  // count takes the first hosts not removed yet, down or up: a-0, down, and a-1 is still there.
  assert.deepEqual(
    errors(`  - {atSec: 10, failHosts: {hosts: [a-0]}, recoverAfterSec: 1000}
  - {atSec: 20, removeHosts: {class: a, count: 1}}
  - {atSec: 30, failHosts: {hosts: [a-1]}}
  - {atSec: 2000, failHosts: {hosts: [a-0]}}
`),
    [
      `${
        at(3)
      }.failHosts.hosts[0]: got "a-0", expected a host that is up at 2000 s: a-0 is gone, removed by ` +
      "event 1 at 20 s",
    ],
  );
});

Deno.test("a drain of hosts in maintenance is refused; hosts in maintenance can still fail or be removed", () => {
  const e = errors(`  - {atSec: 600, drain: {rack: std-rack-1}, durationSec: 900}
  - {atSec: 1000, drain: {rack: std-rack-1}}
  - {atSec: 1500, drain: {hosts: [std-1, std-4]}}
  - {atSec: 1600, drain: {class: a}}
  - {atSec: 1700, drain: {class: a, count: 2}}
`);
  assert.deepEqual(e, [
    `${
      at(1)
    }.drain: expected a selector that picks a host that is up and not in maintenance at 1000 s: the 4 ` +
    "hosts in rack std-rack-1 are in maintenance, drained by event 0 at 600 s until at least 1500 s",
    `${
      at(2)
    }.drain.hosts[0]: got "std-1", expected a host that is up and not in maintenance at 1500 s: std-1 ` +
    "is in maintenance, drained by event 0 at 600 s until at least 1500 s (after this event)",
    `${
      at(2)
    }.drain.hosts[1]: got "std-4", expected a host that is up and not in maintenance at 1500 s: std-4 ` +
    "is in maintenance, drained by event 0 at 600 s until at least 1500 s (after this event)",
    `${
      at(4)
    }.drain: expected a selector that picks a host that is up and not in maintenance at 1700 s: the 4 ` +
    "hosts of class a are in maintenance for good, drained by event 3 at 1600 s with no durationSec",
  ]);
  accepted(`  - {atSec: 600, drain: {rack: std-rack-1}, durationSec: 900}
  - {atSec: 700, failHosts: {rack: std-rack-1}, recoverAfterSec: 60}
  - {atSec: 800, removeHosts: {hosts: [std-1]}}
  - {atSec: 1600, drain: {rack: std-rack-1}}
  - {atSec: 1700, drain: {class: std}}
`);
});

Deno.test("a drain's count takes the first hosts up, in maintenance or not: it leaves those to their drain", () => {
  // The simulator picks hosts in maintenance too: the same two again, and nothing to drain.
  assert.deepEqual(
    errors(`  - {atSec: 10, drain: {class: a, count: 2}}\n  - {atSec: 20, drain: {class: a, count: 2}}\n`),
    [
      `${
        at(1)
      }.drain: expected a selector that picks a host that is up and not in maintenance at 20 s: a-0 and ` +
      "a-1 are in maintenance for good, drained by event 0 at 10 s with no durationSec; count takes the first 2 " +
      "hosts up, in maintenance or not",
    ],
  );
  // The second drain puts only a-2 into maintenance, and its end completes a-2 alone: a-0 and a-1 stay in
  // maintenance until the first one's end.
  assert.deepEqual(
    errors(`  - {atSec: 10, drain: {class: a, count: 2}, durationSec: 1000}
  - {atSec: 20, drain: {class: a, count: 3}, durationSec: 10}
  - {atSec: 25, drain: {hosts: [a-2]}}
  - {atSec: 31, drain: {hosts: [a-0]}}
  - {atSec: 31, drain: {hosts: [a-2]}}
`),
    [
      `${
        at(2)
      }.drain.hosts[0]: got "a-2", expected a host that is up and not in maintenance at 25 s: a-2 is ` +
      "in maintenance, drained by event 1 at 20 s until at least 30 s",
      `${
        at(3)
      }.drain.hosts[0]: got "a-0", expected a host that is up and not in maintenance at 31 s: a-0 is ` +
      "in maintenance, drained by event 0 at 10 s until at least 1010 s",
    ],
  );
});

Deno.test("a host whose drain is over may still be draining: a drain then leaves it, and a later one may take it", () => {
  // At 20.001 s a-0 may still be in the first drain's maintenance (the second leaves it) or out of it (the
  // second takes it until 1020.001 s); at 500 s the first may have completed it in the meantime.
  accepted(`  - {atSec: 10, drain: {hosts: [a-0]}, durationSec: 10}
  - {atSec: 20.001, drain: {hosts: [a-0]}, durationSec: 1000}
  - {atSec: 500, drain: {hosts: [a-0]}}
`);
});

Deno.test("count takes the first hosts up; a fraction's hosts are the seed's, so only what is sure is refused", () => {
  assert.deepEqual(
    errors(`  - {atSec: 10, failHosts: {class: a, count: 3}}
  - {atSec: 20, failHosts: {hosts: [a-2]}}
  - {atSec: 30, failHosts: {hosts: [a-3]}}
`),
    [
      `${
        at(1)
      }.failHosts.hosts[0]: got "a-2", expected a host that is up at 20 s: a-2 is down for good, failed ` +
      "by event 0 at 10 s with no recoverAfterSec",
    ],
  );
  // Half of a is down, which half the seed says: each host may still be there.
  accepted(`  - {atSec: 10, failHosts: {class: a, fraction: 0.5}}
  - {atSec: 20, failHosts: {hosts: [a-0]}}
  - {atSec: 30, failHosts: {class: a, count: 1}}
`);
  // Whatever the seed took, the removal took the rest.
  assert.deepEqual(
    errors(`  - {atSec: 10, failHosts: {class: a, fraction: 0.5}}
  - {atSec: 20, removeHosts: {class: a}}
  - {atSec: 30, failHosts: {hosts: [a-0]}}
`),
    [
      `${
        at(2)
      }.failHosts.hosts[0]: got "a-0", expected a host that is up at 30 s: a-0 is gone, removed by event 1 ` +
      "at 20 s",
    ],
  );
  // A fraction of the hosts left rounds to none; of all of them it would not.
  assert.deepEqual(
    errors(`  - {atSec: 10, removeHosts: {hosts: [a-0, a-1, a-2]}}
  - {atSec: 20, failHosts: {class: a, fraction: 0.4}}
`),
    [
      `${
        at(1)
      }.failHosts.fraction: got 0.4, expected a fraction that picks the one host up at 20 s (1 × 0.4 ` +
      "rounds to 0): a-0, a-1 and a-2 are gone, removed by event 0 at 10 s",
    ],
  );
});

Deno.test("an event at or after the run's end takes no host away", () => {
  const e = errors(`  - {atSec: 3000, removeHosts: {class: a}}
  - {atSec: 2000, failHosts: {class: a}}
`);
  assert.deepEqual(e, [
    `${at(0)}.atSec: got 3000, expected a time before durationSec (3000), when the run ends`,
  ]);
});

Deno.test("a lost rack holds its hosts already down for a failure until the rack recovers", () => {
  // std-0 fails at 100 s for 100 s; its rack is lost at 150 s for 200 s: it is down until 350 s, not 200 s.
  const e = errors(`  - {atSec: 100, failHosts: {hosts: [std-0]}, recoverAfterSec: 100}
  - {atSec: 150, loseRack: std-rack-0, recoverAfterSec: 200}
  - {atSec: 250, drain: {hosts: [std-0]}, durationSec: 60}
`);
  assert.equal(e.length, 1, e.join("\n"));
  assert.match(
    e[0],
    /^bad\.yaml:13: events\[2\]\.drain\.hosts\[0\]: got "std-0", expected a host that is up/,
  );
  assert.match(e[0], /lost with rack std-rack-0 by event 1 at 150 s until 350 s/);
  accepted(`  - {atSec: 100, failHosts: {hosts: [std-0]}, recoverAfterSec: 100}
  - {atSec: 150, loseRack: std-rack-0, recoverAfterSec: 200}
  - {atSec: 400, drain: {hosts: [std-0]}, durationSec: 60}
`);
});
