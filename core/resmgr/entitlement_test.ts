/** Peloton's calculator_test.go ported case by case, plus the user guide's example, quirks and a property test. */

import assert from "node:assert/strict";
import {
  calculateEntitlement,
  type EntitlementPool,
  type PoolResourceConfig,
  type ReservationType,
} from "./entitlement.ts";
import {
  add,
  equal,
  lessThanOrEqual,
  min,
  RESOURCE_EPSILON,
  RESOURCE_KINDS,
  type ResourceKind,
  type Scalar,
  scalar,
  subtract,
} from "./scalar.ts";

type Resources = Partial<Record<ResourceKind, PoolResourceConfig>>;

interface PoolSpec {
  resources?: Resources;
  children?: EntitlementPool[];
  slackLimitPercent?: number;
  demand?: Partial<Scalar>;
  slackDemand?: Partial<Scalar>;
  nonSlack?: Partial<Scalar>;
  slack?: Partial<Scalar>;
}

function makePool(id: string, spec: PoolSpec = {}): EntitlementPool {
  return {
    id,
    children: spec.children ?? [],
    resources: spec.resources ?? {},
    slackLimitPercent: spec.slackLimitPercent,
    demand: scalar(spec.demand),
    slackDemand: scalar(spec.slackDemand),
    allocation: { nonSlack: scalar(spec.nonSlack), slack: scalar(spec.slack) },
  };
}

function cfg(
  reservation: number,
  limit: number,
  share = 1,
  type: ReservationType = "ELASTIC",
): PoolResourceConfig {
  return { reservation, limit, share, type };
}

/** calculator_test.go `getResourceConfig` / `getStaticResourceConfig`. */
function goResourceConfig(type: ReservationType = "ELASTIC"): Resources {
  return {
    cpu: cfg(10, 1000, 1, type),
    memory: cfg(100, 1000, 1, type),
    disk: cfg(1000, 1000, 1, type),
    gpu: cfg(1, 4, 1, type),
  };
}

/** calculator_test.go `getResPools` (and `getStaticResPools` when respool11/12 are STATIC). */
function goTree(staticChildrenOf1 = false): Map<string, EntitlementPool> {
  const leafType = staticChildrenOf1 ? "STATIC" : "ELASTIC";
  const p = (id: string, children: EntitlementPool[] = [], type: ReservationType = "ELASTIC") =>
    makePool(id, { resources: goResourceConfig(type), children });
  const r11 = p("respool11", [], leafType), r12 = p("respool12", [], leafType);
  const r21 = p("respool21"), r22 = p("respool22");
  const r1 = p("respool1", [r11, r12]), r2 = p("respool2", [r21, r22]), r3 = p("respool3");
  const root = p("root", [r1, r2, r3]);
  return new Map([root, r1, r2, r3, r11, r12, r21, r22].map((x) => [x.id, x]));
}

/** `createClusterCapacity` and `createSlackClusterCapacity`. */
const GO_CAPACITY = scalar({ cpu: 100, gpu: 0, memory: 1000, disk: 6000 });
const GO_SLACK_CAPACITY = scalar({ cpu: 80 });

function run(tree: Map<string, EntitlementPool>, capacity = GO_CAPACITY, slack = GO_SLACK_CAPACITY) {
  const anomalies = calculateEntitlement(tree.get("root")!, capacity, slack);
  assert.deepEqual(anomalies, []);
}

/** `tasktestutil.ValidateResources`: Go compares int64(value), i.e. truncated. */
function assertTruncated(actual: Scalar | undefined, expected: Scalar, what: string): void {
  assert.ok(actual, `${what}: not set`);
  for (const kind of RESOURCE_KINDS) {
    assert.equal(Math.trunc(actual[kind]), expected[kind], `${what} ${kind}: ${actual[kind]}`);
  }
}

function ent(cpu: number, gpu: number, memory: number, disk: number): Scalar {
  return { cpu, memory, disk, gpu };
}

