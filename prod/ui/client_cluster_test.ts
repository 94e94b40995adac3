/**
 * The hosts view's host pools: the Pool column, the pools above the table, the filter, a host's "Move to pool…"
 * and a pool's "Move hosts…".
 */
import assert from "node:assert/strict";
import type { HostInfoJson, HostPoolJson, Snapshot, UiAction } from "./api_types.ts";
import { hostActions, hostPoolCounts, hostsView, moveHostsAction } from "./client_cluster.ts";
import { actionBody, actionVerb, wholeAmount } from "./client_views.ts";
import { fake, type FakeElement, useFakeDocument } from "./dom_testing.ts";

useFakeDocument();

/** A host as QueryHosts shows it; its labels leave out `host_pool`, so only `currentPool` names its pool. */
function host(hostname: string, currentPool: string | undefined, state = "HOST_STATE_UP"): HostInfoJson {
  return {
    hostname,
    agentId: `id-${hostname}`,
    state,
    labels: [{ key: "rack", value: "r1" }],
    tasks: 2,
    currentPool,
    desiredPool: currentPool,
  };
}

const HOSTS = [
  host("agent-2", "shared", "HOST_STATE_DRAINING"),
  host("agent-0", "shared"),
  host("agent-1", "batch"),
];
const POOLS: HostPoolJson[] = [
  { name: "batch", hosts: ["agent-1"] },
  { name: "default", hosts: [] },
  { name: "shared", hosts: ["agent-0", "agent-2"] },
];

/** The hosts view of `hosts` and `pools`, and the actions its buttons ask for. */
function view(filter = "", hosts = HOSTS, pools: HostPoolJson[] | undefined = POOLS) {
  const asked: UiAction[] = [];
  const snap: Snapshot = { hosts, hostPools: pools };
  return { v: fake(hostsView(snap, filter, (a) => asked.push(a))), asked };
}

const texts = (els: FakeElement[]) => els.map((el) => el.textContent);
/** Whether a button was built disabled (`h` sets the attribute). */
const disabled = (el: FakeElement) => el.attributes.has("disabled");
/** The table's cells under `header`, a row per host. */
function column(v: FakeElement, header: string): string[] {
  const i = texts(v.select("th")).indexOf(header);
  assert.ok(i >= 0, `the table has a ${header} column`);
  return v.select("tbody")[0].select("tr").map((tr) => tr.select("td")[i].textContent);
}

Deno.test("the hosts table shows each host's pool in a Pool column, from QueryHosts' currentPool", () => {
  const { v } = view();
  assert.deepEqual(column(v, "Host"), ["agent-0", "agent-1", "agent-2"]);
  assert.deepEqual(column(v, "Pool"), ["shared", "batch", "shared"]);
  // A host in maintenance without an agent is in no pool; a move under way shows where it goes.
  const down = { ...host("agent-9", undefined, "HOST_STATE_DOWN"), desiredPool: undefined };
  const moving = { ...host("agent-3", "shared"), desiredPool: "batch" };
  assert.deepEqual(column(view("", [down, moving]).v, "Pool"), ["shared → batch", "—"]);
});

Deno.test("above the table, every host pool with its hosts and how many are UP, empty ones too", () => {
  const { v } = view();
  const line = v.select("div.host-pools")[0];
  assert.ok(line, "the view has the host pools line");
  assert.deepEqual(
    line.select("span.host-pool").map((p) => [p.getAttribute("data-pool"), p.textContent]),
    [
      ["batch", "batch 1 host · 1 UP"],
      ["default", "default 0 hosts · 0 UP"],
      ["shared", "shared 2 hosts · 1 UP"],
    ],
  );
  assert.ok(line.select("span.host-pool[data-pool=default]")[0].hasClass("empty"));
  assert.match(line.textContent, /^Host pools \(3\):/);
  // The line comes before the table.
  const section = v.children.filter((c): c is FakeElement => typeof c !== "string");
  assert.deepEqual(section.map((c) => c.tag), ["h2", "div", "table"]);

  // A host counts where QueryHosts puts it, even if ListHostPools (loaded alongside) was a move behind; a pool
  // only hosts name is listed too, as when ListHostPools did not load.
  assert.deepEqual(hostPoolCounts(HOSTS, [{ name: "batch", hosts: ["agent-0", "agent-1"] }]), [
    { name: "batch", hosts: 1, up: 1 },
    { name: "shared", hosts: 2, up: 1 },
  ]);
  assert.deepEqual(hostPoolCounts([host("agent-9", undefined, "HOST_STATE_DOWN")], undefined), []);
});

