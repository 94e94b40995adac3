/** The resource-pool tree: paths, lookups and Peloton's tree validation rules. */
import type { RespoolConfig, RespoolResourceKind } from "../model/config_types.ts";
import type { RespoolRecord } from "../model/records.ts";
import { RespoolNode, ROOT_ID } from "./respool_node.ts";

export { RespoolNode, ROOT_ID, toScalar } from "./respool_node.ts";
export type { Allocation } from "./allocation.ts";
export { zeroAllocation } from "./allocation.ts";
export const RESOURCE_KINDS: readonly RespoolResourceKind[] = ["cpu", "memory", "disk", "gpu"];

export type TreeResult<T> = { ok: true; value: T } | {
  ok: false;
  code: "invalid-argument" | "not-found" | "already-exists" | "failed-precondition";
  message: string;
};

function fail<T>(
  code: "invalid-argument" | "not-found" | "already-exists" | "failed-precondition",
  message: string,
): TreeResult<T> {
  return { ok: false, code, message };
}

/** Adds the kinds a config leaves out with reservation 0, limit 0, share 1 (Peloton's defaults). */
export function withAllKinds(config: RespoolConfig): RespoolConfig {
  const resources = [...config.resources];
  for (const kind of RESOURCE_KINDS) {
    if (!resources.some((r) => r.kind === kind)) {
      resources.push({ kind, reservation: 0, limit: 0, share: 1, type: "ELASTIC" });
    }
  }
  return { ...config, resources };
}

/** Splits "/a/b" into ["a", "b"]; "/" is the root. */
export function splitPath(path: string): string[] | undefined {
  if (!path.startsWith("/")) return undefined;
  return path.split("/").filter((p) => p.length > 0);
}

export class RespoolTree {
  readonly root: RespoolNode;
  readonly #byId = new Map<string, RespoolNode>();
  readonly #byPath = new Map<string, RespoolNode>();
  /** Bumped on every change, so the resource manager knows to recalculate entitlement. */
  generation = 0;
  #preemptionEnabled = true;

  constructor() {
    this.root = new RespoolNode(ROOT_ID, "/", {
      name: "root",
      owningTeam: "",
      ldapGroups: [],
      description: "root resource pool",
      resources: [],
      policy: "PriorityFIFO",
    });
    this.#index(this.root);
  }

  /**
   * Whether the resource manager preempts (its `preemption.enabled`): every pool, and every pool made
   * later, sorts its queued work into what it can and can never admit by it.
   */
  get preemptionEnabled(): boolean {
    return this.#preemptionEnabled;
  }

  set preemptionEnabled(on: boolean) {
    this.#preemptionEnabled = on;
    for (const node of this.all()) node.preemptionEnabled = on;
  }

  get(id: string): RespoolNode | undefined {
    return this.#byId.get(id);
  }

  lookup(path: string): RespoolNode | undefined {
    const parts = splitPath(path);
    if (!parts) return undefined;
    return this.#byPath.get(parts.length ? "/" + parts.join("/") : "/");
  }

  /** Every pool, parents before children. */
  *all(): IterableIterator<RespoolNode> {
    const stack = [this.root];
    while (stack.length) {
      const n = stack.pop()!;
      yield n;
      for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
    }
  }

  *leaves(): IterableIterator<RespoolNode> {
    for (const n of this.all()) if (n.isLeaf && !n.isRoot) yield n;
  }

  /** Loads persisted pools (any order) at recovery. */
  load(records: RespoolRecord[]): void {
    const pending = [...records];
    let progress = true;
    while (pending.length && progress) {
      progress = false;
      for (let i = 0; i < pending.length; i++) {
        const rec = pending[i];
        const parent = this.#byId.get(rec.parentId);
        if (!parent) continue;
        const node = new RespoolNode(rec.id, rec.path, rec.config);
        node.parent = parent;
        parent.children.push(node);
        this.#index(node);
        pending.splice(i--, 1);
        progress = true;
      }
    }
    this.generation++;
  }

