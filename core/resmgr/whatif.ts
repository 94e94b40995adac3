/** Offline what-if for capacity planners: a YAML pool tree in, Peloton's entitlements for every pool out. */

import { z } from "zod";
import { isMap, isScalar, isSeq, LineCounter, type Node } from "yaml";
import { parseDocumentBounded } from "../model/yaml_load.ts";
import {
  calculateEntitlement,
  type EntitlementPool,
  type PoolResourceConfig,
  type ReservationType,
} from "./entitlement.ts";
import { RESOURCE_KINDS, type ResourceKind, type Scalar, scalar } from "./scalar.ts";

export interface WhatIfResourceConfig extends PoolResourceConfig {
  kind: ResourceKind;
}

export interface WhatIfPool {
  name: string;
  resources: WhatIfResourceConfig[];
  slackLimit?: { maxPercent: number };
  children: WhatIfPool[];
  demand: Scalar;
  slackDemand: Scalar;
  allocation: { nonSlack: Scalar; slack: Scalar };
}

export interface WhatIfFile {
  capacity: Scalar;
  slackCapacity: Scalar;
  /** Children of the root pool "/". */
  pools: WhatIfPool[];
}

/** A problem that stops the file from being used; `path` is the field, e.g. `pools[0].resources[1].kind`. */
export interface WhatIfError {
  file: string;
  line?: number;
  column?: number;
  path: string;
  message: string;
}

export type WhatIfWarningRule =
  | "reservation-above-limit"
  | "limit-above-parent-limit"
  | "children-reservations-above-parent"
  | "limit-above-capacity"
  | "reservations-above-capacity"
  | "input-on-non-leaf-ignored"
  | "non-cpu-slack-capacity-ignored"
  | "share-loop-stalled";

/**
 * Something the respool API would refuse, or the cluster could not honour; the numbers are still what
 * Peloton's calculator computes.
 */
export interface WhatIfWarning {
  rule: WhatIfWarningRule;
  /** Pool path, e.g. "/a/b"; "/" for the cluster. */
  pool: string;
  message: string;
  file?: string;
  line?: number;
}

export type WhatIfParse =
  | { ok: true; value: WhatIfFile; warnings: WhatIfWarning[] }
  | { ok: false; errors: WhatIfError[] };

export interface PoolEntitlements {
  entitlement: Scalar;
  nonSlackEntitlement: Scalar;
  slackEntitlement: Scalar;
}

export interface WhatIfResult {
  /** Keyed by path in tree order: "/", "/a", "/a/b", "/b". */
  pools: Record<string, PoolEntitlements>;
  /** Only what the calculation found; rule warnings come from `parseWhatIf`. */
  warnings: WhatIfWarning[];
}

const amount = z.number().nonnegative();
const ScalarSchema = z.strictObject({
  cpu: amount.optional(),
  memory: amount.optional(),
  disk: amount.optional(),
  gpu: amount.optional(),
});
const ResourceSchema = z.strictObject({
  kind: z.enum(RESOURCE_KINDS as [ResourceKind, ...ResourceKind[]]),
  reservation: amount,
  limit: amount,
  share: amount,
  // Peloton's respool files write the enum as a number: ELASTIC = 1, STATIC = 2.
  type: z.union([z.enum(["ELASTIC", "STATIC"]), z.literal(1), z.literal(2)]).optional(),
});
const PoolSchema = z.strictObject({
  name: z.string().min(1),
  resources: z.array(ResourceSchema).optional(),
  slackLimit: z.strictObject({ maxPercent: amount }).optional(),
  get children(): z.ZodOptional<z.ZodArray<typeof PoolSchema>> {
    return z.array(PoolSchema).optional();
  },
  demand: ScalarSchema.optional(),
  slackDemand: ScalarSchema.optional(),
  allocation: z.strictObject({ nonSlack: ScalarSchema.optional(), slack: ScalarSchema.optional() })
    .optional(),
  // Fields of a Peloton respool config that do not affect entitlement, so its files can be pasted in.
  owningTeam: z.unknown().optional(),
  ldapGroups: z.unknown().optional(),
  description: z.unknown().optional(),
  policy: z.unknown().optional(),
  controllerLimit: z.unknown().optional(),
  changeLog: z.unknown().optional(),
});
const FileSchema = z.strictObject({
  capacity: ScalarSchema,
  slackCapacity: ScalarSchema.optional(),
  pools: z.array(PoolSchema),
});
type RawPool = z.infer<typeof PoolSchema>;
type RawScalar = z.infer<typeof ScalarSchema>;

