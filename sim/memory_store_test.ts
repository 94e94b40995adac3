/** Runs the Store conformance suite on the in-memory store, plus what only it does (dropping events). */
import { deepStrictEqual as equal } from "node:assert/strict";
import { MemoryStore } from "./memory_store.ts";
import { makeJob, makeTask, put, storeSuite } from "../prod/store/store_suite.ts";

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

Deno.test("MemoryStore archiving: a finished job's tasks go with it, and come back if its batch is stale", async () => {
  const store = new MemoryStore(queueMicrotask, { adoptWrites: true, archiveFinishedTasks: true });
  const running = makeJob("j", {}, { state: "RUNNING", version: 1 });
  equal(
    await put(store, [{ kind: "job.put", job: running }, { kind: "task.put", task: makeTask("j", 0) }]),
    undefined,
  );
  const done = makeJob("j", {}, { state: "SUCCEEDED", version: 2 });
  // Stale after the job ended: nothing of the batch stays, the tasks included.
  const stale = makeTask("j", 1, { version: 0 });
  const err = await put(store, [
    { kind: "job.put", job: done },
    { kind: "task.put", task: makeTask("j", 1, { version: 5 }) },
    { kind: "task.put", task: makeTask("j", 1, { version: 6 }) },
    { kind: "task.put", task: stale },
  ]);
  equal(err?.name, "StaleWriteError");
  equal((await store.getJob("j"))?.runtime.state, "RUNNING");
  equal(await store.getTasks("j"), [makeTask("j", 0)]);
  // The same batch without the stale write ends the job and archives its tasks.
  equal(await put(store, [{ kind: "job.put", job: done }]), undefined);
  equal(await store.getTasks("j"), []);
  await store.close();
});

Deno.test("MemoryStore takes a batch that mixes task puts with deletes as a whole, in order", async () => {
  const store = new MemoryStore(queueMicrotask, { adoptWrites: true });
  equal(
    await put(store, [0, 1, 2].map((i) => ({ kind: "task.put" as const, task: makeTask("j", i) }))),
    undefined,
  );
  const bumped = makeTask("j", 0, { version: 2 });
  equal(
    await put(store, [
      { kind: "task.put", task: bumped },
      { kind: "task.delete", jobId: "j", instanceId: 1 },
      { kind: "task.put", task: makeTask("j", 1, { version: 1 }) },
    ]),
    undefined,
  );
  equal(await store.getTasks("j"), [bumped, makeTask("j", 1), makeTask("j", 2)]);
  // A stale put after a delete undoes the put before it (which the one-pass path had applied first).
  const err = await put(store, [
    { kind: "task.put", task: makeTask("j", 2, { version: 3 }) },
    { kind: "task.delete", jobId: "j", instanceId: 0 },
    { kind: "task.put", task: makeTask("j", 1, { version: 1 }) },
  ]);
  equal(err?.name, "StaleWriteError");
  equal(await store.getTasks("j"), [bumped, makeTask("j", 1), makeTask("j", 2)]);
  await store.close();
});
