import assert from "node:assert/strict";
import type { Clock } from "../ports/clock.ts";
import { DeadlineQueue } from "./deadline_queue.ts";
import { type ActionTable, GoalStateEngine } from "./engine.ts";

/** A clock whose timers run when the test advances time. */
class StepClock implements Clock {
  t = 0;
  #timers: { at: number; id: number; fn: () => void }[] = [];
  #id = 0;
  now() {
    return this.t;
  }
  setTimer(ms: number, fn: () => void) {
    this.#timers.push({ at: this.t + ms, id: ++this.#id, fn });
    return this.#id;
  }
  cancelTimer(id: number) {
    this.#timers = this.#timers.filter((x) => x.id !== id);
  }
  advance(ms: number) {
    const end = this.t + ms;
    for (;;) {
      this.#timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.#timers[0];
      if (!next || next.at > end) break;
      this.#timers.shift();
      this.t = next.at;
      next.fn();
    }
    this.t = end;
  }
}

Deno.test("deadline queue: earliest first, ties in insertion order, re-enqueue keeps the earlier deadline", () => {
  const q = new DeadlineQueue<string>();
  q.enqueue("a", "a", 10);
  q.enqueue("b", "b", 5);
  q.enqueue("c", "c", 5);
  q.enqueue("a", "a", 20); // later: ignored
  q.enqueue("c", "c", 1); // earlier: moves up
  assert.equal(q.popDue(0), undefined);
  assert.deepEqual([q.popDue(100)!.id, q.popDue(100)!.id, q.popDue(100)!.id], ["c", "b", "a"]);
  q.enqueue("x", "x", 3);
  assert.ok(q.delete("x"));
  assert.equal(q.size, 0);
});

type State = "OFF" | "STARTING" | "ON";
type Goal = "ON" | "OFF";
interface Lamp {
  id: string;
  state: State;
  goal: Goal;
  flaky: number;
}
const TABLE: ActionTable<Goal, State, "start" | "finish" | "stop"> = {
  ON: { OFF: ["start"], STARTING: ["finish"] },
  OFF: { ON: ["stop"], STARTING: ["stop"] },
};

function engine(clock: StepClock, log: string[], workers = 10) {
  const e: GoalStateEngine<Lamp, "start" | "finish" | "stop"> = new GoalStateEngine(clock, {
    workers,
    failureRetryDelayMs: 100,
    maxRetryDelayMs: 250,
  }, {
    keyOf: (l) => l.id,
    actionsFor: (l) => TABLE[l.goal]?.[l.state] ?? [],
    actions: {
      start: (l, done) => {
        log.push(`${clock.t} start ${l.id}`);
        if (l.flaky-- > 0) return done(new Error("busy"));
        l.state = "STARTING";
        e.enqueue(l, clock.now() + 50);
        done();
      },
      finish: (l, done) => {
        log.push(`${clock.t} finish ${l.id}`);
        l.state = "ON";
        done();
      },
      stop: (l, done) => {
        log.push(`${clock.t} stop ${l.id}`);
        l.state = "OFF";
        done();
      },
    },
  });
  return e;
}

Deno.test("actions come from the (goal, state) row and run when the deadline passes", () => {
  const clock = new StepClock(), log: string[] = [];
  const e = engine(clock, log);
  const lamp: Lamp = { id: "l1", state: "OFF", goal: "ON", flaky: 0 };
  e.enqueue(lamp, 10);
  clock.advance(9);
  assert.deepEqual(log, []);
  clock.advance(100);
  assert.deepEqual(log, ["10 start l1", "60 finish l1"]);
  assert.equal(lamp.state, "ON");
  lamp.goal = "OFF";
  e.enqueue(lamp);
  clock.advance(1);
  assert.equal(lamp.state, "OFF");
});

Deno.test("failed actions are retried with a growing delay, capped", () => {
  const clock = new StepClock(), log: string[] = [];
  const e = engine(clock, log);
  e.enqueue({ id: "l1", state: "OFF", goal: "ON", flaky: 4 }, 0);
  clock.advance(2000);
  // Delays 100, 200, 250 (cap), 250; then success and the follow-up evaluation 50 ms later.
  assert.deepEqual(log, [
    "0 start l1",
    "100 start l1",
    "300 start l1",
    "550 start l1",
    "800 start l1",
    "850 finish l1",
  ]);
  assert.equal(e.failures, 4);
});

Deno.test("the worker limit bounds concurrent evaluations; the rest wait their turn", () => {
  const clock = new StepClock(), log: string[] = [];
  const pending: (() => void)[] = [];
  const e = new GoalStateEngine<Lamp, "slow">(clock, {
    workers: 2,
    failureRetryDelayMs: 1,
    maxRetryDelayMs: 1,
  }, {
    keyOf: (l) => l.id,
    actionsFor: () => ["slow"],
    actions: {
      slow: (l, done) => {
        log.push(l.id);
        pending.push(done);
      },
    },
  });
  for (const id of ["a", "b", "c", "d"]) e.enqueue({ id, state: "OFF", goal: "ON", flaky: 0 }, 0);
  clock.advance(1);
  assert.deepEqual(log, ["a", "b"]);
  pending.shift()!();
  clock.advance(1);
  assert.deepEqual(log, ["a", "b", "c"]);
  assert.ok(e.isScheduled("d"));
});

Deno.test("an entity enqueued while running is evaluated again afterwards, not concurrently", () => {
  const clock = new StepClock();
  let runs = 0, inFlight = 0, maxInFlight = 0;
  let finish: (() => void) | undefined;
  const lamp: Lamp = { id: "x", state: "OFF", goal: "ON", flaky: 0 };
  const e = new GoalStateEngine<Lamp, "act">(clock, {
    workers: 5,
    failureRetryDelayMs: 1,
    maxRetryDelayMs: 1,
  }, {
    keyOf: (l) => l.id,
    actionsFor: () => ["act"],
    actions: {
      act: (_l, done) => {
        runs++;
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        finish = () => {
          inFlight--;
          done();
        };
      },
    },
  });
  e.enqueue(lamp, 0);
  clock.advance(1);
  e.enqueue(lamp, 1);
  clock.advance(1);
  assert.equal(runs, 1);
  finish!();
  clock.advance(1);
  assert.equal(runs, 2);
  assert.equal(maxInFlight, 1);
});

Deno.test("a deleted entity is not evaluated; stop cancels the timer", () => {
  const clock = new StepClock(), log: string[] = [];
  const e = engine(clock, log);
  e.enqueue({ id: "gone", state: "OFF", goal: "ON", flaky: 0 }, 5);
  e.delete("gone");
  e.enqueue({ id: "later", state: "OFF", goal: "ON", flaky: 0 }, 5);
  e.stop();
  clock.advance(100);
  assert.deepEqual(log, []);
});