/**
 * Peloton's Go CLI reads lower-cased keys (`slacklimit`, `maxpercent`) and its Python tests camelCase, so
 * keys match case-insensitively; errors name the camelCase form.
 */
const KEYS = "capacity slackCapacity pools name resources kind reservation limit share type slackLimit " +
  "maxPercent children demand slackDemand allocation nonSlack slack cpu memory disk gpu " +
  "owningTeam ldapGroups description policy controllerLimit changeLog";
const CANONICAL_KEYS = new Map(KEYS.split(" ").map((k) => [k.toLowerCase(), k]));

function canonicalKey(key: string): string {
  return CANONICAL_KEYS.get(key.toLowerCase()) ?? key;
}

/** Parses and validates a what-if file; `file` names it in messages. */
export function parseWhatIf(text: string, file: string): WhatIfParse {
  const lineCounter = new LineCounter();
  const doc = parseDocumentBounded(text, { lineCounter });
  const at = (path: PropertyKey[]) => positionOf(doc.contents as Node | null, lineCounter, path);
  const error = (path: PropertyKey[], message: string): WhatIfError => ({
    file,
    ...at(path),
    path: formatPath(path),
    message,
  });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.map((e) => {
        const pos = lineCounter.linePos(e.pos[0]);
        return { file, line: pos.line, column: pos.col, path: "", message: `invalid YAML: ${e.message}` };
      }),
    };
  }
  let plain: unknown;
  try {
    plain = doc.toJS();
  } catch (e) {
    // The yaml library refuses aliases that expand too far ("billion laughs") here, as an exception.
    return {
      ok: false,
      errors: [{ file, line: 1, column: 1, path: "", message: `invalid YAML: ${(e as Error).message}` }],
    };
  }
  const canonical: WhatIfError[] = [];
  const data = canonicalize(plain, [], (path, message) => canonical.push(error(path, message)));
  if (canonical.length > 0) return { ok: false, errors: canonical };
  const parsed = FileSchema.safeParse(data, { reportInput: true });
  if (!parsed.success) {
    return {
      ok: false,
      errors: parsed.error.issues.flatMap((i) => issueErrors(i, error)),
    };
  }
  const errors: WhatIfError[] = [];
  const warnings: WhatIfWarning[] = [];
  const warn = (rule: WhatIfWarningRule, pool: string, path: PropertyKey[], message: string) =>
    warnings.push({ rule, pool, message, file, line: at(path).line });
  const capacity = toScalar(parsed.data.capacity);
  const slackCapacity = toScalar(parsed.data.slackCapacity);
  if (slackCapacity.memory !== 0 || slackCapacity.disk !== 0 || slackCapacity.gpu !== 0) {
    const message = "only cpu is revocable in Peloton: slack memory, disk and gpu are ignored";
    warn("non-cpu-slack-capacity-ignored", "/", ["slackCapacity"], message);
  }
  const rootLimits = { reservation: capacity, limit: capacity, configured: new Set(RESOURCE_KINDS) };
  const pools = buildPools(parsed.data.pools, "", ["pools"], rootLimits, {
    error: (path, message) => errors.push(error(path, message)),
    warn,
  });
  if (errors.length > 0) return { ok: false, errors };
  warnings.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
  return { ok: true, value: { capacity, slackCapacity, pools }, warnings };
}

interface Sink {
  error(path: PropertyKey[], message: string): void;
  warn(rule: WhatIfWarningRule, pool: string, path: PropertyKey[], message: string): void;
}

interface ParentLimits {
  reservation: Scalar;
  limit: Scalar;
  configured: Set<ResourceKind>;
}

const REFUSED = "Peloton's respool API would refuse this pool";
/**
 * Top-level pools are checked against nothing: the API's root pool has no resources of its own (see
 * `RespoolTree`), so limits and reservations above the cluster's capacity are accepted.
 */
const ROOT_SETS_NO_LIMITS = "as the root pool sets no limits";

