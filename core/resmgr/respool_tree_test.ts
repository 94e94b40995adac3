import assert from "node:assert/strict";
import { makeRespoolConfig } from "../testing/harness.ts";
import { RespoolTree, ROOT_ID, withAllKinds } from "./respool_tree.ts";
import { QueuedGang } from "./queued_gang.ts";
import { PENDING, TaskTable } from "./task_table.ts";
import { makeRmTask } from "../testing/harness.ts";

/** A tree with /a (cpu 10/20, memory 1000/2000). */
function treeWithA(): RespoolTree {
  const tree = new RespoolTree();
  const res = tree.create(
    "a",
    ROOT_ID,
    makeRespoolConfig("a", {
      cpu: { reservation: 10, limit: 20 },
      memory: { reservation: 1000, limit: 2000 },
    }),
  );
  assert.ok(res.ok);
  return tree;
}

function code(res: { ok: boolean; code?: string }): string | undefined {
  return res.ok ? undefined : res.code;
}

Deno.test("a pool created under root gets the path /name and is found by id and path", () => {
  const tree = treeWithA();
  const a = tree.get("a")!;
  assert.equal(a.path, "/a");
  assert.equal(a.parent, tree.root);
  assert.equal(tree.lookup("/a"), a);
  assert.equal(tree.lookup("/a/"), a);
  assert.equal(tree.lookup("/"), tree.root);
  assert.equal(tree.lookup("a"), undefined, "a path must start with /");
  assert.equal(tree.lookup("/missing"), undefined);
});

Deno.test("top-level pools are not checked against root, which has no resources", () => {
  const tree = new RespoolTree();
  assert.ok(tree.create("big", ROOT_ID, makeRespoolConfig("big", { cpu: 1e6 })).ok);
});

