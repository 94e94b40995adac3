import assert from "node:assert/strict";
import type { Constraint } from "../model/config_types.ts";
import { randomInt, seededPrng } from "../ports/prng.ts";
import {
  describeConstraint,
  evaluate,
  hostLimitExceeded,
  isNonExclusive,
  labelsOf,
  perHostLimit,
  satisfies,
} from "./constraints.ts";
import { compile, Dictionary, MATCH, MISMATCH, NOT_APPLICABLE, run } from "./program.ts";
import type { RoundHosts } from "./round.ts";

const host = {
  hostname: "h1",
  attributes: { rack: "a", zone: "z1" },
  taskLabels: [{ key: "app", value: "web" }],
};
const hostLabel = (
  key: string,
  value: string,
  requirement = 1,
  condition: "EQUAL" | "LESS_THAN" | "GREATER_THAN" = "EQUAL",
): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "HOST", condition, label: { key, value }, requirement },
});
const taskLabel = (key: string, value: string, requirement: number): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "TASK", condition: "EQUAL", label: { key, value }, requirement },
});

Deno.test("host label constraints match attributes and the hostname", () => {
  assert.equal(evaluate(hostLabel("rack", "a"), host), "match");
  assert.equal(evaluate(hostLabel("rack", "b"), host), "mismatch");
  assert.equal(evaluate(hostLabel("hostname", "h1"), host), "match");
  assert.equal(evaluate(hostLabel("rack", "b", 1, "LESS_THAN"), host), "match");
});

Deno.test("task label constraints count co-located tasks (host-limit anti-affinity)", () => {
  assert.equal(evaluate(taskLabel("app", "web", 0), host), "mismatch");
  assert.equal(evaluate(taskLabel("app", "db", 0), host), "match");
});

Deno.test("AND fails on any mismatch; OR passes on any match", () => {
  const and: Constraint = {
    type: "AND_CONSTRAINT",
    andConstraint: { constraints: [hostLabel("rack", "a"), hostLabel("zone", "z2")] },
  };
  const or: Constraint = {
    type: "OR_CONSTRAINT",
    orConstraint: { constraints: [hostLabel("rack", "b"), hostLabel("zone", "z1")] },
  };
  assert.equal(evaluate(and, host), "mismatch");
  assert.equal(evaluate(or, host), "match");
  assert.ok(satisfies(undefined, host));
});

Deno.test("sub-constraints of a kind not evaluated are unknown: never a mismatch through them", () => {
  const only = new Set<"HOST" | "TASK">(["HOST"]);
  assert.equal(evaluate(taskLabel("app", "web", 0), host, only), "unknown");
  const and = (...constraints: Constraint[]): Constraint => ({
    type: "AND_CONSTRAINT",
    andConstraint: { constraints },
  });
  const or = (...constraints: Constraint[]): Constraint => ({
    type: "OR_CONSTRAINT",
    orConstraint: { constraints },
  });
  assert.equal(evaluate(and(taskLabel("app", "web", 0), hostLabel("rack", "a")), host, only), "unknown");
  assert.equal(evaluate(and(taskLabel("app", "web", 0), hostLabel("rack", "b")), host, only), "mismatch");
  // An OR whose HOST branch fails may still match through its TASK branch: only the engine can tell.
  assert.equal(evaluate(or(hostLabel("rack", "b"), taskLabel("app", "web", 1)), host, only), "unknown");
  assert.equal(evaluate(or(hostLabel("rack", "a"), taskLabel("app", "web", 0)), host, only), "match");
  assert.equal(evaluate(or(hostLabel("rack", "b"), hostLabel("zone", "z2")), host, only), "mismatch");
  // Every kind evaluated, the TASK branch decides.
  assert.equal(evaluate(or(hostLabel("rack", "b"), taskLabel("app", "web", 1)), host), "match");
  assert.equal(evaluate(or(hostLabel("rack", "b"), taskLabel("app", "web", 0)), host), "mismatch");
});

Deno.test("exclusive hosts: a constraint is non-exclusive unless a HOST label names peloton/exclusive", () => {
  assert.ok(isNonExclusive(undefined));
  assert.ok(isNonExclusive(hostLabel("rack", "a")));
  assert.ok(!isNonExclusive(hostLabel("peloton/exclusive", "ml")));
  const or: Constraint = {
    type: "OR_CONSTRAINT",
    orConstraint: { constraints: [hostLabel("rack", "a"), hostLabel("peloton/exclusive", "ml")] },
  };
  assert.ok(!isNonExclusive(or));
  assert.ok(isNonExclusive(taskLabel("peloton/exclusive", "ml", 0)), "TASK labels do not count");
});

Deno.test("the host limit of a top-level TASK label: reached counts reject, affinity never does", () => {
  const count = (n: number) => () => n;
  assert.ok(hostLimitExceeded(taskLabel("app", "web", 0), count(1)));
  assert.ok(!hostLimitExceeded(taskLabel("app", "web", 0), count(0)));
  const lt: Constraint = {
    type: "LABEL_CONSTRAINT",
    labelConstraint: {
      kind: "TASK",
      condition: "LESS_THAN",
      label: { key: "app", value: "web" },
      requirement: 2,
    },
  };
  assert.ok(hostLimitExceeded(lt, count(2)));
  assert.ok(!hostLimitExceeded(lt, count(1)));
  const gt: Constraint = {
    type: "LABEL_CONSTRAINT",
    labelConstraint: {
      kind: "TASK",
      condition: "GREATER_THAN",
      label: { key: "app", value: "web" },
      requirement: 0,
    },
  };
  assert.ok(!hostLimitExceeded(gt, count(0)));
});