Deno.test("TestEntitlement: demand added in three rounds, leaves and parents", () => {
  const tree = goTree();
  const get = (id: string) => tree.get(id)!;
  const demand = scalar({ cpu: 20, memory: 200, disk: 2000, gpu: 0 });
  get("respool11").demand = add(get("respool11").demand, demand);
  run(tree);
  assertTruncated(get("respool11").entitlement, ent(33, 0, 333, 1000), "respool11");
  assertTruncated(get("respool12").entitlement, ent(13, 0, 133, 0), "respool12");

  get("respool21").demand = add(get("respool21").demand, demand);
  run(tree);
  assertTruncated(get("respool11").entitlement, ent(30, 0, 300, 1000), "respool11");
  assertTruncated(get("respool12").entitlement, ent(10, 0, 100, 0), "respool12");
  assertTruncated(get("respool21").entitlement, ent(30, 0, 300, 1000), "respool21");

  get("respool22").demand = add(get("respool22").demand, demand);
  run(tree);
  assertTruncated(get("respool11").entitlement, ent(26, 0, 266, 1000), "respool11");
  assertTruncated(get("respool21").entitlement, ent(26, 0, 266, 1000), "respool21");
  assertTruncated(get("respool22").entitlement, ent(26, 0, 266, 1000), "respool22");
  assertTruncated(get("respool2").entitlement, ent(53, 0, 533, 1000), "respool2");
  assertTruncated(get("respool3").entitlement, ent(13, 0, 133, 1000), "respool3");
  assertTruncated(get("respool1").entitlement, ent(33, 0, 333, 1000), "respool1");
  assertTruncated(get("root").entitlement, ent(100, 0, 1000, 6000), "root");
});

Deno.test("TestEntitlementForSlackResources: slack limits and revocable cpu sharing", () => {
  const tree = goTree();
  const get = (id: string) => tree.get(id)!;
  get("respool11").slackDemand = scalar({ cpu: 20, memory: 200, disk: 2000, gpu: 0 });
  get("respool21").slackDemand = scalar({ cpu: 20, memory: 10, disk: 50, gpu: 0 });
  get("respool21").allocation.slack = scalar({ cpu: 5, memory: 5, disk: 25, gpu: 0 });
  const r3Demand = scalar({ cpu: 20, memory: 10, disk: 100, gpu: 0 });
  get("respool3").slackDemand = r3Demand;
  run(tree);

  const slack = (id: string) => get(id).slackEntitlement!;
  // Capped at the default slack limit, 20% of the reservation.
  assert.equal(slack("respool11").memory, 100 * 0.20);
  assert.equal(slack("respool11").disk, 1000 * 0.20);
  // Capped at slack demand + allocation, below the slack limit.
  assert.equal(slack("respool21").memory, 15);
  assert.equal(slack("respool21").disk, 75);
  assert.equal(slack("respool3").memory, r3Demand.memory);
  assert.equal(slack("respool3").disk, r3Demand.disk);
  // 80 revocable cpus.
  assert.equal(slack("respool11").cpu, 22.5);
  assert.equal(slack("respool12").cpu, 2.5);
  assert.equal(slack("respool21").cpu, 27.5);
  assert.equal(slack("respool22").cpu, 2.5);
  assert.equal(slack("respool3").cpu, 25);

  // Demand above the cluster's revocable cpus takes back what was unclaimed.
  get("respool12").slackDemand = add(get("respool12").slackDemand, scalar({ cpu: 30, memory: 20, disk: 20 }));
  run(tree);
  assert.equal(Math.trunc(slack("respool11").cpu), 17);
  assert.equal(Math.trunc(slack("respool12").cpu), 17);
  assert.equal(Math.round(slack("respool21").cpu), 25);
  assert.equal(slack("respool22").cpu, 0);
  assert.equal(slack("respool3").cpu, 20);
});

Deno.test("TestZeroSlackEntitlement: no revocable demand or allocation gives no slack mem/gpu/disk", () => {
  const tree = goTree();
  const r11 = tree.get("respool11")!;
  r11.allocation.nonSlack = scalar({ cpu: 100, memory: 200, disk: 200, gpu: 0 });
  r11.demand = scalar({ cpu: 10, memory: 100, disk: 100 });
  run(tree);
  assert.equal(r11.slackEntitlement!.memory, 0);
  assert.equal(r11.slackEntitlement!.gpu, 0);
  assert.equal(r11.slackEntitlement!.disk, 0);
});

