/**
 * The emulator's RESERVE, UNRESERVE, CREATE and DESTROY: each operation checked as the master's
 * `validation::operation::validate` and `Resources::apply` check it, then applied to the offered pool and to
 * the agent's checkpointed total. A refused operation is dropped (the master logs "Dropping ... offer
 * operation") and the ACCEPT goes on with the next one.
 */
import type { Operation, Resource } from "./protocol.ts";
import {
  addBags,
  type Bag,
  bagFromMesos,
  bagToMesos,
  describeBag,
  filterBag,
  kindOf,
  reservationsOf,
  type ResourceKind,
  subtractBags,
} from "./resources.ts";
import { isDynamicallyReserved, mapKinds, persistenceId, strippedKind, unreservedKind } from "./volumes.ts";

/** What an operation is checked and applied against. */
export interface OperationContext {
  /** The framework's role and principal (FrameworkInfo.principal; none: any principal is taken). */
  role: string;
  principal?: string;
  /** The offers' allocation role, put on resources that do not say (the master's `injectAllocationInfo`). */
  allocationRole: string;
  /** The offered resources not used by the operations before this one. */
  pool: Bag;
  /** The agent's total: its resources with the reservations and volumes made on it so far. */
  total: Bag;
  /** Resources held by tasks on the agent, of every framework. */
  used: Bag[];
}

/** An applied operation: the pool after it, and what the agent's total trades (`consumed` for `converted`). */
export interface Applied {
  pool: Bag;
  consumed: Bag;
  converted: Bag;
}

export type OperationType = "RESERVE" | "UNRESERVE" | "CREATE" | "DESTROY";

export function isVolumeOperation(op: Operation): op is Operation & { type: OperationType } {
  return op.type === "RESERVE" || op.type === "UNRESERVE" || op.type === "CREATE" || op.type === "DESTROY";
}

function resourcesOf(op: Operation): Resource[] | undefined {
  switch (op.type) {
    case "RESERVE":
      return op.reserve?.resources;
    case "UNRESERVE":
      return op.unreserve?.resources;
    case "CREATE":
      return op.create?.volumes;
    case "DESTROY":
      return op.destroy?.volumes;
  }
  return undefined;
}

const describe = (r: ResourceKind) => describeBag(bagFromMesos([r as Resource]));

/** `resource::validate`'s DiskInfo and ReservationInfo rules, for each resource of an operation. */
function resourceProblem(resources: Resource[]): string | undefined {
  for (const r of resources) {
    if (r.type === "SCALAR" && !(Number(r.scalar?.value) >= 0)) {
      return `Invalid resources: Invalid resources: Invalid scalar resource ${r.name}`;
    }
    if (isDynamicallyReserved(r) && r.revocable) {
      return `Invalid resources: Invalid ReservationInfo: Dynamically reserved resource ${
        describe(r)
      } cannot be created from revocable resources`;
    }
    if (r.disk?.persistence) {
      const why = r.revocable
        ? "Persistent volumes cannot be created from revocable resources"
        : reservationsOf(r).length === 0
        ? "Persistent volumes cannot be created from unreserved resources"
        : !r.disk.volume
        ? "Expecting 'volume' to be set for persistent volume"
        : r.disk.volume.host_path !== undefined
        ? "Expecting 'host_path' to be unset for persistent volume"
        : !/^[A-Za-z0-9_.-]+$/.test(r.disk.persistence.id)
        ? `Persistence ID '${r.disk.persistence.id}' contains invalid characters`
        : undefined;
      if (why) return `Invalid resources: Invalid DiskInfo: ${why}`;
    }
  }
  return undefined;
}

/** `validatePersistentVolume`: each resource is a read-write persistent volume. */
function notVolume(volumes: Resource[]): string | undefined {
  for (const v of volumes) {
    const why = !v.disk
      ? `Resource ${describe(v)} does not have DiskInfo`
      : !v.disk.persistence
      ? "'persistence' is not set in DiskInfo"
      : !v.disk.volume
      ? "Expecting 'volume' to be set for persistent volume"
      : v.disk.volume.mode === "RO"
      ? "Read-only persistent volume not supported"
      : undefined;
    if (why) return `Not a persistent volume: ${why}`;
  }
  return undefined;
}