Deno.test("a child's limit above its parent's limit is rejected", () => {
  const tree = treeWithA();
  const res = tree.create("b", "a", makeRespoolConfig("b", { cpu: { reservation: 1, limit: 30 } }));
  assert.equal(code(res), "invalid-argument");
  assert.match(!res.ok ? res.message : "", /limit 30 exceeds the parent's limit 20/);
  assert.equal(tree.get("b"), undefined);
});

Deno.test("children's reservations summing above the parent's reservation are rejected", () => {
  const tree = treeWithA();
  assert.ok(tree.create("b", "a", makeRespoolConfig("b", { cpu: { reservation: 6, limit: 10 } })).ok);
  const res = tree.create("c", "a", makeRespoolConfig("c", { cpu: { reservation: 6, limit: 10 } }));
  assert.equal(code(res), "invalid-argument");
  assert.match(!res.ok ? res.message : "", /reservations 12 exceed the parent's reservation 10/);
  assert.ok(tree.create("c", "a", makeRespoolConfig("c", { cpu: { reservation: 4, limit: 10 } })).ok);
});

Deno.test("a sibling with the same name is rejected as already existing", () => {
  const tree = treeWithA();
  const res = tree.create("a2", ROOT_ID, makeRespoolConfig("a"));
  assert.equal(code(res), "already-exists");
  assert.equal(code(tree.create("a", ROOT_ID, makeRespoolConfig("other"))), "already-exists");
});

Deno.test("a pool named root under root cannot override root", () => {
  const tree = new RespoolTree();
  const res = tree.create("x", ROOT_ID, makeRespoolConfig("root"));
  assert.equal(code(res), "invalid-argument");
  assert.match(!res.ok ? res.message : "", /cannot override root/);
  assert.equal(code(tree.update(ROOT_ID, makeRespoolConfig("root"))), "invalid-argument");
});

Deno.test("creating under an unknown parent is not found", () => {
  assert.equal(code(new RespoolTree().create("b", "nope", makeRespoolConfig("b"))), "not-found");
});

Deno.test("an update cannot change the parent or the name", () => {
  const tree = treeWithA();
  assert.ok(tree.create("b", ROOT_ID, makeRespoolConfig("b")).ok);
  assert.equal(code(tree.update("b", makeRespoolConfig("b", {}, { parent: "a" }))), "invalid-argument");
  assert.equal(code(tree.update("b", makeRespoolConfig("renamed"))), "invalid-argument");
  assert.ok(tree.update("b", makeRespoolConfig("b", { cpu: 5 }, { parent: ROOT_ID })).ok);
  assert.equal(tree.get("b")!.resource("cpu")!.limit, 5);
});

Deno.test("an update still nests: not above the parent's limit, not below the children's", () => {
  const tree = treeWithA();
  assert.ok(tree.create("b", "a", makeRespoolConfig("b", { cpu: { reservation: 5, limit: 15 } })).ok);
  assert.equal(
    code(tree.update("b", makeRespoolConfig("b", { cpu: { reservation: 5, limit: 25 } }))),
    "invalid-argument",
  );
  assert.equal(
    code(tree.update("a", makeRespoolConfig("a", { cpu: { reservation: 10, limit: 12 } }))),
    "invalid-argument",
    "a's limit below child b's limit 15",
  );
  assert.equal(
    code(tree.update("a", makeRespoolConfig("a", { cpu: { reservation: 4, limit: 20 } }))),
    "invalid-argument",
    "a's reservation below child b's reservation 5",
  );
  assert.ok(tree.update("a", makeRespoolConfig("a", { cpu: { reservation: 4, limit: 20 } }), true).ok);
});

Deno.test("only leaf pools can be deleted", () => {
  const tree = treeWithA();
  assert.ok(tree.create("b", "a", makeRespoolConfig("b", { cpu: { reservation: 1, limit: 2 } })).ok);
  const res = tree.delete("/a");
  assert.equal(code(res), "failed-precondition");
  assert.match(!res.ok ? res.message : "", /not a leaf/);
  assert.equal(code(tree.delete("/")), "failed-precondition", "the root, while it has pools, is not a leaf");
  assert.equal(code(tree.delete("/nope")), "not-found");
  assert.ok(tree.delete("/a/b").ok);
  assert.equal(tree.lookup("/a/b"), undefined);
  assert.equal(tree.get("b"), undefined);
  assert.ok(tree.delete("/a").ok);
  assert.deepEqual(tree.root.children, []);
  assert.equal(code(tree.delete("/")), "invalid-argument", "the root alone is never deleted");
});

Deno.test("a pool with queued or admitted tasks is busy and cannot be deleted", () => {
  const tree = treeWithA();
  const a = tree.get("a")!;
  const table = new TaskTable();
  const row = table.add(makeRmTask({ respoolId: "a" }), a, PENDING, undefined);
  const gang = new QueuedGang(table, [row]);
  a.enqueue(gang);
  assert.match(!tree.delete("/a").ok ? "busy" : "", /busy/);
  a.dropQueuedTask(gang, row);
  for (const key of ["cpuMilli", "memMb", "diskMb", "gpuMilli"] as const) {
    a.allocation.total[key] = 1;
    const res = tree.delete("/a");
    assert.equal(code(res), "failed-precondition", `allocated ${key} makes the pool busy`);
    assert.match(!res.ok ? res.message : "", /busy/);
    a.allocation.total[key] = 0;
  }
  assert.ok(tree.delete("/a").ok);
});

Deno.test("a pool holding tasks in any dimension or queue cannot become a parent", () => {
  const tree = treeWithA();
  const a = tree.get("a")!;
  const child = () => tree.create("c", "a", makeRespoolConfig("c", { cpu: 1, memory: 100 }));
  a.allocation.total.gpuMilli = 1000;
  assert.equal(code(child()), "failed-precondition", "a GPU-only allocation counts");
  a.allocation.total.gpuMilli = 0;
  const task = makeRmTask({ respoolId: "a", revocable: true });
  const table = new TaskTable();
  a.enqueue(new QueuedGang(table, [table.add(task, a, PENDING, undefined)]));
  a.revocable.push(a.pending.shift()!);
  assert.equal(code(child()), "failed-precondition", "a gang in the revocable queue counts");
});

Deno.test("kinds a config leaves out are added with reservation 0, limit 0, share 1", () => {
  const full = withAllKinds(makeRespoolConfig("x", { cpu: 3 }));
  assert.deepEqual(full.resources.map((r) => [r.kind, r.reservation, r.limit, r.share]), [
    ["cpu", 3, 3, 1],
    ["memory", 0, 0, 1],
    ["disk", 0, 0, 1],
    ["gpu", 0, 0, 1],
  ]);
  const tree = treeWithA();
  assert.deepEqual(tree.get("a")!.resource("gpu"), {
    kind: "gpu",
    reservation: 0,
    limit: 0,
    share: 1,
    type: "ELASTIC",
  });
});

Deno.test("every change bumps the generation so entitlement is recalculated", () => {
  const tree = new RespoolTree();
  const g0 = tree.generation;
  tree.create("a", ROOT_ID, makeRespoolConfig("a"));
  tree.update("a", makeRespoolConfig("a", { cpu: 5 }));
  tree.delete("/a");
  assert.equal(tree.generation, g0 + 3);
});

Deno.test("load rebuilds the tree from records in any order", () => {
  const tree = new RespoolTree();
  tree.load([
    { id: "b", path: "/a/b", parentId: "a", config: withAllKinds(makeRespoolConfig("b")) },
    { id: "a", path: "/a", parentId: ROOT_ID, config: withAllKinds(makeRespoolConfig("a")) },
  ]);
  assert.equal(tree.lookup("/a/b")!.parent, tree.get("a"));
  assert.deepEqual([...tree.leaves()].map((n) => n.path), ["/a/b"]);
});