Deno.test("TestSlackEntitlementReduces: high non-slack demand shrinks the slack entitlement", () => {
  const tree = goTree();
  const r11 = tree.get("respool11")!;
  r11.allocation.nonSlack = scalar({ cpu: 50, memory: 100, disk: 100, gpu: 0 });
  r11.allocation.slack = scalar({ cpu: 50, memory: 100, disk: 100, gpu: 0 });
  // Go also sets entitlement 100/1000/1000/4, non-slack 200/980/900/4 and slack 80/20/100/0 first; the
  // cycle overwrites all three, so they are not inputs.
  r11.demand = scalar({ cpu: 60, memory: 890, disk: 100, gpu: 0 });
  run(tree);
  assert.equal(r11.slackEntitlement!.memory, 10);
  assert.equal(r11.slackEntitlement!.disk, 100);
  assert.equal(r11.entitlement!.memory - r11.slackEntitlement!.memory, 990);
  assert.equal(r11.nonSlackEntitlement!.memory, 990);
});

Deno.test("TestUpdateCapacity: the root's reservation and limit follow the cluster capacity", () => {
  const tree = goTree();
  const root = tree.get("root")!;
  assert.equal(root.resources.cpu!.reservation, 10);
  assert.equal(root.resources.gpu!.reservation, 1);
  run(tree, GO_CAPACITY, scalar());
  const expectRoot = (cpu: number, gpu: number, memory: number, disk: number) => {
    for (const [kind, v] of Object.entries({ cpu, gpu, memory, disk }) as [ResourceKind, number][]) {
      assert.equal(root.resources[kind]!.reservation, v, `${kind} reservation`);
      assert.equal(root.resources[kind]!.limit, v, `${kind} limit`);
    }
  };
  expectRoot(100, 0, 1000, 6000);
  run(tree, scalar({ cpu: 100, gpu: 10, memory: 1000, disk: 6000 }), scalar());
  expectRoot(100, 10, 1000, 6000);
  assert.deepEqual(root.entitlement, scalar({ cpu: 100, gpu: 10, memory: 1000, disk: 6000 }));
});

Deno.test("TestEntitlementWithMoreDemand: every leaf wants more than the cluster has", () => {
  const tree = goTree();
  for (const id of ["respool11", "respool12", "respool21", "respool22", "respool3"]) {
    tree.get(id)!.demand = scalar({ cpu: 40, memory: 400, disk: 4000, gpu: 0 });
  }
  run(tree);
  const e = (id: string) => tree.get(id)!.entitlement;
  assertTruncated(e("root"), ent(100, 0, 1000, 6000), "root");
  for (const id of ["respool1", "respool2", "respool3"]) assertTruncated(e(id), ent(33, 0, 333, 1000), id);
  for (const id of ["respool11", "respool12", "respool21", "respool22"]) {
    assertTruncated(e(id), ent(16, 0, 166, 1000), id);
  }
});

Deno.test("TestStaticRespoolsEntitlement: STATIC pools get their reservation, GPUs included", () => {
  const tree = goTree(true);
  const r11s = tree.get("respool11")!;
  r11s.demand = scalar({ cpu: 20, memory: 200, disk: 2000, gpu: 0 });
  r11s.slackDemand = scalar({ cpu: 20, memory: 10, disk: 100, gpu: 0 });
  run(tree);
  // GPU 1 although the cluster has none: phase 1 never checks what the parent can afford.
  assertTruncated(r11s.entitlement, ent(28, 1, 291, 1000), "respool11s");
  // 20 revocable cpus for the demand, 10 more from the unclaimed rest.
  assertTruncated(r11s.slackEntitlement, ent(30, 0, 10, 0), "respool11s slack");
});

Deno.test("scalar: Subtract clamps at 0 and drops leftovers below 0.0009; LessThanOrEqual allows the epsilon", () => {
  const a = scalar({ cpu: 1, memory: 10, disk: 5, gpu: 1 });
  assert.deepEqual(subtract(a, scalar({ cpu: 2, memory: 9.9995, disk: 4.999, gpu: 0.5 })), {
    cpu: 0,
    memory: 0,
    disk: 5 - 4.999,
    gpu: 0.5,
  });
  assert.ok(lessThanOrEqual(scalar({ cpu: 1.0008 }), scalar({ cpu: 1 })));
  assert.ok(!lessThanOrEqual(scalar({ cpu: 1.001 }), scalar({ cpu: 1 })));
  assert.deepEqual(min(a, scalar({ cpu: 3, memory: 2 })), scalar({ cpu: 1, memory: 2 }));
  assert.ok(!equal(scalar({ cpu: 0.1 + 0.2 }), scalar({ cpu: 0.3 })), "Equal has no epsilon");
});

