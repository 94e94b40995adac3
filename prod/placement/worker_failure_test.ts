/** A placement worker that dies mid-round, with real workers: the rounds it held fail, later ones place. */
import assert from "node:assert/strict";
import { placeRound } from "../../core/placement/plan.ts";
import type { PlacementResult } from "../../core/placement/round.ts";
import { engineRig, lease, one, randomRound } from "../../core/placement/testing.ts";
import { WorkerExecutor } from "./worker_executor.ts";
import { assertSamePlacement } from "./testing.ts";

type How = "error" | "close" | "reject" | "hang" | "slow";

/** An executor whose worker `worker` dies as its partition of round `round` (the first is 0) starts. */
function dying(
  partitions: number,
  worker: number,
  how: How,
  round = 0,
  roundTimeoutMs?: number,
): WorkerExecutor {
  const module = new URL(
    `./testdata/dying_worker.ts?worker=${worker}&round=${round}&how=${how}`,
    import.meta.url,
  );
  return new WorkerExecutor(partitions, { module, roundTimeoutMs });
}

/** Fails instead of waiting for ever (the defect: a dead worker never answers). */
async function within<T>(what: string, p: Promise<T>, ms = 20_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `f` with console.error recorded instead of printed. */
async function logged(f: () => Promise<void>): Promise<unknown[][]> {
  const calls: unknown[][] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => calls.push(args);
  try {
    await f();
  } finally {
    console.error = original;
  }
  return calls;
}

/** Places the rounds of `seeds` at once; resolves with each result, in the order they came. */
function placeAll(exec: WorkerExecutor, seeds: number[]): Promise<[number, PlacementResult][]> {
  const got: [number, PlacementResult][] = [];
  return new Promise((resolve) => {
    for (const seed of seeds) {
      exec.place(randomRound(seed), (r) => {
        got.push([seed, r]);
        if (got.length === seeds.length) resolve(got);
      });
    }
  });
}

function assertNothingPlaced(r: PlacementResult, why: RegExp, what: string): void {
  assert.ok(r.hosts.every((h) => h === -1), `${what}: nothing placed`);
  assert.match(r.error ?? "", why, `${what}: the reason`);
}

const CASES: [partitions: number, worker: number, how: How][] = [
  [1, 0, "error"],
  [2, 1, "error"],
  [2, 0, "close"],
  [3, 2, "close"],
  [2, 1, "reject"],
];

for (const [partitions, worker, how] of CASES) {
  const name = `worker ${worker} of ${partitions} dies by ${how}`;
  Deno.test(`${name}: the round and the one queued behind it fail once each; later rounds place`, async () => {
    const exec = dying(partitions, worker, how);
    const calls = await logged(async () => {
      // A rejected call comes back through worker 0, whichever worker threw.
      const why = new RegExp(`^placement worker ${how === "reject" ? 0 : worker} failed: .+`);
      const failed = await within(name, placeAll(exec, [3, 4]));
      assert.deepEqual(failed.map(([seed]) => seed), [3, 4], "each answered once, in order");
      for (const [seed, r] of failed) assertNothingPlaced(r, why, `seed ${seed}`);
      // Placed after the failure: a fresh set of workers, the same result as the plan.
      const later = await within(`${name}, later rounds`, placeAll(exec, [5, 6]));
      assert.deepEqual(later.map(([seed]) => seed), [5, 6]);
      for (const [seed, r] of later) {
        assertSamePlacement(r, placeRound(randomRound(seed), partitions), `seed ${seed}`);
        assert.equal(r.error, undefined);
      }
      await within(`${name}, close`, exec.close());
      assert.deepEqual(failed.map(([seed]) => seed), [3, 4], "no round answered twice");
    });
    assert.equal(calls.length, 1, "the failure is logged once");
    assert.match(String(calls[0][0]), new RegExp(`^Placement worker ${how === "reject" ? 0 : worker} `));
  });
}

Deno.test("close() returns with a dead worker's round in flight, which is answered first", async () => {
  const exec = dying(3, 2, "close");
  const calls = await logged(async () => {
    let answers = 0;
    exec.place(randomRound(3), (r) => {
      answers++;
      assertNothingPlaced(r, /^placement worker 2 failed: it closed itself$/, "seed 3");
    });
    await within("close", exec.close());
    assert.equal(answers, 1);
    assert.throws(() => exec.place(randomRound(4), () => {}), /the placement workers were closed/);
  });
  assert.equal(calls.length, 1);
});

Deno.test("a placement engine whose worker dies gives the round's leases back and places the tasks later", async () => {
  const exec = dying(1, 0, "error");
  const calls = await logged(async () => {
    const { gangs, hosts, transport, clock } = engineRig({}, exec);
    gangs(one({ instanceId: 0 }), one({ instanceId: 1 }));
    hosts([lease("h1"), lease("h2")]);
    const until = async <T>(what: string, take: () => T[]): Promise<T[]> => {
      for (let waited = 0; waited < 20_000; waited += 10) {
        const got = take();
        if (got.length) return got;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error(`${what}: nothing after 20000 ms`);
    };
    const [failed] = await until("the failed round", () => transport.take("set-placements", "resmgr"));
    assert.deepEqual([failed.placements, failed.failed], [[], []], "before their deadline the tasks stay");
    assert.equal(failed.pending?.length, 1);
    assert.match(failed.pending![0].reason, /^placement worker 0 failed: .*test worker dies in round 0/);
    assert.deepEqual(failed.pending![0].taskIds, ["job-a-0-1", "job-a-1-1"]);
    assert.deepEqual(transport.takeOne("release-hosts", "hostmgr").leaseIds, ["h1#1", "h2#1"]);
    // After the backoff the tasks are due again: the next round goes to new workers and places them.
    clock.advance(1_000);
    gangs();
    hosts([lease("h1"), lease("h2")]);
    const [set] = await until("the next round", () => transport.take("set-placements", "resmgr"));
    assert.deepEqual(set.failed, []);
    assert.deepEqual(set.placements.flatMap((p) => p.tasks.map((t) => t.taskId)).sort(), [
      "job-a-0-1",
      "job-a-1-1",
    ]);
    await within("close", exec.close());
  });
  assert.equal(calls.length, 1);
});

Deno.test("a worker that hangs: with roundTimeoutMs its rounds fail after the timeout, and later rounds place", async () => {
  // The timeout covers a new set's start too (loading and checking the test worker): 6 s leaves a loaded
  // machine room for that, where 3 s failed the first later round once.
  const exec = dying(2, 1, "hang", 0, 6_000);
  const calls = await logged(async () => {
    const failed = await within("the hung rounds", placeAll(exec, [3, 4]));
    assert.deepEqual(failed.map(([seed]) => seed), [3, 4], "each answered once, in order");
    for (const [seed, r] of failed) {
      assertNothingPlaced(r, /^placement workers failed: no round answered in 6000 ms$/, `seed ${seed}`);
    }
    const later = await within("later rounds", placeAll(exec, [5, 6]));
    for (const [seed, r] of later) {
      assert.equal(r.error, undefined, `seed ${seed}`);
      assertSamePlacement(r, placeRound(randomRound(seed), 2), `seed ${seed}`);
    }
    await within("close", exec.close());
  });
  assert.equal(calls.length, 1, "the hang is logged once");
  assert.match(String(calls[0][0]), /^Placement workers \(of 2\) failed/);
});

Deno.test("roundTimeoutMs counts from the last answer: slow rounds queued longer in all than it still place", async () => {
  // Worker 1 takes 300 ms more over each round from round 1 on. Twelve of them, two out at a time as the
  // engine keeps them (`pipelineDepth`), answered two every 600 ms or so, take 3.6 s in all, past the 1.5 s
  // timeout, but each answer comes well within it of the one before (a loaded machine has margin).
  const slow = (timeout?: number) =>
    new WorkerExecutor(2, {
      module: new URL("./testdata/dying_worker.ts?worker=1&round=1&how=slow&ms=300", import.meta.url),
      roundTimeoutMs: timeout,
    });
  const loaded = slow();
  // Its first start (loading and type-checking the test worker) is not what is timed.
  await within("loading the test worker", loaded.run(randomRound(8)));
  await within("loading the test worker", loaded.close());
  const exec = slow(1_500);
  assert.equal((await within("warm-up", exec.run(randomRound(9)))).error, undefined);
  const seeds = Array.from({ length: 12 }, (_, i) => 10 + i);
  const t0 = performance.now();
  const got = await within(
    "rounds",
    new Promise<[number, PlacementResult][]>((resolve) => {
      const out: [number, PlacementResult][] = [];
      let next = 0;
      const send = () => {
        const seed = seeds[next++];
        exec.place(randomRound(seed), (r) => {
          out.push([seed, r]);
          if (next < seeds.length) send();
          if (out.length === seeds.length) resolve(out);
        });
      };
      send();
      send();
    }),
  );
  assert.ok(performance.now() - t0 > 1_500, "the rounds took longer in all than the timeout");
  for (const [seed, r] of got) {
    assert.equal(r.error, undefined, `seed ${seed}`);
    assertSamePlacement(r, placeRound(randomRound(seed), 2), `seed ${seed}`);
  }
  await within("close", exec.close());
  for (const bad of [0, -1, NaN, Infinity]) {
    assert.throws(
      () => new WorkerExecutor(1, { roundTimeoutMs: bad }),
      /roundTimeoutMs .*expected a positive number/,
    );
  }
});

Deno.test("close() waits for a round sent by run() and not awaited: it is answered with its placement first", async () => {
  // Worker 1 takes 300 ms over its partition of every round, so the round is still out when close() starts.
  const exec = new WorkerExecutor(2, {
    module: new URL("./testdata/dying_worker.ts?worker=1&round=0&how=slow&ms=300", import.meta.url),
  });
  const order: string[] = [];
  const out = exec.run(randomRound(3)).then((r) => {
    order.push("round");
    return r;
  });
  // A grace far past the round's 300 ms: on a loaded machine starting the workers alone can take seconds.
  await within("close", exec.close(15_000).then(() => order.push("close")));
  assert.deepEqual(order, ["round", "close"], "the round is answered before close() returns");
  const r = await out;
  assert.equal(r.error, undefined);
  assertSamePlacement(r, placeRound(randomRound(3), 2), "seed 3");
});

Deno.test("a round that cannot be posted to the workers is answered, placing nothing, and the next places", async () => {
  const exec = new WorkerExecutor(1);
  const calls = await logged(async () => {
    // A function cannot be cloned: posting throws a DataCloneError.
    const bad = Object.assign(randomRound(3), { extra: () => 0 });
    assertNothingPlaced(await within("the bad round", exec.run(bad)), /could not be cloned/, "seed 3");
    const r = await within("the next round", exec.run(randomRound(4)));
    assert.equal(r.error, undefined);
    assertSamePlacement(r, placeRound(randomRound(4), 1), "seed 4");
    await within("close", exec.close());
  });
  assert.equal(calls.length, 1, "the failure is logged once");
});

Deno.test("close() answers rounds a hung worker holds once its grace has passed, even without a round timeout", async () => {
  const exec = dying(2, 1, "hang");
  const got: PlacementResult[] = [];
  exec.place(randomRound(3), (r) => got.push(r));
  await within("close", exec.close(200));
  assert.equal(got.length, 1, "the round was answered before close returned");
  assertNothingPlaced(got[0], /^placement workers closed with rounds unanswered after 200 ms$/, "seed 3");
});