/** Validates one operation and applies it, or says why the master drops it. */
export function applyOperation(op: Operation & { type: OperationType }, ctx: OperationContext): Applied | {
  error: string;
} {
  const given = resourcesOf(op);
  if (!given?.length) return { error: `Expecting '${op.type.toLowerCase()}' to have resources` };
  // Allocated to the offers' role where they do not say (Master::accept's injectAllocationInfo).
  const resources = given.map((r) =>
    r.allocation_info ? r : { ...r, allocation_info: { role: ctx.allocationRole } }
  );
  const invalid = resourceProblem(resources);
  if (invalid) return { error: invalid };
  const bag = bagFromMesos(resources);
  let consumed: Bag, converted: Bag;
  switch (op.type) {
    case "RESERVE": {
      for (const r of resources) {
        if (!isDynamicallyReserved(r)) {
          return { error: `Resource ${describe(r)} is not dynamically reserved` };
        }
        const last = reservationsOf(r).at(-1)!;
        if (ctx.principal !== undefined && last.principal !== ctx.principal) {
          return {
            error: last.principal === undefined
              ? `A reserve operation was attempted by principal '${ctx.principal}', but there is a reserved ` +
                "resource in the request with no principal set in `ReservationInfo`"
              : `A reserve operation was attempted by principal '${ctx.principal}', but there is a reserved ` +
                `resource in the request with principal '${last.principal}' set in \`ReservationInfo\``,
          };
        }
        if (last.role !== r.allocation_info!.role) {
          return {
            error: `A reserve operation was attempted for a resource allocated to role '${
              r.allocation_info!.role
            }', but the reservation role '${last.role}' does not match`,
          };
        }
        if (r.disk?.persistence) {
          return { error: `A persistent volume ${describe(r)} must already be reserved` };
        }
      }
      consumed = mapKinds(bag, unreservedKind);
      converted = bag;
      break;
    }
    case "UNRESERVE": {
      for (const r of resources) {
        if (!isDynamicallyReserved(r)) {
          return { error: `Resource ${describe(r)} is not dynamically reserved` };
        }
        if (r.disk?.persistence) {
          return {
            error: `A dynamically reserved persistent volume ${describe(r)} cannot be unreserved directly. ` +
              "Please destroy the persistent volume first then unreserve the resource",
          };
        }
      }
      consumed = bag;
      converted = mapKinds(bag, unreservedKind);
      break;
    }
    case "CREATE": {
      const problem = notVolume(resources);
      if (problem) return { error: problem };
      const ids = new Set(volumeIds(ctx.total));
      for (const r of resources) {
        const id = persistenceId(r)!;
        if (ids.has(id)) return { error: `Persistence ID '${id}' is not unique` };
        ids.add(id);
        const p = r.disk!.persistence!.principal;
        if (ctx.principal !== undefined && p !== ctx.principal) {
          return {
            error: p === undefined
              ? `Create volume operation has been attempted by principal '${ctx.principal}', but there is a ` +
                "volume in the operation with no principal set in 'DiskInfo.Persistence'"
              : `Create volume operation has been attempted by principal '${ctx.principal}', but there is a ` +
                `volume in the operation with principal '${p}' set in 'DiskInfo.Persistence'`,
          };
        }
      }
      consumed = mapKinds(bag, strippedKind);
      converted = bag;
      break;
    }
    case "DESTROY": {
      const problem = notVolume(resources);
      if (problem) return { error: problem };
      if (!subtractBags(ctx.total, bag)) return { error: "Persistent volumes not found" };
      for (const held of ctx.used) {
        const inUse = Object.keys(bag.scalars).some((k) => (held.scalars[k] ?? 0) > 0);
        if (inUse) return { error: "Persistent volumes in use" };
      }
      consumed = bag;
      converted = mapKinds(bag, strippedKind);
      break;
    }
  }
  const left = subtractBags(ctx.pool, consumed);
  if (!left) {
    const why = op.type === "CREATE"
      ? "Insufficient disk resources"
      : op.type === "DESTROY"
      ? "Persistent volume does not exist"
      : `${describeBag(ctx.pool)} does not contain ${describeBag(consumed)}`;
    return { error: `Invalid ${op.type} Operation: ${why}` };
  }
  return { pool: addBags(left, converted), consumed, converted };
}