Deno.test("the hosts filter matches the pool name", () => {
  assert.deepEqual(column(view("BATCH").v, "Host"), ["agent-1"]);
  assert.deepEqual(column(view("shar").v, "Host"), ["agent-0", "agent-2"]);
  assert.match(view("shar").v.select("h2")[0].textContent, /^Hosts \(2 of 3\)$/);
  // The pools line still shows every pool.
  assert.equal(view("batch").v.select("span.host-pool").length, 3);
});

Deno.test("Move to pool… offers the other pools in the confirm step and sends ChangeHostPool from the host's pool", () => {
  const { v, asked } = view();
  const row = v.select("tbody")[0].select("tr").find((tr) => tr.select("td")[0].textContent === "agent-1")!;
  const button = row.select("button[data-action=Move to pool…]")[0];
  assert.ok(button, "each host has the action");
  assert.equal(button.disabled, false);
  assert.equal(button.getAttribute("aria-label"), "Move agent-1 to another host pool…", "named for its host");
  button.click();
  assert.equal(asked.length, 1, "the button asks for the confirm step");
  const [move] = asked;
  assert.equal(move.procedure, "peloton.api.v0.host.svc.HostService::ChangeHostPool");
  assert.match(move.question, /^Move agent-1 out of host pool batch\? Its 2 tasks keep running there\.$/);
  assert.deepEqual(move.choice, {
    label: "To host pool",
    field: "destinationPool",
    options: ["default", "shared"],
  });
  const sent = actionBody(move, { choice: "shared" });
  assert.deepEqual(sent, { hostname: "agent-1", sourcePool: "batch", destinationPool: "shared" });
  assert.deepEqual(move.body, { hostname: "agent-1", sourcePool: "batch" }, "the action itself is unchanged");
  assert.equal(move.describe({}, sent), "Host agent-1 moved to host pool shared");
  assert.equal(actionVerb(move), "Move to pool", "the confirm button and result line drop the ellipsis");

  // Actions without a choice send their own body.
  const [start] = hostActions(host("agent-1", "batch"), ["batch", "shared"]);
  assert.deepEqual(actionBody(start, { choice: "shared" }), { hostname: "agent-1" });
  assert.equal(actionVerb(start), "Start maintenance");
});

Deno.test("Move to pool… is disabled for a host in no pool or when there is no other pool", () => {
  const move = (x: HostInfoJson, pools: string[]) => hostActions(x, pools).find((a) => a.choice)!;
  assert.equal(move(host("agent-0", "shared"), ["default", "shared"]).disabled, false);
  assert.equal(move(host("agent-0", "shared"), ["shared"]).disabled, true);
  assert.equal(move(host("agent-9", undefined, "HOST_STATE_DOWN"), ["default", "shared"]).disabled, true);
  // A draining host may move: its pool is not its maintenance.
  assert.equal(move(host("agent-2", "shared", "HOST_STATE_DRAINING"), ["batch", "shared"]).disabled, false);
});

