import assert from "node:assert/strict";
import { finishStop } from "./graceful_stop.ts";

Deno.test("a graceful stop that ends with nothing lost exits 0 and says nothing", async () => {
  const said: string[] = [];
  assert.equal(
    await finishStop((l) => said.push(l), "peloton x", () => Promise.resolve(), new Promise(() => {})),
    0,
  );
  assert.deepEqual(said, []);
});

Deno.test("a stop that lost a write exits 1 naming it, also when the loss is told just after the stop", async () => {
  const said: string[] = [];
  const lost = Promise.withResolvers<string>();
  const code = await finishStop((l) => said.push(l), "peloton up", () => {
    // The store tells of the write it lost on a turn of its own, after the stop's last await.
    setTimeout(() => lost.resolve("a store write failed: Error: connect ETIMEDOUT"), 0);
    return Promise.resolve();
  }, lost.promise);
  assert.equal(code, 1);
  assert.deepEqual(said, ["peloton up: stopped, but a store write failed: Error: connect ETIMEDOUT"]);
});

Deno.test("a stop past its deadline exits 1 naming the step it was at", async () => {
  const said: string[] = [];
  const code = await finishStop(
    (l) => said.push(l),
    "peloton jobmgr",
    () => new Promise(() => {}),
    new Promise(() => {}),
    () => "flushing the store",
    50,
  );
  assert.equal(code, 1);
  assert.deepEqual(said, [
    "peloton jobmgr: the stop did not finish within 0.05 s (it was flushing the store); exiting",
  ]);
});
