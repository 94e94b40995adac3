import assert from "node:assert/strict";
import { Fifo, PriorityFifo } from "./queue.ts";

Deno.test("Fifo keeps order, supports unshift and removal", () => {
  const q = new Fifo<number>();
  for (let i = 0; i < 5; i++) q.push(i);
  assert.equal(q.shift(), 0);
  q.unshift(9);
  assert.equal(q.remove((x) => x === 3), 3);
  assert.deepEqual([...q], [9, 1, 2, 4]);
  assert.equal(q.size, 4);
  assert.equal(q.peek(), 9);
});

Deno.test("Fifo compacts after many shifts without losing items", () => {
  const q = new Fifo<number>();
  for (let i = 0; i < 5000; i++) q.push(i);
  for (let i = 0; i < 4000; i++) assert.equal(q.shift(), i);
  assert.deepEqual([...q].slice(0, 3), [4000, 4001, 4002]);
  assert.equal(q.size, 1000);
});

Deno.test("PriorityFifo dequeues highest priority first, FIFO within a level", () => {
  const q = new PriorityFifo<{ p: number; id: string }>((x) => x.p);
  q.push({ p: 1, id: "a" });
  q.push({ p: 5, id: "b" });
  q.push({ p: 1, id: "c" });
  q.push({ p: 5, id: "d" });
  q.push({ p: 3, id: "e" });
  assert.deepEqual([...q].map((x) => x.id), ["b", "d", "e", "a", "c"]);
  assert.equal(q.shift()?.id, "b");
  q.unshift({ p: 5, id: "b" });
  assert.equal(q.peek()?.id, "b");
  assert.equal(q.remove((x) => x.id === "e")?.id, "e");
  assert.deepEqual([...q].map((x) => x.id), ["b", "d", "a", "c"]);
  assert.equal(q.size, 4);
});
