/** The summary's Resource pools card and the pools view's heading: the same count, of the pools under the root. */
import assert from "node:assert/strict";
import type { RespoolInfoJson, Snapshot } from "./api_types.ts";
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
