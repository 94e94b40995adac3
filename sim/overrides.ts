/** What-if edits of a scenario by path (`hosts.std.count=2000`), and targets on report fields (`queueDelaySeconds.p99<=60`). */
import { valueAt } from "../core/model/_key_normalize.ts";
import { issueText, type Scenario, validateScenario } from "./scenario.ts";
import { inputIssues, type LoadedScenario } from "./scenario_load.ts";
import { misplacedFields } from "./scenario_workload.ts";

/**
 * Sets one number in a scenario. `hosts.<class>.<field>` and `workloads.<name>.<field>` find the class
 * or workload by name (`workloads.etl.arrival.ratePerSec`, `hosts.m5.xlarge.count`: a name may hold dots,
 * and the longest name that leaves a field after it is the one meant); any other path walks the scenario's fields
 * (`settings.rpcLatencyMs`, `durationSec`). The edited scenario is validated again, as a scenario file
 * is: an error lists every problem, one a line, each naming the edit, the field and what was expected.
 */
export function applyOverride(scenario: Scenario, path: string, value: number): Scenario {
  const { copy } = withNumber(scenario, path, value);
  const res = validateScenario(copy);
  if (!res.ok) {
    throw new Error(
      res.errors.map((i) => `--vary ${path}=${value}: ${issueText(i, valueAt(copy, i.path).value)}`).join(
        "\n",
      ),
    );
  }
  return res.scenario;
}

/**
 * Checks that `path` names a number field of the scenario (or one it may set), whatever the value: the
 * errors `applyOverride` gives every value alike.
 */
export function checkOverridePath(scenario: Scenario, path: string): void {
  const { copy } = withNumber(scenario, path, 0);
  // A field the format does not have (a typo) is refused for every value alike: said once.
  const res = validateScenario(copy);
  const unknown = res.ok ? undefined : res.errors.find((i) => i.message.startsWith("unknown key"));
  if (unknown) throw new Error(`--vary ${path}: ${issueText(unknown, undefined)}`);
}

/**
 * Whether the field at `path` takes whole numbers only (a host count, instances, a priority), as the
 * scenario format types it, not as a range is written: a value half-way between two whole numbers is
 * validated, and the format's every whole-number check says "whole number" (`scenario_messages.ts`, and
 * the refinements of instances and maxUnavailableInstances). An issue on the field or on a field holding it
 * counts: a distribution's bound is checked by its union.
 */
export function isWholeNumberField(scenario: Scenario, path: string, near = 0): boolean {
  const { copy, at } = withNumber(scenario, path, Math.floor(near) + 0.5);
  const res = validateScenario(copy);
  if (res.ok) return false;
  return res.errors.some((i) =>
    /\bwhole number\b/.test(i.message) && i.path.length <= at.length &&
    i.path.every((k, n) => String(k) === String(at[n]))
  );
}

/** The host class or workload list `hosts` and `workloads` paths name entries of. */
const NAMED_LISTS = {
  hosts: { field: "hostClasses", what: "host class" },
  workloads: { field: "workloads", what: "workload" },
} as const;

/**
 * A copy of the scenario with the number at `path` set, not validated, and the field's path in it as
 * validation names it (`["hostClasses", 0, "count"]`).
 */
function withNumber(
  scenario: Scenario,
  path: string,
  value: number,
): { copy: Record<string, unknown>; at: (string | number)[] } {
  const copy = structuredClone(scenario) as unknown as Record<string, unknown>;
  const parts = path.split(".");
  let target: Record<string, unknown>;
  let rest: string[];
  let at: (string | number)[];
  const named = parts[0] === "hosts" || parts[0] === "workloads" ? NAMED_LISTS[parts[0]] : undefined;
  if (named) {
    const list = copy[named.field] as Record<string, unknown>[];
    const { index, fieldParts } = entryNamed(list, named.what, path, parts);
    const found = list[index];
    target = found;
    rest = fieldParts;
    at = [named.field, index];
    if (parts[0] === "workloads") {
      // A field the workload's jobs are not built from (a job file's, a trace's, or one its type has no use
      // for): every value would give the same report, and the search a flat curve.
      const probe = { jobFile: found.jobFile, trace: found.trace, type: found.type, [rest[0]]: value };
      const ignored = misplacedFields(probe).find((m) => m.path[0] === rest[0]);
      if (ignored) throw new Error(`--vary ${path}: ${ignored.message}`);
    }
  } else {
    target = copy;
    rest = parts;
    at = [];
  }
  for (const key of rest.slice(0, -1)) {
    const next = target[key];
    if (!next || typeof next !== "object") throw new Error(`--vary ${path}: no field "${key}"`);
    target = next as Record<string, unknown>;
    at.push(key);
  }
  const last = rest[rest.length - 1];
  if (typeof target[last] !== "number" && target[last] !== undefined) {
    throw new Error(`--vary ${path}: "${last}" is not a number (got ${JSON.stringify(target[last])})`);
  }
  target[last] = value;
  at.push(last);
  return { copy, at };
}