  /**
   * Peloton's create validation; on success the pool is in the tree. A parent that holds tasks, or that a
   * job being created claimed (`creating` says which), takes no child: it would stop being a leaf under them.
   */
  create(
    id: string,
    parentId: string,
    config: RespoolConfig,
    creating?: (poolId: string) => string | undefined,
  ): TreeResult<RespoolNode> {
    if (config.name === "root" && parentId === ROOT_ID) {
      return fail("invalid-argument", "cannot override root");
    }
    // The name is the last part of the pool's path: empty, it would take the parent's path (root's "/").
    if (config.name === "" || config.name.includes("/")) {
      return fail(
        "invalid-argument",
        `name: got ${JSON.stringify(config.name)}, expected a name without "/"`,
      );
    }
    const parent = this.#byId.get(parentId);
    if (!parent) return fail("not-found", `parent resource pool ${parentId} not found`);
    if (this.#byId.has(id)) return fail("already-exists", `resource pool ${id} already exists`);
    if (parent.children.some((c) => c.config.name === config.name)) {
      return fail("already-exists", `resource pool name ${config.name} already exists under ${parent.path}`);
    }
    const full = withAllKinds({ ...config, parent: parentId });
    const check = this.#checkAgainstParent(parent, full, undefined);
    if (check) return fail("invalid-argument", check);
    if (parent.busy()) {
      return fail("failed-precondition", `parent resource pool ${parent.path} is busy: it holds tasks`);
    }
    const claim = creating?.(parent.id);
    if (claim !== undefined) {
      return fail("failed-precondition", `parent resource pool ${parent.path} is busy: ${claim}`);
    }
    const path = parent.isRoot ? `/${config.name}` : `${parent.path}/${config.name}`;
    const node = new RespoolNode(id, path, full);
    node.parent = parent;
    parent.children.push(node);
    this.#index(node);
    this.generation++;
    return { ok: true, value: node };
  }

  /** Peloton's update validation: no parent or name change; limits and reservations still nest. */
  update(id: string, config: RespoolConfig, force = false): TreeResult<RespoolNode> {
    const node = this.#byId.get(id);
    if (!node) return fail("not-found", `resource pool ${id} not found`);
    if (node.isRoot) return fail("invalid-argument", "cannot override root");
    if (config.parent && config.parent !== node.parent!.id) {
      return fail("invalid-argument", `cannot change the parent of ${node.path}`);
    }
    if (config.name !== node.config.name) {
      return fail("invalid-argument", `cannot rename ${node.path} to ${config.name}`);
    }
    const full = withAllKinds({ ...config, parent: node.parent!.id });
    if (!force) {
      const check = this.#checkAgainstParent(node.parent!, full, node) ??
        this.#checkAgainstChildren(node, full);
      if (check) return fail("invalid-argument", check);
    }
    node.config = full;
    this.generation++;
    return { ok: true, value: node };
  }

  /**
   * Only idle leaf pools can be deleted: with no tasks, and no job being created in it (`creating` says
   * which, if a create claimed the pool).
   */
  delete(path: string, creating?: (poolId: string) => string | undefined): TreeResult<RespoolNode> {
    const node = this.lookup(path);
    if (!node) return fail("not-found", `resource pool ${path} not found`);
    if (!node.isLeaf) return fail("failed-precondition", `resource pool ${path} is not a leaf`);
    if (node.isRoot) return fail("invalid-argument", "cannot delete root");
    if (node.busy()) return fail("failed-precondition", `resource pool ${path} is busy`);
    const claim = creating?.(node.id);
    if (claim !== undefined) return fail("failed-precondition", `resource pool ${path} is busy: ${claim}`);
    const siblings = node.parent!.children;
    siblings.splice(siblings.indexOf(node), 1);
    this.#byId.delete(node.id);
    this.#byPath.delete(node.path);
    this.generation++;
    return { ok: true, value: node };
  }

  #index(node: RespoolNode): void {
    node.preemptionEnabled = this.#preemptionEnabled;
    this.#byId.set(node.id, node);
    this.#byPath.set(node.path, node);
  }

  /** Child limit ≤ parent limit; Σ children reservations ≤ parent reservation (root: unbounded). */
  #checkAgainstParent(
    parent: RespoolNode,
    config: RespoolConfig,
    self: RespoolNode | undefined,
  ): string | undefined {
    if (parent.isRoot) return undefined;
    for (const r of config.resources) {
      const p = parent.resource(r.kind);
      if (!p) return `parent ${parent.path} has no ${r.kind} resource`;
      if (r.limit > p.limit) {
        return `resource ${r.kind}: limit ${r.limit} exceeds the parent's limit ${p.limit} (${parent.path})`;
      }
      let sum = r.reservation;
      for (const c of parent.children) if (c !== self) sum += c.resource(r.kind)?.reservation ?? 0;
      if (sum > p.reservation) {
        return `resource ${r.kind}: children's reservations ${sum} exceed the parent's reservation ${p.reservation} (${parent.path})`;
      }
    }
    return undefined;
  }

  #checkAgainstChildren(node: RespoolNode, config: RespoolConfig): string | undefined {
    for (const r of config.resources) {
      let sum = 0;
      for (const c of node.children) {
        const cr = c.resource(r.kind);
        if (!cr) continue;
        if (cr.limit > r.limit) {
          return `resource ${r.kind}: limit ${r.limit} is below child ${c.path}'s limit ${cr.limit}`;
        }
        sum += cr.reservation;
      }
      if (sum > r.reservation) {
        return `resource ${r.kind}: reservation ${r.reservation} is below the children's reservations ${sum}`;
      }
    }
    return undefined;
  }
}