Deno.test("each host pool has Move hosts…: the destination and how many are asked in the confirm step", () => {
  const { v, asked } = view();
  const entries = v.select("span.host-pool-entry");
  assert.deepEqual(
    entries.map((e) => e.select("span.host-pool")[0].getAttribute("data-pool")),
    ["batch", "default", "shared"],
  );
  const button = (pool: string) =>
    entries.find((e) => e.select(`span.host-pool[data-pool=${pool}]`).length)!.select(
      "button[data-action=Move hosts…]",
    )[0];
  // A pool without hosts has none to give.
  assert.deepEqual(["batch", "default", "shared"].map((p) => disabled(button(p))), [false, true, false]);
  assert.deepEqual(
    ["batch", "shared"].map((p) => button(p).getAttribute("aria-label")),
    ["Move hosts out of host pool batch…", "Move hosts out of host pool shared…"],
    "each pool's button is named for its pool",
  );
  button("shared").click();
  assert.equal(asked.length, 1, "the button asks for the confirm step");
  const [move] = asked;
  assert.equal(move.procedure, "peloton.api.v0.host.svc.HostService::MoveHosts");
  assert.equal(
    move.question,
    "Move hosts out of host pool shared (2 hosts)? The host manager picks which: idle, usable ones first (UP, " +
      "fewest tasks, most free CPU and memory), hosts in maintenance last. Their tasks keep running.",
  );
  assert.deepEqual(move.choice, {
    label: "To host pool",
    field: "destinationPool",
    options: ["batch", "default"],
  });
  assert.deepEqual(move.amount, { label: "Hosts to move" });
  assert.equal(actionVerb(move), "Move hosts");
});

Deno.test("Move hosts… asks MoveHosts for each pool's size after the move, as the CLI does", () => {
  const move = moveHostsAction("shared", POOLS);
  // shared has 2, batch 1: one host out of shared leaves it 1 and makes batch 2.
  const sent = actionBody(move, { choice: "batch", amount: 1 });
  assert.deepEqual(sent, {
    sourcePool: "shared",
    srcPoolDesiredHosts: 1,
    destinationPool: "batch",
    destPoolDesiredHosts: 2,
  });
  assert.deepEqual(actionBody(move, { choice: "default", amount: 2 }), {
    sourcePool: "shared",
    srcPoolDesiredHosts: 0,
    destinationPool: "default",
    destPoolDesiredHosts: 2,
  });
  // More than the pool has goes as it is (the source at 0): the host manager's refusal says how many it has.
  assert.deepEqual(actionBody(move, { choice: "default", amount: 5 }), {
    sourcePool: "shared",
    srcPoolDesiredHosts: 0,
    destinationPool: "default",
    destPoolDesiredHosts: 5,
  });
  assert.equal(
    move.describe({ hosts: ["agent-0"] }, sent),
    "Moved 1 host from host pool shared to batch: agent-0",
  );
  assert.equal(
    move.describe({ hosts: ["agent-0", "agent-2"] }, actionBody(move, { choice: "default", amount: 2 })),
    "Moved 2 hosts from host pool shared to default: agent-0, agent-2",
  );
  // The same request again (a retry, or the same move made meanwhile) moves nothing.
  assert.equal(
    move.describe({ hosts: [] }, sent),
    "No host moved: host pools shared and batch already have 1 host and 2 hosts",
  );
});

Deno.test("Move hosts… is disabled without ListHostPools' sizes, for an empty pool, and with no other pool", () => {
  assert.equal(moveHostsAction("shared", POOLS).disabled, false);
  assert.equal(moveHostsAction("shared", undefined).disabled, true, "sizes not loaded");
  assert.equal(moveHostsAction("default", POOLS).disabled, true, "no hosts to move");
  assert.equal(moveHostsAction("shared", [{ name: "shared", hosts: ["agent-0"] }]).disabled, true);
  assert.equal(moveHostsAction("gone", POOLS).disabled, true, "a pool ListHostPools does not list");
  // Without ListHostPools, the pools line still shows the pools hosts are in, their moves disabled.
  const v = fake(hostsView({ hosts: HOSTS }, "", () => {}));
  const buttons = v.select("button[data-action=Move hosts…]");
  assert.deepEqual(buttons.map(disabled), [true, true]);
});

Deno.test("the confirm step's amount is a whole number from 1", () => {
  assert.deepEqual(["1", " 3 ", "12"].map(wholeAmount), [1, 3, 12]);
  for (const bad of ["", "0", "-1", "1.5", "1e3", "two", "9007199254740993"]) {
    assert.equal(wholeAmount(bad), undefined, bad);
  }
});