/** docs/user-guide.md, "Resource Sharing between Resource Pools", with cpu only configured. */
function guideTree(demands: number[]): EntitlementPool {
  const children = demands.map((cpu, i) =>
    makePool(`/rp${i + 1}`, { resources: { cpu: cfg(20, 100) }, demand: { cpu } })
  );
  return makePool("/", { children });
}

Deno.test("user guide: demands 10/80/80 on 100 cpus give 10/45/45", () => {
  const root = guideTree([10, 80, 80]);
  assert.deepEqual(calculateEntitlement(root, scalar({ cpu: 100 }), scalar()), []);
  assert.deepEqual(root.children.map((c) => c.entitlement!.cpu), [10, 45, 45]);
});

Deno.test("user guide: demands 50/80/80 give 33.33 each, the last pass capped by what is left", () => {
  const root = guideTree([50, 80, 80]);
  calculateEntitlement(root, scalar({ cpu: 100 }), scalar());
  // Phase 1 gives 20 each; 40/3 each from the 40 left, and the last child gets what subtraction left over.
  assert.deepEqual(root.children.map((c) => c.entitlement!.cpu), [
    33.333333333333336,
    33.333333333333336,
    33.33333333333333,
  ]);
  for (const c of root.children) assert.ok(Math.abs(c.entitlement!.cpu - 33.33) < 0.01);
  // Unconfigured kinds are read as limit 0, so memory stays with the root.
  assert.equal(root.children[0].entitlement!.memory, 0);
});

Deno.test("ours: pools of share 0 that want more get none of the free capacity (Peloton's 0/0 gave one all)", () => {
  // The only pool wanting more than its reservation has share 0: Peloton's share loop divides by a total
  // share of 0, and NaN hands it all 70 free cpus. A share of 0 claims none of them.
  const zero = makePool("/zero", { resources: { cpu: cfg(10, 100, 0) }, demand: { cpu: 60 } });
  const idle = makePool("/idle", { resources: { cpu: cfg(20, 100) } });
  const root = makePool("/", { children: [zero, idle] });
  calculateEntitlement(root, scalar({ cpu: 100 }), scalar());
  assert.equal(zero.entitlement!.cpu, 10, "its reservation only");
  assert.equal(idle.entitlement!.cpu, 90, "what no demand claims, by share");
  // Beside a pool of share 1 that wants more, the free cpus go to that one: its demand, then what no demand
  // claims (phase 3, by share, up to its limit).
  const one = makePool("/one", { resources: { cpu: cfg(10, 100) }, demand: { cpu: 60 } });
  const zero2 = makePool("/zero", { resources: { cpu: cfg(10, 100, 0) }, demand: { cpu: 60 } });
  calculateEntitlement(makePool("/", { children: [zero2, one] }), scalar({ cpu: 100 }), scalar());
  assert.deepEqual([zero2.entitlement!.cpu, one.entitlement!.cpu], [10, 90]);
});

Deno.test("STATIC pool without demand keeps its reservation; ELASTIC lends it out", () => {
  const staticPool = makePool("/s", { resources: { cpu: cfg(30, 100, 1, "STATIC") } });
  const elastic = makePool("/e", { resources: { cpu: cfg(30, 100) } });
  const busy = makePool("/b", { resources: { cpu: cfg(30, 100) }, demand: { cpu: 200 } });
  calculateEntitlement(
    makePool("/", { children: [staticPool, elastic, busy] }),
    scalar({ cpu: 100 }),
    scalar(),
  );
  // 100 - 30 (STATIC) - 30 (busy's reservation) = 40 free, all of it to the only pool with demand.
  assert.equal(staticPool.entitlement!.cpu, 30);
  assert.equal(elastic.entitlement!.cpu, 0);
  assert.equal(busy.entitlement!.cpu, 70);
});