function buildPools(
  raws: RawPool[],
  parentPath: string,
  at: PropertyKey[],
  parent: ParentLimits,
  sink: Sink,
) {
  const names = new Map<string, number>();
  const reserved = scalar();
  const pools = raws.map((raw, i): WhatIfPool => {
    const here = [...at, i];
    const path = `${parentPath}/${raw.name}`;
    const name = JSON.stringify(raw.name);
    if (raw.name.includes("/")) sink.error([...here, "name"], `pool name ${name} must not contain "/"`);
    const twin = names.get(raw.name);
    if (twin !== undefined) {
      sink.error(
        [...here, "name"],
        `duplicate pool name ${name} under ${parentPath || "/"} (also [${twin}])`,
      );
    }
    names.set(raw.name, i);
    const own: ParentLimits = { reservation: scalar(), limit: scalar(), configured: new Set() };
    const resources = (raw.resources ?? []).map((r, j): WhatIfResourceConfig => {
      const where = [...here, "resources", j];
      if (own.configured.has(r.kind)) {
        sink.error([...where, "kind"], `resource kind ${r.kind} is configured twice`);
      }
      own.configured.add(r.kind);
      own.reservation[r.kind] = r.reservation;
      own.limit[r.kind] = r.limit;
      reserved[r.kind] += r.reservation;
      if (r.limit < r.reservation) {
        const message = `${r.kind} reservation ${r.reservation} exceeds its limit ${r.limit}; ${REFUSED}`;
        sink.warn("reservation-above-limit", path, where, message);
      }
      if (r.limit > parent.limit[r.kind] && parentPath === "") {
        const message = `${r.kind} limit ${r.limit} exceeds ${parent.limit[r.kind]}, the cluster capacity; ` +
          `the respool API accepts it, ${ROOT_SETS_NO_LIMITS}, but the pool can never run more than the cluster has`;
        sink.warn("limit-above-capacity", path, where, message);
      } else if (r.limit > parent.limit[r.kind]) {
        const unset = parent.configured.has(r.kind) ? "" : `, which does not configure ${r.kind}`;
        const message =
          `${r.kind} limit ${r.limit} exceeds ${parent.limit[r.kind]}, the limit of ${parentPath}${unset}; ` +
          REFUSED;
        sink.warn("limit-above-parent-limit", path, where, message);
      }
      const type: ReservationType = r.type === 2 || r.type === "STATIC" ? "STATIC" : "ELASTIC";
      return { kind: r.kind, reservation: r.reservation, limit: r.limit, share: r.share, type };
    });
    const children = buildPools(raw.children ?? [], path, [...here, "children"], own, sink);
    for (const key of ["demand", "slackDemand", "allocation"] as const) {
      if (children.length > 0 && raw[key] !== undefined) {
        const message = `${key} on a pool with children is ignored: Peloton sums it from the leaves`;
        sink.warn("input-on-non-leaf-ignored", path, [...here, key], message);
      }
    }
    return {
      name: raw.name,
      resources,
      ...(raw.slackLimit ? { slackLimit: { maxPercent: raw.slackLimit.maxPercent } } : {}),
      children,
      demand: toScalar(raw.demand),
      slackDemand: toScalar(raw.slackDemand),
      allocation: { nonSlack: toScalar(raw.allocation?.nonSlack), slack: toScalar(raw.allocation?.slack) },
    };
  });
  const pool = parentPath || "/";
  for (const kind of RESOURCE_KINDS) {
    if (reserved[kind] <= parent.reservation[kind]) continue;
    const cap = parent.reservation[kind];
    const over = `children of ${pool} reserve ${reserved[kind]} ${kind}, more than ${cap}`;
    if (parentPath === "") {
      // Peloton's calculator still hands each pool its reservation, so entitlements add up past the cluster.
      const message =
        `${over}, the cluster capacity; the respool API accepts them, ${ROOT_SETS_NO_LIMITS}, ` +
        `but the cluster cannot honour them all: entitlements can add up to more than it has, and work ` +
        `admitted past it waits for hosts`;
      sink.warn("reservations-above-capacity", pool, at, message);
    } else {
      const message =
        `${over}, the reservation of ${parentPath}; Peloton's respool API would refuse the last of them`;
      sink.warn("children-reservations-above-parent", pool, at, message);
    }
  }
  return pools;
}

function toScalar(raw: RawScalar | undefined): Scalar {
  return scalar(raw ?? {});
}

