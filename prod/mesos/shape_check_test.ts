/** Shape checker tests: the reference examples pass, and the documented JSON mistakes (§1.8) are caught. */
import assert from "node:assert/strict";
import { loadReferenceSchema, type Root } from "./shape_check.ts";

const schema = await loadReferenceSchema();
const TESTDATA = new URL("./testdata/", import.meta.url);
const SHARED = "/work/shared/mesos";

async function examples(): Promise<[string, Root, unknown][]> {
  const out: [string, Root, unknown][] = [];
  for (const sub of ["", "extra/"]) {
    for await (const e of Deno.readDir(new URL(sub, TESTDATA))) {
      if (!e.name.endsWith(".json")) continue;
      const name = e.name.replace(/^(doc|proto)-/, "");
      const root: Root = name.startsWith("call-") ? "Call" : name.startsWith("event-") ? "Event" : "Operator";
      out.push([sub + e.name, root, JSON.parse(await Deno.readTextFile(new URL(sub + e.name, TESTDATA)))]);
    }
  }
  return out;
}

Deno.test("shape check: every reference example passes the strict check", async () => {
  const all = await examples();
  assert.ok(all.length >= 30, `found ${all.length} examples`);
  for (const [name, root, value] of all) assert.deepEqual(schema.check(root, value), [], name);
  for (const key of ["ID", "Resource", "TaskInfo", "TaskStatus", "Offer", "InverseOffer", "FrameworkInfo"]) {
    assert.ok(schema.keys().includes(key), `schema knows ${key}`);
  }
});

Deno.test({
  name: "shape check: testdata copies hold the same JSON as the shared reference",
  ignore: !existsSync(SHARED),
  async fn() {
    for await (const e of Deno.readDir(SHARED)) {
      if (!e.name.endsWith(".json")) continue;
      const original = JSON.parse(await Deno.readTextFile(`${SHARED}/${e.name}`));
      const copy = JSON.parse(await Deno.readTextFile(new URL(e.name, TESTDATA)));
      assert.deepEqual(copy, original, e.name);
    }
  },
});

function existsSync(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("shape check: the documentation's wrong shapes are rejected", () => {
  const offer = {
    id: { value: "O1" },
    framework_id: { value: "F" },
    agent_id: { value: "S1" },
    hostname: "h",
    resources: [],
  };
  const cases: [string, Root, unknown, RegExp][] = [
    ["OFFERS as a bare array", "Event", { type: "OFFERS", offers: [offer] }, /Event\.offers: got array/],
    ["ERROR with a top-level message", "Event", { type: "ERROR", message: "x" }, /needs its "error"/],
    [
      "UPDATE with bytes",
      "Event",
      { type: "UPDATE", update: { status: { task_id: { value: "t" }, state: "TASK_RUNNING", bytes: "x" } } },
      /status\.bytes: no reference example/,
    ],
    [
      "REVIVE with role",
      "Call",
      { type: "REVIVE", framework_id: { value: "F" }, revive: { role: "x" } },
      /role/,
    ],
    ["REQUEST at top level", "Call", { type: "REQUEST", requests: [] }, /needs its "request"/],
    [
      "unknown task state",
      "Event",
      { type: "UPDATE", update: { status: { task_id: { value: "t" }, state: "TASK_DONE" } } },
      /"TASK_DONE", expected one of/,
    ],
    [
      "int64 as a string",
      "Call",
      {
        type: "KILL",
        framework_id: { value: "F" },
        kill: { task_id: { value: "t" }, kill_policy: { grace_period: { nanoseconds: "5" } } },
      },
      /nanoseconds: got string, expected number/,
    ],
    [
      "missing required ID value",
      "Call",
      { type: "KILL", framework_id: {}, kill: { task_id: { value: "t" } } },
      /framework_id: required field "value"/,
    ],
    ["unknown event type", "Event", { type: "PING" }, /"PING", expected one of/],
    ["a payload of another type", "Event", { type: "HEARTBEAT", error: { message: "x" } }, /does not belong/],
  ];
  for (const [what, root, value, pattern] of cases) {
    const problems = schema.check(root, value);
    assert.ok(problems.some((p) => pattern.test(p)), `${what}: ${JSON.stringify(problems)}`);
  }
});

Deno.test("shape check: lenient mode accepts extra fields but still checks known ones", () => {
  const event = {
    type: "OFFERS",
    offers: {
      offers: [{
        id: { value: "O1" },
        framework_id: { value: "F" },
        agent_id: { value: "S1" },
        hostname: "h",
        url: { scheme: "http" },
        resources: [{ name: "cpus", type: "SCALAR", scalar: { value: "1" } }],
      }],
    },
  };
  const problems = schema.check("Event", event, { strict: false });
  assert.equal(problems.length, 1, JSON.stringify(problems));
  assert.match(problems[0], /scalar\.value: got string/);
  assert.ok(schema.check("Event", event).some((p) => /url/.test(p)));
});