Deno.test("slack limit percent caps the regular resources revocable tasks may use", () => {
  const make = (slackLimitPercent?: number) =>
    makePool("/a", {
      resources: { cpu: cfg(10, 100), memory: cfg(1000, 1000) },
      slackLimitPercent,
      slackDemand: { cpu: 5, memory: 900 },
    });
  const byDefault = make(), half = make(50);
  calculateEntitlement(
    makePool("/", { children: [byDefault] }),
    scalar({ cpu: 100, memory: 1000 }),
    scalar(),
  );
  calculateEntitlement(makePool("/", { children: [half] }), scalar({ cpu: 100, memory: 1000 }), scalar());
  assert.equal(byDefault.slackEntitlement!.memory, 200);
  assert.equal(byDefault.nonSlackEntitlement!.memory, 800);
  assert.equal(half.slackEntitlement!.memory, 500);
  assert.equal(half.nonSlackEntitlement!.memory, 500);
  // No revocable cpus in the cluster: slack cpu entitlement is what revocable tasks hold, i.e. none.
  assert.equal(half.slackEntitlement!.cpu, 0);
});

Deno.test("quirk: phase 2 keeps the initial total share, so the loop halves its way down and leaves a crumb", () => {
  const small = makePool("/small", { resources: { cpu: cfg(0, 100) }, demand: { cpu: 5 } });
  const big = makePool("/big", { resources: { cpu: cfg(0, 100) }, demand: { cpu: 100 } });
  calculateEntitlement(makePool("/", { children: [small, big] }), scalar({ cpu: 60 }), scalar());
  // Pass 1: 30 each, small capped at 5. Each later pass gives big half of what is free (share 1 of 2),
  // until less than the epsilon is left; too little for phase 3 too, so it is given to nobody.
  assert.equal(small.entitlement!.cpu, 5);
  assert.equal(big.entitlement!.cpu, 54.999237060546875);
  assert.ok(60 - small.entitlement!.cpu - big.entitlement!.cpu < RESOURCE_EPSILON);
});

Deno.test("quirk: phase 3 caps at limit and the excess is not redistributed", () => {
  const capped = makePool("/capped", { resources: { cpu: cfg(0, 10) } });
  const open = makePool("/open", { resources: { cpu: cfg(0, 100) } });
  const root = makePool("/", { children: [capped, open] });
  calculateEntitlement(root, scalar({ cpu: 100 }), scalar());
  assert.equal(capped.entitlement!.cpu, 10);
  assert.equal(open.entitlement!.cpu, 50);
});

Deno.test("quirk: phase 1 hands out reservations the parent does not have", () => {
  const a = makePool("/p/a", { resources: { cpu: cfg(60, 100) }, demand: { cpu: 100 } });
  const b = makePool("/p/b", { resources: { cpu: cfg(60, 100) }, demand: { cpu: 100 } });
  const parent = makePool("/p", { resources: { cpu: cfg(100, 100) }, children: [a, b] });
  calculateEntitlement(makePool("/", { children: [parent] }), scalar({ cpu: 100 }), scalar());
  assert.equal(parent.entitlement!.cpu, 100);
  assert.equal(a.entitlement!.cpu, 60);
  assert.equal(b.entitlement!.cpu, 60);
});

Deno.test("non-leaf demand and allocation are the sums of their leaves", () => {
  const a = makePool("/p/a", { demand: { cpu: 1.5 }, slackDemand: { cpu: 2 }, nonSlack: { memory: 3 } });
  const b = makePool("/p/b", { demand: { cpu: 2.5 }, slack: { disk: 4 } });
  const parent = makePool("/p", { children: [a, b], demand: { cpu: 999 } });
  calculateEntitlement(makePool("/", { children: [parent] }), scalar({ cpu: 10 }), scalar());
  assert.deepEqual(parent.demand, scalar({ cpu: 4 }));
  assert.deepEqual(parent.slackDemand, scalar({ cpu: 2 }));
  assert.deepEqual(parent.allocation, { nonSlack: scalar({ memory: 3 }), slack: scalar({ disk: 4 }) });
});

