/** The cluster's task rows: per-host lists in launch order and the id table, against a plain model. */
import assert from "node:assert/strict";
import { seededPrng } from "../core/ports/prng.ts";
import { ANY_HOST, NO_TASK, taskIdHash, TaskSlots } from "./task_slots.ts";

const RESOURCES = { cpuMilli: 1000, memMb: 128, diskMb: 0, gpuMilli: 0 };

function tasksOn(slots: TaskSlots, host: number): string[] {
  const out: string[] = [];
  for (let t = slots.first(host); t !== NO_TASK; t = slots.next[t]) out.push(slots.taskId[t]);
  return out;
}

Deno.test("thousands of adds and removes keep every host's list in launch order and every id findable", () => {
  const prng = seededPrng(11);
  const slots = new TaskSlots();
  // The model: per host, ids in launch order; ids repeat across hosts (the same id on two hosts). About
  // 8,000 stay live, so the id table grows twice and its probe runs wrap around.
  const model: string[][] = Array.from({ length: 40 }, () => []);
  const slotOf = new Map<string, number>();
  for (let step = 0; step < 40_000; step++) {
    const host = Math.floor(prng() * model.length);
    if (prng() < 0.6) {
      const id = `job-${Math.floor(prng() * 3000)}-1`;
      if (model[host].includes(id)) continue;
      const slot = slots.add(id, taskIdHash(id), host, RESOURCES, false, 1, undefined);
      model[host].push(id);
      slotOf.set(`${host}/${id}`, slot);
    } else if (model[host].length) {
      const id = model[host].splice(Math.floor(prng() * model[host].length), 1)[0];
      const slot = slots.find(id, host);
      assert.equal(slot, slotOf.get(`${host}/${id}`));
      const generation = slots.generation[slot];
      slots.remove(slot);
      assert.equal(slots.generation[slot], generation + 1, "a freed row's old statuses no longer apply");
      assert.equal(slots.find(id, host), NO_TASK);
    }
  }
  for (let host = 0; host < model.length; host++) {
    assert.deepEqual(tasksOn(slots, host), model[host]);
    for (const id of model[host]) assert.equal(slots.find(id, host), slotOf.get(`${host}/${id}`));
  }
  // ANY_HOST finds the copy on the host of lowest index.
  for (let id = 0; id < 3000; id++) {
    const name = `job-${id}-1`;
    const host = model.findIndex((ids) => ids.includes(name));
    const found = slots.find(name, ANY_HOST);
    assert.equal(found === NO_TASK ? -1 : slots.host[found], host);
  }
});