Deno.test("descriptions read like the reasons reports count", () => {
  assert.equal(describeConstraint(hostLabel("host_pool", "batch")), "host_pool=batch");
  assert.equal(describeConstraint(hostLabel("rack", "a", 0)), "rack!=a");
  assert.equal(describeConstraint(taskLabel("app", "web", 0)), "tasks with app=web == 0");
  assert.equal(describeConstraint(hostLabel("rack", "a", 2, "GREATER_THAN")), "hosts with rack=a > 2");
  assert.deepEqual(
    labelsOf({
      type: "AND_CONSTRAINT",
      andConstraint: { constraints: [taskLabel("a", "1", 0), hostLabel("b", "2"), taskLabel("a", "1", 1)] },
    }, "TASK"),
    ["a=1"],
  );
});

Deno.test("compiled programs evaluate exactly like the constraint tree (random trees and hosts)", () => {
  const prng = seededPrng(5);
  const leaf = (): Constraint => {
    const kind = prng() < 0.5 ? "HOST" : "TASK";
    const key = ["rack", "zone", "hostname"][randomInt(prng, 0, kind === "HOST" ? 2 : 1)];
    const value = key === "hostname" ? `h${randomInt(prng, 0, 3)}` : `v${randomInt(prng, 0, 2)}`;
    const condition = (["LESS_THAN", "EQUAL", "GREATER_THAN"] as const)[randomInt(prng, 0, 2)];
    return {
      type: "LABEL_CONSTRAINT",
      labelConstraint: { kind, condition, label: { key, value }, requirement: randomInt(prng, 0, 2) },
    };
  };
  const tree = (depth: number): Constraint => {
    if (depth === 0 || prng() < 0.4) return leaf();
    const subs = Array.from({ length: randomInt(prng, 1, 3) }, () => tree(depth - 1));
    return prng() < 0.5
      ? { type: "AND_CONSTRAINT", andConstraint: { constraints: subs } }
      : { type: "OR_CONSTRAINT", orConstraint: { constraints: subs } };
  };
  const hosts = Array.from({ length: 4 }, (_, i) => ({
    hostname: `h${i}`,
    attributes: { rack: `v${i % 3}`, zone: `v${(i + 1) % 3}` },
    taskLabels: Array.from({ length: i }, () => ({ key: "rack", value: `v${randomInt(prng, 0, 2)}` })),
  }));
  for (let n = 0; n < 300; n++) {
    const c = tree(3);
    const dict = new Dictionary();
    hosts.forEach((h, i) => dict.hostIds.set(h.hostname, i));
    const program = compile(c, dict);
    const cols: RoundHosts = {
      ...emptyHosts(hosts.length),
      attrs: dict.attrKeys.map((k, col) =>
        Int32Array.from(hosts, (h) => {
          const v = (h.attributes as Record<string, string>)[k];
          return v === undefined ? -1 : dict.valueId(col, v);
        })
      ),
      labels: dict.labelKeys.map((k) =>
        Int32Array.from(hosts, (h) => h.taskLabels.filter((l) => `${l.key}=${l.value}` === k).length)
      ),
    };
    hosts.forEach((h, i) => {
      // Every kind is evaluated, so never "unknown" (-1 would fail the comparison).
      const want = { match: MATCH, mismatch: MISMATCH, "not-applicable": NOT_APPLICABLE, unknown: -1 }[
        evaluate(c, h)
      ];
      assert.equal(run(program, cols, i), want, `${JSON.stringify(c)} on ${h.hostname}`);
    });
  }
});

function emptyHosts(n: number): RoundHosts {
  const z = () => new Int32Array(n);
  return {
    count: n,
    ids: Int32Array.from({ length: n }, (_, i) => i),
    cpu: z(),
    mem: z(),
    disk: z(),
    gpu: z(),
    slack: z(),
    flags: new Uint8Array(n),
    portStart: new Int32Array(n + 1),
    portRanges: z(),
    portNext: z(),
    portFree: z(),
    portStatic: new Int32Array(0),
    attrs: [],
    labels: [],
  };
}

Deno.test("a host limit on the tasks' own label caps how many of them one host takes", () => {
  const own = [{ key: "app", value: "web" }];
  const limit = (n: number): Constraint => ({
    type: "LABEL_CONSTRAINT",
    labelConstraint: {
      kind: "TASK",
      condition: "LESS_THAN",
      label: { key: "app", value: "web" },
      requirement: n,
    },
  });
  assert.equal(perHostLimit(limit(1), own), 1);
  assert.equal(perHostLimit(limit(3), own), 3);
  // Under an AND, the least; not for a label the tasks do not carry, nor other conditions or an OR.
  const and: Constraint = {
    type: "AND_CONSTRAINT",
    andConstraint: { constraints: [hostLabel("rack", "a"), limit(2)] },
  };
  assert.equal(perHostLimit(and, own), 2);
  assert.equal(perHostLimit(limit(1), [{ key: "app", value: "db" }]), undefined);
  assert.equal(perHostLimit(taskLabel("app", "web", 1), own), undefined);
  assert.equal(
    perHostLimit({ type: "OR_CONSTRAINT", orConstraint: { constraints: [limit(1)] } }, own),
    undefined,
  );
  assert.equal(perHostLimit(undefined, own), undefined);
});