Deno.test("a child with share 0 and unmet demand stalls Peloton's loop: reported, not hung", () => {
  const zero = makePool("/zero", { resources: { cpu: cfg(0, 100, 0) }, demand: { cpu: 50 } });
  const one = makePool("/one", { resources: { cpu: cfg(0, 100, 1) }, demand: { cpu: 10 } });
  const anomalies = calculateEntitlement(
    makePool("/", { children: [zero, one] }),
    scalar({ cpu: 100 }),
    scalar(),
  );
  assert.deepEqual(anomalies, [
    { kind: "share-loop-stalled", parentId: "/", resource: "cpu", revocable: false, remaining: 90 },
  ]);
  assert.equal(zero.entitlement!.cpu, 0);
  assert.equal(one.entitlement!.cpu, 100);
});

/** Numerical Recipes' LCG: deterministic, no Math.random. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/** A tree whose reservations Peloton's validator would accept, with STATIC only under STATIC (or root). */
function randomTree(seed: number): { root: EntitlementPool; capacity: Scalar; slack: Scalar } {
  const r = lcg(seed);
  const capacity = scalar({
    cpu: 50 + r() * 5000,
    memory: 1000 + r() * 1e6,
    disk: r() * 1e7,
    gpu: r() < 0.5 ? 0 : 64,
  });
  const grow = (
    id: string,
    res: Scalar,
    limit: Scalar,
    isStatic: Set<ResourceKind>,
    pct: number,
    depth: number,
  ) => {
    const count = depth < 4 && r() < 0.85 ? 1 + Math.floor(r() * 5) : 0;
    const children: EntitlementPool[] = [];
    for (let i = 0; i < count; i++) {
      const resources: Resources = {};
      const childRes = scalar(), childLimit = scalar(), childStatic = new Set<ResourceKind>();
      for (const kind of RESOURCE_KINDS) {
        childRes[kind] = res[kind] * r() / count;
        childLimit[kind] = childRes[kind] + r() * (limit[kind] - childRes[kind]);
        const type = isStatic.has(kind) && r() < 0.3 ? "STATIC" : "ELASTIC";
        if (type === "STATIC") childStatic.add(kind);
        resources[kind] = cfg(childRes[kind], childLimit[kind], 0.25 + r() * 4, type);
      }
      const childPct = pct * r();
      const child = grow(`${id}/${i}`, childRes, childLimit, childStatic, childPct, depth + 1);
      child.resources = resources;
      child.slackLimitPercent = childPct;
      if (child.children.length === 0) {
        const rand = (s: Scalar, f: number) => scalar({ cpu: s.cpu * f * r(), memory: s.memory * f * r() });
        child.demand = scalar({ ...rand(childLimit, 1.5), disk: r() < 0.5 ? 0 : childLimit.disk * r() });
        child.slackDemand = rand(childLimit, 0.5);
        child.allocation = { nonSlack: rand(childRes, 1), slack: rand(childRes, 0.3) };
      }
      children.push(child);
    }
    return makePool(id, { children });
  };
  const root = grow("", capacity, capacity, new Set(RESOURCE_KINDS), 100, 0);
  root.id = "/";
  return { root, capacity, slack: scalar({ cpu: r() * 1000 }) };
}

Deno.test("property: entitlement within limit, children within parent, non-slack within entitlement", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const { root, capacity, slack } = randomTree(seed);
    const anomalies = calculateEntitlement(root, capacity, slack);
    const where = `(rerun with seed ${seed})`;
    assert.deepEqual(anomalies, [], where);
    const check = (pool: EntitlementPool) => {
      const e = pool.entitlement!;
      for (const kind of RESOURCE_KINDS) {
        assert.ok(Number.isFinite(e[kind]) && e[kind] >= 0, `${pool.id} ${kind} = ${e[kind]} ${where}`);
        if (pool !== root) {
          const limit = pool.resources[kind]!.limit;
          assert.ok(
            e[kind] <= limit + RESOURCE_EPSILON,
            `${pool.id} ${kind} ${e[kind]} > limit ${limit} ${where}`,
          );
          const nonSlack = pool.nonSlackEntitlement![kind];
          assert.ok(nonSlack <= e[kind] + RESOURCE_EPSILON, `${pool.id} non-slack ${kind} ${where}`);
        }
        const sum = pool.children.reduce((s, c) => s + c.entitlement![kind], 0);
        assert.ok(
          sum <= e[kind] + RESOURCE_EPSILON,
          `${pool.id} children ${kind} ${sum} > ${e[kind]} ${where}`,
        );
      }
      pool.children.forEach(check);
    };
    check(root);
  }
});
