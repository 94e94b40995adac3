/** Runs the Store conformance suite on the in-memory store, plus what only it does (dropping events). */
import { deepStrictEqual as equal } from "node:assert/strict";
import { MemoryStore } from "./memory_store.ts";
import { makeTask, put, storeSuite } from "../prod/store/store_suite.ts";

// Each open is a fresh store: nothing outlives close, so the suite's durability step does not apply.
storeSuite("MemoryStore", () => Promise.resolve(new MemoryStore(queueMicrotask)));

Deno.test("MemoryStore without keepEvents drops task events but keeps tasks", async () => {
  const store = new MemoryStore(queueMicrotask, { keepEvents: false });
  const event = { jobId: "j", instanceId: 0, runId: 1, state: "RUNNING" as const, timeMs: 1 };
  equal(
    await put(store, [{ kind: "task.put", task: makeTask("j", 0) }, { kind: "task.event", event }]),
    undefined,
  );
  equal(await store.getTaskEvents("j", 0), []);
  equal(await store.getTask("j", 0), makeTask("j", 0));
  await store.close();
});

Deno.test("MemoryStore calls done through the injected defer, and copies records", async () => {
  const deferred: (() => void)[] = [];
  const store = new MemoryStore((fn) => deferred.push(fn));
  const task = makeTask("j", 0);
  const calls: unknown[] = [];
  store.write([{ kind: "task.put", task }], (err) => calls.push(err));
  task.version = 99;
  task.history!.push({ runId: 5, state: "LOST" });
  equal(calls, []);
  equal(deferred.length, 1);
  deferred.shift()!();
  equal(calls, [undefined]);
  equal(await store.getTask("j", 0), makeTask("j", 0));
  await store.close();
});
