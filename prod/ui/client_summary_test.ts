/**
 * The summary and the pools view: the Resource pools card and the heading count the same pools (those under the
 * root); the capacity cards count UP hosts only, hosts in maintenance apart; a pool's counts are singular for one.
 */
import assert from "node:assert/strict";
import type { HostInfoJson, RespoolInfoJson, Snapshot } from "./api_types.ts";
import { poolsView, summaryView } from "./client_cluster.ts";
import { fake, useFakeDocument } from "./dom_testing.ts";

useFakeDocument();

function pool(id: string, path: string, parent?: string, children: string[] = []): RespoolInfoJson {
  return {
    id: { value: id },
    path: { value: path },
    parent: parent ? { value: parent } : undefined,
    children: children.map((value) => ({ value })),
    config: { name: path.split("/").pop() || "root", resources: [] },
  };
}

/** The root, a parent pool and its two leaves: three pools under the root, four rows in the view. */
const POOLS = [
  pool("root", "/", undefined, ["batch"]),
  pool("batch", "/batch", "root", ["wide", "idle"]),
  pool("wide", "/batch/wide", "batch"),
  pool("idle", "/batch/idle", "batch"),
];

function card(snap: Snapshot) {
  const c = fake(summaryView(snap)).select("div[id=summary-pools]")[0];
  return { value: c.select("div.v")[0].textContent, title: c.getAttribute("title") };
}

const heading = (snap: Snapshot) =>
  fake(poolsView(snap, { open: new Set(), toggle: () => {} })).select("h2")[0];

Deno.test("the pools card and the pools view's heading count the same pools: those under the root", () => {
  const snap: Snapshot = { pools: POOLS };
  assert.equal(card(snap).value, "3");
  assert.equal(card(snap).title, "Pools under the root pool (/); the root is not counted");
  assert.equal(heading(snap).textContent, "Resource pools (3 under the root)");
  // The root is still listed, first.
  const rows = fake(poolsView(snap, { open: new Set(), toggle: () => {} })).select("tbody.pool-group");
  assert.equal(rows.length, 4);
  assert.equal(rows[0].select("strong")[0].textContent, "/");
});

Deno.test("a cluster with only its root has no pools to count, in the card as in the heading", () => {
  const snap: Snapshot = { pools: [pool("root", "/")] };
  assert.equal(card(snap).value, "0");
  assert.equal(heading(snap).textContent, "Resource pools (0 under the root)");
  assert.equal(card({}).value, "—", "not loaded");
});

/** A host in `state` with `cpu` cores of which `freeCpu` are free, and 1000 MB of memory, all free. */
function host(hostname: string, state: string, cpu: number, freeCpu: number): HostInfoJson {
  return {
    hostname,
    state,
    resources: { total: { cpuLimit: cpu, memLimitMb: 1000 }, free: { cpuLimit: freeCpu, memLimitMb: 1000 } },
  };
}

const cardText = (snap: Snapshot, id: string) =>
  fake(summaryView(snap)).select(`div[id=summary-${id}]`)[0].select("div.v")[0].textContent;

Deno.test("the summary's capacity is the UP hosts'; hosts in maintenance are counted apart", () => {
  const up = [host("agent-0", "HOST_STATE_UP", 4, 1), host("agent-1", "HOST_STATE_UP", 4, 3)];
  assert.equal(cardText({ hosts: up }, "cpu"), "4 / 8 cores");
  // agent-2 is DOWN: its 4 cores are no room for work, and its free cores no free room.
  const snap: Snapshot = { hosts: [...up, host("agent-2", "HOST_STATE_DOWN", 4, 4)] };
  assert.equal(cardText(snap, "cpu"), "4 / 8 cores4 cores in maintenance");
  assert.equal(cardText(snap, "memory"), "0 / 2000 MB1000 MB in maintenance");
  const card = fake(summaryView(snap)).select("div[id=summary-cpu]")[0];
  assert.deepEqual(card.select("span.aside").map((s) => s.textContent), ["4 cores in maintenance"]);
  assert.equal(card.getAttribute("title"), "Hosts UP (2 of 3): the hosts that take work");
  // Draining ones are in maintenance too; a host in no known state is apart again.
  const mixed: Snapshot = {
    hosts: [...up, host("agent-3", "HOST_STATE_DRAINING", 2, 0), host("agent-4", "HOST_STATE_UNKNOWN", 8, 8)],
  };
  assert.equal(cardText(mixed, "cpu"), "4 / 8 cores2 cores in maintenance8 cores on hosts not answering");
});

Deno.test("pool counts are singular for one: 1 child pool, 1 active job", () => {
  const job = (id: string, respool: string) => ({
    id: { value: id },
    config: { name: id, type: "BATCH", instanceCount: 1, respoolID: { value: respool } },
    runtime: { state: "RUNNING", goalState: "SUCCEEDED" },
  });
  const pools = [
    pool("root", "/", undefined, ["batch"]),
    pool("batch", "/batch", "root", ["wide"]),
    pool("wide", "/batch/wide", "batch"),
  ];
  const notes = (records: ReturnType<typeof job>[]) =>
    fake(poolsView({ pools, activeJobs: { records, pagination: { offset: 0, limit: 9, total: 9 } } }, {
      open: new Set(),
      toggle: () => {},
    })).select("td.pool").map((td) => td.select("div.muted")[0].textContent);
  // A parent counts its subtree's jobs, as its allocation adds up its leaves'.
  assert.deepEqual(notes([job("a", "wide")]), [
    "1 child pool · 1 active job",
    "1 child pool · 1 active job",
    "leaf · 1 active job",
  ]);
  assert.deepEqual(notes([job("a", "wide"), job("b", "wide")]), [
    "1 child pool · 2 active jobs",
    "1 child pool · 2 active jobs",
    "leaf · 2 active jobs",
  ]);
});