/**
 * The entry of `list` that `parts` (after `hosts.` or `workloads.`) name, and the field's parts after its
 * name. Names may hold dots (`m5.xlarge`, `spark.etl`): the longest name that leaves a field after it wins.
 */
function entryNamed(
  list: Record<string, unknown>[],
  what: string,
  path: string,
  parts: string[],
): { index: number; fieldParts: string[] } {
  const names = list.map((x) => String(x.name));
  // Longest first: of classes "a" and "a.b", hosts.a.b.count is a.b's count.
  for (let end = parts.length - 1; end >= 2; end--) {
    const index = names.indexOf(parts.slice(1, end).join("."));
    if (index >= 0) return { index, fieldParts: parts.slice(end) };
  }
  const whole = parts.slice(1).join(".");
  if (names.includes(whole)) throw new Error(`--vary ${path}: expected a field after "${parts[0]}.${whole}"`);
  if (parts.length < 3) {
    throw new Error(
      `--vary ${path}: expected ${parts[0]}.<${what}>.<field>, the ${what} one of ${names.join(", ")}`,
    );
  }
  const tried = Array.from({ length: parts.length - 2 }, (_, k) => `"${parts.slice(1, k + 2).join(".")}"`);
  throw new Error(`--vary ${path}: no ${what} ${tried.join(" or ")} (${names.join(", ")})`);
}

/**
 * A loaded scenario with one number set (`applyOverride`), checked also against the files it names, as
 * `loadScenarioFile` checks the scenario itself (a shorter run can leave a trace's window empty).
 */
export function variantScenario(loaded: LoadedScenario, path: string, value: number): Scenario {
  const scenario = applyOverride(loaded.scenario, path, value);
  const issues = inputIssues(scenario, loaded);
  if (issues.length) {
    throw new Error(
      issues.map((i) => `--vary ${path}=${value}: ${issueText(i, valueAt(scenario, i.path).value)}`).join(
        "\n",
      ),
    );
  }
  return scenario;
}

/** `LO..HI` (integers or decimals). */
export function parseRange(text: string): { lo: number; hi: number } {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*\.\.\s*(-?\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!m) throw new Error(`expected a range LO..HI, got "${text}"`);
  const lo = Number(m[1]), hi = Number(m[2]);
  if (!(lo < hi)) throw new Error(`expected LO < HI in "${text}"`);
  return { lo, hi };
}

export interface Target {
  path: string;
  op: "<=" | "<" | ">=" | ">" | "==";
  value: number;
  text: string;
}

export function parseTarget(text: string): Target {
  const m = /^\s*([A-Za-z_][\w.]*)\s*(<=|>=|==|<|>)\s*(-?\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!m) throw new Error(`expected a target like 'queueDelaySeconds.p99<=60', got "${text}"`);
  return { path: m[1], op: m[2] as Target["op"], value: Number(m[3]), text: `${m[1]}${m[2]}${m[3]}` };
}

/** The number at a dotted path of a report. */
export function reportValue(report: unknown, path: string): number {
  let cur: unknown = report;
  for (const key of path.split(".")) {
    if (!cur || typeof cur !== "object" || !(key in cur)) throw new Error(`the report has no field ${path}`);
    cur = (cur as Record<string, unknown>)[key];
  }
  if (typeof cur !== "number") throw new Error(`report field ${path} is not a number`);
  return cur;
}

export function meets(t: Target, x: number): boolean {
  switch (t.op) {
    case "<=":
      return x <= t.value;
    case "<":
      return x < t.value;
    case ">=":
      return x >= t.value;
    case ">":
      return x > t.value;
    case "==":
      return x === t.value;
  }
}