/** The persistent volume ids on an agent. */
export function volumeIds(total: Bag): string[] {
  return Object.keys(total.scalars).flatMap((k) => {
    const id = persistenceId(kindOf(total, k));
    return id !== undefined && total.scalars[k] > 0 ? [id] : [];
  });
}

/** Pieces as an agent checkpoints them: no allocation role (that is an offer's, not the agent's). */
export function withoutAllocation(bag: Bag): Bag {
  return mapKinds(bag, (k) => {
    const { allocation_info: _a, ...rest } = structuredClone(k);
    return rest;
  });
}

/** An agent's total after an operation: `consumed` traded for `converted`. */
export function convertTotal(total: Bag, consumed: Bag, converted: Bag): Bag {
  const left = subtractBags(total, withoutAllocation(consumed));
  if (!left) {
    throw new Error(`Cannot apply an operation: ${describeBag(total)} lacks ${describeBag(consumed)}`);
  }
  return addBags(left, withoutAllocation(converted));
}

/** The resources an agent checkpoints: its dynamic reservations and persistent volumes. */
export function checkpointed(total: Bag): Resource[] {
  return bagToMesos(filterBag(total, (k) => isDynamicallyReserved(k) || persistenceId(k) !== undefined));
}

/**
 * An agent's total from its `--resources` and the resources it checkpointed: each checkpointed piece takes
 * the place of the plain one it was made from. One that no longer fits (the agent's resources shrank) is
 * left out, as a real agent refuses to start with checkpointed resources its resources do not contain.
 */
export function restoreTotal(resources: Bag, saved: Resource[], log?: (line: string) => void): Bag {
  let total = resources;
  for (const r of saved) {
    const piece = bagFromMesos([r]);
    const from = mapKinds(
      mapKinds(piece, strippedKind),
      (k) => isDynamicallyReserved(k) ? unreservedKind(k) : k,
    );
    const left = subtractBags(total, from);
    if (!left) {
      log?.(`emulator: checkpointed resource ${describeBag(piece)} no longer fits the agent; left out`);
      continue;
    }
    total = addBags(left, piece);
  }
  return total;
}

/**
 * `<dataDir>/agent_resources.json`: `{hostname: Resource[]}`, each machine's checkpointed resources, as a Mesos
 * agent keeps them in its work dir (`meta/resources/resources.info`): they outlive its restarts and are
 * recovered by the agent that registers next on the machine, under a new agent id too (back from maintenance,
 * rebooted), so its reservations and persistent volumes survive. Written whole and renamed into place; a write
 * that fails is logged (the change holds until the emulator stops).
 */
export class CheckpointFile {
  readonly path: string;
  readonly #saved: Record<string, Resource[]>;

  constructor(dataDir: string, readonly log?: (line: string) => void) {
    this.path = `${dataDir}/agent_resources.json`;
    this.#saved = read(this.path);
  }

  /** The machine's checkpointed resources (a file written before they were kept by host name has agent ids). */
  load(hostname: string, legacyAgentId?: string): Resource[] {
    if (Object.hasOwn(this.#saved, hostname)) return this.#saved[hostname];
    if (legacyAgentId !== undefined && Object.hasOwn(this.#saved, legacyAgentId)) {
      return this.#saved[legacyAgentId];
    }
    return [];
  }

  save(hostname: string, resources: Resource[], legacyAgentId?: string): void {
    if (resources.length) this.#saved[hostname] = resources;
    else delete this.#saved[hostname];
    if (legacyAgentId !== undefined && legacyAgentId !== hostname) delete this.#saved[legacyAgentId];
    const tmp = `${this.path}.tmp`;
    try {
      Deno.writeTextFileSync(tmp, JSON.stringify(this.#saved) + "\n");
      Deno.renameSync(tmp, this.path);
    } catch (e) {
      this.log?.(`emulator: cannot store checkpointed resources in ${this.path}: ${(e as Error).message}`);
    }
  }
}

function read(path: string): Record<string, Resource[]> {
  let raw: unknown;
  try {
    raw = JSON.parse(Deno.readTextFileSync(path));
  } catch {
    return {};
  }
  const out: Record<string, Resource[]> = {};
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return out;
  for (const [id, list] of Object.entries(raw)) {
    if (Array.isArray(list)) {
      out[id] = list.filter((r): r is Resource => typeof r?.name === "string" && typeof r?.type === "string");
    }
  }
  return out;
}