/** Runs one Peloton entitlement cycle over the file's tree, the root "/" being the cluster. */
export function runWhatIf(file: WhatIfFile): WhatIfResult {
  const toPool = (p: WhatIfPool, parentPath: string): EntitlementPool => {
    const id = `${parentPath}/${p.name}`;
    return {
      id,
      children: p.children.map((c) => toPool(c, id)),
      resources: Object.fromEntries(p.resources.map((r) => [r.kind, { ...r }])),
      slackLimitPercent: p.slackLimit?.maxPercent,
      demand: { ...p.demand },
      slackDemand: { ...p.slackDemand },
      allocation: { nonSlack: { ...p.allocation.nonSlack }, slack: { ...p.allocation.slack } },
    };
  };
  const root: EntitlementPool = {
    id: "/",
    children: file.pools.map((p) => toPool(p, "")),
    resources: {},
    demand: scalar(),
    slackDemand: scalar(),
    allocation: { nonSlack: scalar(), slack: scalar() },
  };
  const anomalies = calculateEntitlement(root, file.capacity, file.slackCapacity);
  const pools: Record<string, PoolEntitlements> = {};
  const collect = (p: EntitlementPool) => {
    pools[p.id] = {
      entitlement: p.entitlement!,
      nonSlackEntitlement: p.nonSlackEntitlement!,
      slackEntitlement: p.slackEntitlement!,
    };
    p.children.forEach(collect);
  };
  collect(root);
  const warnings = anomalies.map((a): WhatIfWarning => ({
    rule: a.kind,
    pool: a.parentId,
    message:
      `Peloton's calculator would loop forever sharing out ${a.revocable ? "revocable " : ""}${a.resource} ` +
      `among the children of ${a.parentId}: a child with unmet demand has a share too small to get any ` +
      `(share 0?). Shown: the result with that loop stopped and ${a.remaining} ${a.resource} left over`,
  }));
  return { pools, warnings };
}

/** `{"pools": {"/": {"entitlement": {...}, "nonSlackEntitlement": {...}, "slackEntitlement": {...}}, ...}}`. */
export function formatWhatIfJson(result: WhatIfResult): string {
  const ordered = (s: Scalar) => ({ cpu: s.cpu, memory: s.memory, disk: s.disk, gpu: s.gpu });
  const pools: Record<string, PoolEntitlements> = {};
  for (const [path, p] of Object.entries(result.pools)) {
    pools[path] = {
      entitlement: ordered(p.entitlement),
      nonSlackEntitlement: ordered(p.nonSlackEntitlement),
      slackEntitlement: ordered(p.slackEntitlement),
    };
  }
  return JSON.stringify({ pools }, null, 2) + "\n";
}

const TABLE_HEADER = [
  "POOL",
  "CPU",
  "MEMORY",
  "DISK",
  "GPU",
  "SLACK CPU",
  "SLACK MEMORY",
  "SLACK DISK",
  "SLACK GPU",
];

/**
 * How a table's cells show on the output: `show` makes a cell printable, `width` counts the columns it then
 * takes. The default counts UTF-16 units and shows cells as they are; a terminal passes its own (wide CJK
 * characters, combining marks, control characters).
 */
export interface CellText {
  show(cell: string): string;
  width(cell: string): number;
}

const PLAIN_TEXT: CellText = { show: (cell) => cell, width: (cell) => cell.length };

/** One row per pool: path, entitlement, then slack entitlement; numbers to two decimals, right-aligned. */
export function formatWhatIfTable(result: WhatIfResult, text: CellText = PLAIN_TEXT): string {
  const rows = Object.entries(result.pools).map(([path, p]) => [
    text.show(path),
    ...RESOURCE_KINDS.map((k) => p.entitlement[k].toFixed(2)),
    ...RESOURCE_KINDS.map((k) => p.slackEntitlement[k].toFixed(2)),
  ]);
  const all = [TABLE_HEADER, ...rows];
  const cellWidths = all.map((row) => row.map((cell) => text.width(cell)));
  const widths = TABLE_HEADER.map((_, c) => Math.max(...cellWidths.map((row) => row[c])));
  const line = (row: string[], r: number) =>
    row.map((cell, c) => {
      const pad = " ".repeat(widths[c] - cellWidths[r][c]);
      return c === 0 ? cell + pad : pad + cell;
    }).join("  ").trimEnd();
  return all.map(line).join("\n") + "\n";
}

