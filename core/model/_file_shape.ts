/** Telling a file given as one kind of config that is plainly another, so it is refused as what it is. */
import type { ConfigIssue, ConfigKind } from "./config_issues.ts";
import type { SourceEntry, SourceNode } from "./yaml_load.ts";
import { canonKey } from "./_schema_kit.ts";

/** What a loader expects, as its messages name it. */
const EXPECTED: Partial<Record<ConfigKind, string>> = {
  job: "a v0 job config (defaultConfig, instanceCount, ...)",
  "stateless-spec": "a v1alpha JobSpec (defaultSpec, instanceCount, ...)",
};

const NAMES: Partial<Record<ConfigKind, string>> = {
  job: "a v0 job config",
  "stateless-spec": "a v1alpha JobSpec",
  respool: "a resource pool config",
};

/** The keys of a resource pool's `resources` entries (`RespoolResourceConfigSchema`). */
const POOL_RESOURCE_KEYS = new Set(["kind", "reservation", "limit", "share", "type"]);
const JOB_TYPES = new Set(["BATCH", "SERVICE", "DAEMON"]);

interface Shape {
  kind: ConfigKind;
  /** The entry that gives the kind away, where the message points. */
  entry: SourceEntry;
  evidence: string;
}

/**
 * The kind a file plainly is, from its top-level keys; only files with the mark of one kind and none of
 * another's, so a file of a kind with a stray key is still read (and its keys reported) as the kind asked.
 */
function shapeOf(root: SourceNode): Shape | undefined {
  if (root.kind !== "map") return undefined;
  const at = (key: string) => root.entries.find((e) => canonKey(e.key) === key);
  const spec = at("defaultspec"), config = at("defaultconfig"), type = at("type");
  if (spec && !config) return { kind: "stateless-spec", entry: spec, evidence: "defaultSpec" };
  if (spec) return undefined;
  if (config) return { kind: "job", entry: config, evidence: "defaultConfig" };
  const jobType = type && jobTypeOf(type.value);
  if (type && jobType) return { kind: "job", entry: type, evidence: `type: ${jobType}` };
  const resources = at("resources");
  if (resources && !at("instancecount") && isPoolResources(resources.value)) {
    return { kind: "respool", entry: resources, evidence: "resources of kind, reservation, limit and share" };
  }
  return undefined;
}

function jobTypeOf(node: SourceNode): string | undefined {
  if (node.kind !== "scalar" || typeof node.value !== "string") return undefined;
  const name = node.value.toUpperCase().replace(/^JOB_TYPE_/, "");
  return JOB_TYPES.has(name) ? node.value : undefined;
}

function isPoolResources(node: SourceNode): boolean {
  return node.kind === "seq" && node.items.length > 0 &&
    node.items.every((item) =>
      item.kind === "map" && item.entries.some((e) => canonKey(e.key) === "kind") &&
      item.entries.every((e) => POOL_RESOURCE_KEYS.has(canonKey(e.key)))
    );
}

/**
 * An error naming what the file is, when it is given as `expected` (a job config or a v1alpha spec) but is
 * plainly a config of another kind: read as the one asked it would fail on a missing command or entrypoint
 * and warn of every key, which says nothing of what is wrong. `fileKind` says what it is, for the caller
 * to name what takes it.
 */
export function otherKindIssue(
  expected: ConfigKind,
  root: SourceNode,
  file: string,
): ConfigIssue | undefined {
  const want = EXPECTED[expected];
  const shape = want === undefined ? undefined : shapeOf(root);
  if (!shape || shape.kind === expected) return undefined;
  const full = `${want}; this file is ${NAMES[shape.kind]} (it has ${shape.evidence})`;
  const { entry } = shape;
  const where = entry.line === undefined ? file : `${file}:${entry.line}`;
  return {
    file,
    line: entry.line,
    column: entry.column,
    path: entry.key,
    expected: full,
    message: `${where}: ${entry.key}: expected ${full}`,
    fileKind: shape.kind,
  };
}
