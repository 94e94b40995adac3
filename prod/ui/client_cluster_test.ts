/**
 * The hosts view's host pools: the Pool column, the pools above the table, the filter, a host's "Move to pool…"
 * and a pool's "Move hosts…" (bounded by the pool's size, its request worked out from the sizes read when
 * Confirm is pressed); every disabled host action's reason.
 */
import assert from "node:assert/strict";
import type { ApiCall, HostInfoJson, HostPoolJson, Snapshot, UiAction } from "./api_types.ts";
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
/** Whether a button was built disabled: marked so, and kept focusable (see actionButton). */
const disabled = (el: FakeElement) => el.getAttribute("aria-disabled") === "true";
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
  // The line comes before the table (in its scrolling box).
  const section = v.children.filter((c): c is FakeElement => typeof c !== "string");
  assert.deepEqual(section.map((c) => [c.tag, c.className]), [["h2", ""], ["div", "host-pools"], [
    "div",
    "table-scroll",
  ]]);
  assert.equal(section[2].select("table.hosts").length, 1);

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

Deno.test("a host's questions count its tasks in the right number: 1 task, 2 tasks, 0 tasks", () => {
  const questions = (tasks: number | undefined) => {
    const [start, , move] = hostActions({ ...host("agent-1", "batch"), tasks }, ["batch", "shared"]);
    return [start.question, move.question];
  };
  assert.deepEqual(questions(1), [
    "Start maintenance on agent-1? It takes no new work and its 1 task is moved off.",
    "Move agent-1 out of host pool batch? Its 1 task keeps running there.",
  ]);
  assert.deepEqual(questions(2), [
    "Start maintenance on agent-1? It takes no new work and its 2 tasks are moved off.",
    "Move agent-1 out of host pool batch? Its 2 tasks keep running there.",
  ]);
  assert.match(questions(undefined)[1], /Its 0 tasks keep running there\.$/);
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
  // At most the hosts the pool has, as the page last saw them.
  assert.deepEqual(move.amount, { label: "Hosts to move (1 to 2)", max: 2 });
  assert.equal(actionVerb(move), "Move hosts");
});

/** A ListHostPools that answers `pools`, counting its calls. */
function listing(pools: HostPoolJson[]) {
  const calls: string[] = [];
  const call: ApiCall = <T>(procedure: string) => {
    calls.push(procedure);
    return Promise.resolve({ pools } as T);
  };
  return { call, calls };
}

Deno.test("Move hosts… asks MoveHosts for each pool's size after the move, read when Confirm is pressed", async () => {
  // The page saw shared with 2 hosts and batch with 1.
  const move = moveHostsAction("shared", POOLS);
  const same = listing(POOLS);
  const sent = await move.prepare!({ choice: "batch", amount: 1 }, same.call);
  assert.deepEqual(same.calls, ["peloton.api.v0.host.svc.HostService::ListHostPools"]);
  assert.deepEqual(sent, {
    sourcePool: "shared",
    srcPoolDesiredHosts: 1,
    destinationPool: "batch",
    destPoolDesiredHosts: 2,
  });
  // Since then, another move took one of shared's hosts to batch: one more host is still one more.
  const since = listing([
    { name: "batch", hosts: ["agent-1", "agent-2"] },
    { name: "default", hosts: [] },
    { name: "shared", hosts: ["agent-0"] },
  ]);
  assert.deepEqual(await move.prepare!({ choice: "batch", amount: 1 }, since.call), {
    sourcePool: "shared",
    srcPoolDesiredHosts: 0,
    destinationPool: "batch",
    destPoolDesiredHosts: 3,
  });
  // More than it has now is refused before anything is sent, in the operator's terms.
  await assert.rejects(
    () => move.prepare!({ choice: "batch", amount: 2 }, since.call),
    { message: "cannot move 2 hosts out of host pool shared: it has 1 host now" },
  );
  await assert.rejects(
    () => move.prepare!({ choice: "default", amount: 1 }, listing([{ name: "shared", hosts: ["a"] }]).call),
    { message: "host pool default no longer exists" },
  );
  assert.equal(
    move.describe({ hosts: ["agent-0"] }, sent),
    "Moved 1 host from host pool shared to batch: agent-0",
  );
  assert.equal(
    move.describe({ hosts: [] }, sent),
    "No host moved: host pools shared and batch had the sizes asked already (1 host and 2 hosts)",
  );
  // A refusal because the pools changed between that read and the move says so; others are left as they are.
  const refusal = "peloton.api.v0.host.svc.HostService::MoveHosts: invalid-argument: destPoolDesiredHosts: " +
    "got 3, which moves 2 hosts into host pool batch (it has 1), but host pool shared has only 1 host";
  assert.equal(
    move.explain!(refusal, sent),
    "host pool shared or batch changed between reading their sizes and the move; no host moved, try again " +
      `(the host manager said: ${refusal})`,
  );
  assert.equal(move.explain!("unavailable: no leader", sent), "unavailable: no leader");
});