/** "file:line:col: path: message" for errors, "file:line: warning: pool: message" for warnings. */
export function formatIssue(issue: WhatIfError | WhatIfWarning): string {
  if ("rule" in issue) {
    const where = issue.file ? `${issue.file}${issue.line ? `:${issue.line}` : ""}: ` : "";
    return `${where}warning: ${issue.pool}: ${issue.message}`;
  }
  const where = [issue.file, issue.line, issue.column].filter((x) => x !== undefined).join(":");
  return `${where}: ${issue.path ? `${issue.path}: ` : ""}${issue.message}`;
}

/** Lower-case keys become camelCase; two spellings of one key are an error rather than a silent pick. */
function canonicalize(
  value: unknown,
  path: PropertyKey[],
  error: (path: PropertyKey[], m: string) => void,
): unknown {
  if (Array.isArray(value)) return value.map((v, i) => canonicalize(v, [...path, i], error));
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const k = canonicalKey(key);
    if (k in out) error([...path, key], `${JSON.stringify(key)} is ${k} again, given twice`);
    out[k] = canonicalize(v, [...path, k], error);
  }
  return out;
}

/** Zod's issues in the words of this file format: the field, what was expected, what was found. */
function issueErrors(
  issue: z.core.$ZodIssue,
  error: (path: PropertyKey[], m: string) => WhatIfError,
): WhatIfError[] {
  const path = issue.path;
  const last = path[path.length - 1];
  const got = describe(issue.input);
  switch (issue.code) {
    case "invalid_type": {
      if (path.length === 0) {
        return [
          error(
            path,
            `expected a mapping with capacity and pools, got ${issue.input == null ? "an empty file" : got}`,
          ),
        ];
      }
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      // proto3 reads an absent number as 0; a share of 0 in particular is rarely what was meant.
      const zero = last === "reservation" || last === "limit" || last === "share"
        ? " (Peloton would read it as 0)"
        : "";
      if (issue.input === undefined) return [error(path, `missing; expected ${expected}${zero}`)];
      return [error(path, `expected ${expected}, got ${got}`)];
    }
    case "too_small":
      return [
        error(path, issue.origin === "string" ? "must not be empty" : `expected a number >= 0, got ${got}`),
      ];
    case "invalid_value":
      return [error(path, `expected one of ${issue.values.join(", ")}, got ${got}`)];
    case "invalid_union":
      return [error(path, last === "type" ? `expected ELASTIC, STATIC, 1 or 2, got ${got}` : issue.message)];
    case "unrecognized_keys":
      return issue.keys.map((key) =>
        SCALAR_FIELDS.has(String(last)) || (last === "nonSlack" || last === "slack")
          ? error(
            [...path, key],
            `unknown resource kind ${JSON.stringify(key)}; expected cpu, memory, disk or gpu`,
          )
          : error([...path, key], `unknown field ${JSON.stringify(key)}`)
      );
    default:
      return [error(path, issue.message)];
  }
}

const SCALAR_FIELDS = new Set(["capacity", "slackCapacity", "demand", "slackDemand"]);
const EXPECTED: Record<string, string> = {
  number: "a number",
  string: "a string",
  object: "a mapping",
  array: "a list",
};

function describe(value: unknown): string {
  if (value === null) return "nothing";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

function formatPath(path: PropertyKey[]): string {
  return path.map((p, i) => typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`).join(
    "",
  );
}

/** Where `path` is in the YAML source: the node itself, or the nearest enclosing node that exists. */
function positionOf(
  root: Node | null,
  lc: LineCounter,
  path: PropertyKey[],
): { line?: number; column?: number } {
  let node: unknown = root;
  let found: Node | null = root;
  for (const key of path) {
    if (isMap(node)) {
      const keyOf = (p: { key: unknown }) => isScalar(p.key) ? String(p.key.value) : undefined;
      const pair = node.items.find((p) => keyOf(p) === key) ??
        node.items.find((p) => canonicalKey(keyOf(p) ?? "") === key);
      if (!pair) break;
      node = pair.value;
      found = (pair.value ?? pair.key) as Node;
    } else if (isSeq(node) && typeof key === "number" && node.items[key]) {
      node = node.items[key];
      found = node as Node;
    } else {
      break;
    }
  }
  const offset = found?.range?.[0];
  if (offset === undefined) return {};
  const { line, col } = lc.linePos(offset);
  return { line, column: col };
}