Deno.test("Move hosts… is disabled without ListHostPools' sizes, for an empty pool, and with no other pool", () => {
  assert.equal(moveHostsAction("shared", POOLS).disabled, false);
  assert.equal(moveHostsAction("shared", undefined).disabled, true, "sizes not loaded");
  assert.equal(moveHostsAction("default", POOLS).disabled, true, "no hosts to move");
  assert.equal(moveHostsAction("shared", [{ name: "shared", hosts: ["agent-0"] }]).disabled, true);
  assert.equal(moveHostsAction("gone", POOLS).disabled, true, "a pool ListHostPools does not list");
  // Each says why.
  assert.deepEqual(
    [
      moveHostsAction("shared", POOLS),
      moveHostsAction("shared", undefined),
      moveHostsAction("default", POOLS),
      moveHostsAction("shared", [{ name: "shared", hosts: ["agent-0"] }]),
      moveHostsAction("gone", POOLS),
    ].map((a) => a.disabledWhy),
    [
      undefined,
      "The host pools could not be loaded (see the error above)",
      "Host pool default has no hosts to move",
      "There is no host pool but shared to move hosts to",
      "Host pool gone is not listed by ListHostPools",
    ],
  );
  // Without ListHostPools, the pools line still shows the pools hosts are in, their moves disabled.
  const v = fake(hostsView({ hosts: HOSTS }, "", () => {}));
  const buttons = v.select("button[data-action=Move hosts…]");
  assert.deepEqual(buttons.map(disabled), [true, true]);
  assert.deepEqual(buttons.map((b) => b.getAttribute("title")), [
    "The host pools could not be loaded (see the error above)",
    "The host pools could not be loaded (see the error above)",
  ]);
});

Deno.test("every disabled host action says why in its tooltip", () => {
  const why = (state: string, pool: string | null = "shared", pools = ["batch", "shared"]) =>
    hostActions(host("agent-0", pool ?? undefined, state), pools).map((a) =>
      a.disabled ? a.disabledWhy : "enabled"
    );
  assert.deepEqual(why("HOST_STATE_UP"), ["enabled", "Host is UP: it is not in maintenance", "enabled"]);
  assert.deepEqual(why("HOST_STATE_DRAINING"), [
    "Host is in maintenance already (DRAINING)",
    "Host is DRAINING: maintenance completes once its machine is down (DOWN)",
    "enabled",
  ]);
  assert.deepEqual(why("HOST_STATE_DOWN", null), [
    "Host is in maintenance already (DOWN)",
    "enabled",
    "Host is in no host pool (in maintenance with its agent gone)",
  ]);
  assert.deepEqual(why("HOST_STATE_UNKNOWN", "shared", ["shared"]), [
    "Host is UNKNOWN: only an UP host starts maintenance",
    "Host is UNKNOWN: only a host in maintenance whose machine is down (DOWN) completes it",
    "There is no host pool but shared to move it to",
  ]);
  // The tooltip is on the button, as the job actions have theirs.
  const row = view().v.select("tbody")[0].select("tr").find((tr) => tr.textContent.startsWith("agent-0"))!;
  const complete = row.select("button[data-action=Complete maintenance]")[0];
  assert.ok(disabled(complete));
  assert.equal(complete.getAttribute("title"), "Host is UP: it is not in maintenance");
});

Deno.test("the confirm step's amount is a whole number from 1", () => {
  assert.deepEqual(["1", " 3 ", "12"].map(wholeAmount), [1, 3, 12]);
  for (const bad of ["", "0", "-1", "1.5", "1e3", "two", "9007199254740993"]) {
    assert.equal(wholeAmount(bad), undefined, bad);
  }
});
