/** Peloton's v0 respool API (`peloton.api.respool.ResourceManager`), served by the resource manager. */
import type { ApiRequest } from "../messages.ts";
import type { RespoolConfig } from "../model/config_types.ts";
import { parseRespoolConfig } from "../model/load.ts";
import { addInto, type Resources, zero } from "../model/resources.ts";
import { isTerminalJobState, JOB_STATES, type JobState } from "../model/states.ts";
import { randomUuid } from "../ports/prng.ts";
import { storeFailure } from "../ports/store.ts";
import { admissionWaits } from "./admission_waits.ts";
import { claimedBy } from "./pool_claims.ts";
import type { ResmgrDeps, ResourceManager } from "./resmgr.ts";
import { RESOURCE_KINDS, type RespoolNode, ROOT_ID, toScalar } from "./respool_tree.ts";

export const RESPOOL_SERVICE = "peloton.api.respool.ResourceManager";

type Body = Record<string, unknown>;

/** A value as a message shows it: JSON, cut short. */
function shown(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 60 ? `${text.slice(0, 60)}...` : text;
}

const POOL_ID = "a resource pool id";
const POOL_PATH = "a pool path such as /a/b";

/**
 * The text of a request's `{value}` message at `field` (ResourcePoolID, ResourcePoolPath): undefined when
 * absent, else the text or an Error naming the field. A bare string is refused, as protobuf's JSON decoding
 * (jsonpb, behind Peloton's YARPC server) refuses one where a message is expected: Peloton would not
 * have read it, so a client relying on it would not work there.
 */
function valueOf(raw: unknown, field: string, what: string): string | undefined | Error {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === "string") {
    const s = shown(raw);
    return new Error(`${field}: got ${s}, expected ${what} as a message, {"value": ${s}}`);
  }
  if (typeof raw !== "object" || Array.isArray(raw)) {
    return new Error(`${field}: got ${shown(raw)}, expected ${what} as {"value": ...}`);
  }
  const value = (raw as Body).value;
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") return new Error(`${field}.value: got ${shown(value)}, expected ${what}`);
  return value;
}

/**
 * A request's bool field at `field`: absent (or null) is false; anything but true or false is an Error
 * naming it, rather than read by its truthiness ("nope" would be true, "false" too).
 */
function flagOf(raw: unknown, field: string): boolean | Error {
  if (raw === undefined || raw === null) return false;
  if (typeof raw !== "boolean") return new Error(`${field}: got ${shown(raw)}, expected true or false`);
  return raw;
}

/**
 * Why a pool path is malformed, or undefined: it must start with `/` and have no empty part between two
 * slashes (`//a`, `/a//b`), as the CLI requires of the paths it is given; trailing slashes are dropped, as
 * there. The root is `/`. Peloton's lookup split such a path into parts too, and found no pool with an
 * empty name, where ours ignored empty parts and found `/a` for `//a`.
 */
function pathProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return `${POOL_PATH}, starting with /`;
  if (path === "/") return undefined;
  if (path.replace(/\/+$/, "").slice(1).split("/").includes("")) return `${POOL_PATH}, with no empty parts`;
  return undefined;
}

/** The Peloton JSON shape of a pool config. */
export function respoolConfigJson(c: RespoolConfig): Body {
  return {
    name: c.name,
    owningTeam: c.owningTeam,
    ldapGroups: c.ldapGroups,
    description: c.description,
    resources: c.resources,
    parent: c.parent ? { value: c.parent } : undefined,
    policy: c.policy,
    controllerLimit: c.controllerLimit,
    slackLimit: c.slackLimit,
  };
}

export function respoolInfo(node: RespoolNode): Body {
  // Peloton's `createRespoolUsage`: allocation is what non-revocable tasks hold, slack what revocable ones
  // do; a parent reports its leaves' sum, as Peloton's entitlement cycle leaves it. Ours besides: the
  // entitlement of the last entitlement cycle, and the demand still queued (not yet admitted).
  const nonSlack = zero(), slackSum = zero(), queued = zero();
  sumLeaves(node, nonSlack, slackSum, queued);
  const alloc = toScalar(nonSlack);
  const slack = toScalar(slackSum);
  const demand = toScalar(queued);
  return {
    id: { value: node.id },
    config: respoolConfigJson(node.config),
    parent: node.parent ? { value: node.parent.id } : undefined,
    children: node.children.map((c) => ({ value: c.id })),
    // `usage`, as v0 respool.proto's ResourcePoolInfo names it.
    usage: RESOURCE_KINDS.map((kind) => ({
      kind,
      allocation: alloc[kind],
      slack: slack[kind],
      entitlement: node.entitlement[kind],
      demand: demand[kind],
    })),
    path: { value: node.path },
  };
}

function sumLeaves(node: RespoolNode, nonSlack: Resources, slack: Resources, demand: Resources): void {
  if (node.isLeaf) {
    addInto(nonSlack, node.allocation.nonSlack);
    addInto(slack, node.allocation.slack);
    addInto(demand, node.demand);
    addInto(demand, node.slackDemand);
  }
  for (const c of node.children) sumLeaves(c, nonSlack, slack, demand);
}

/** The widths of a pool's id and path columns in the SQL store (prod/store/schema.ts). */
export const MAX_POOL_ID_CHARS = 128;
export const MAX_POOL_PATH_CHARS = 700;

/** Job states of jobs not ended, which keep their pool from deletion. */
const LIVE_JOB_STATES = (Object.keys(JOB_STATES) as JobState[]).filter((s) => !isTerminalJobState(s));

export class RespoolApi {
  constructor(private readonly rm: ResourceManager, private readonly deps: ResmgrDeps) {}

  /** Why a pool is busy with a job being created in it, if one is. */
  readonly #claimedBy = (poolId: string): string | undefined => {
    const claim = this.rm.claims.holder(poolId, this.deps.clock.now());
    return claim && claimedBy(claim);
  };

  handle(req: ApiRequest): void {
    const method = req.procedure.slice(req.procedure.lastIndexOf(":") + 1);
    const body = (req.body ?? {}) as Body;
    switch (method) {
      case "CreateResourcePool":
        return this.#create(req, body);
      case "UpdateResourcePool":
        return this.#update(req, body);
      case "DeleteResourcePool":
        return this.#delete(req, body);
      case "GetResourcePool":
        return this.#get(req, body);
      case "LookupResourcePoolID":
        return this.#lookup(req, body);
      case "Query":
        return this.#reply(req, { resourcePools: [...this.rm.tree.all()].map(respoolInfo) });
      case "GetAdmissionWaits":
        return this.#waits(req, body);
      default:
        return this.#error(req, "unimplemented", `procedure ${req.procedure} is not implemented`);
    }
  }

  /**
   * Peloton's errors carry the id the pool would have had (it makes one before validating), in
   * `invalidResourcePoolConfig` and `alreadyExists` alike.
   */
  #create(req: ApiRequest, body: Body): void {
    // Ours: Peloton's CreateRequest has no id, and makes one; here a given one is taken.
    const given = valueOf(body.id, "id", POOL_ID);
    if (given instanceof Error) return this.#error(req, "invalid-argument", given.message);
    const id = given || randomUuid(this.deps.prng);
    const refuse = (kind: string, message: string) =>
      this.#reply(req, { error: { [kind]: { id: { value: id }, message } } });
    const parsed = parseRespoolConfig(body.config, "config");
    if (!parsed.ok) return refuse("invalidResourcePoolConfig", issues(parsed.errors));
    const config = parsed.value;
    const parentId = config.parent ?? ROOT_ID;
    if (id.length > MAX_POOL_ID_CHARS) {
      return refuse(
        "invalidResourcePoolConfig",
        `id: got ${id.length} characters, expected at most ${MAX_POOL_ID_CHARS}`,
      );
    }
    const res = this.rm.tree.create(id, parentId, config, this.#claimedBy);
    if (!res.ok) {
      return refuse(
        res.code === "already-exists" ? "alreadyExists" : "invalidResourcePoolConfig",
        res.message,
      );
    }
    const node = res.value;
    if (node.path.length > MAX_POOL_PATH_CHARS) {
      // The store keeps the path in a column of that width: refused here, before anything is written.
      this.rm.tree.delete(node.path);
      return refuse(
        "invalidResourcePoolConfig",
        `config.name: the pool's path ${node.path.slice(0, 60)}... would be ${node.path.length} ` +
          `characters, expected at most ${MAX_POOL_PATH_CHARS}`,
      );
    }
    this.#persist(req, node, () => ({ result: { value: node.id } }), () => this.rm.tree.delete(node.path));
  }

  #update(req: ApiRequest, body: Body): void {
    const id = valueOf(body.id, "id", POOL_ID);
    if (id instanceof Error) return this.#error(req, "invalid-argument", id.message);
    if (!id) return this.#error(req, "invalid-argument", `id: missing, expected ${POOL_ID}`);
    // Peloton's ResourcePoolNotFound and InvalidResourcePoolConfig both name the pool by id.
    const refuse = (kind: string, message: string) =>
      this.#reply(req, { error: { [kind]: { id: { value: id }, message } } });
    // UpdateRequest's `bool Force`, its JSON name as respool.proto spells it; `force` is taken too.
    for (const field of ["Force", "force"]) {
      const force = flagOf(body[field], field);
      if (force instanceof Error) return this.#error(req, "invalid-argument", force.message);
    }
    const parsed = parseRespoolConfig(body.config, "config");
    if (!parsed.ok) return refuse("invalidResourcePoolConfig", issues(parsed.errors));
    const before = this.rm.tree.get(id)?.config;
    const res = this.rm.tree.update(id, parsed.value, body.Force === true || body.force === true);
    if (!res.ok) {
      return refuse(res.code === "not-found" ? "notFound" : "invalidResourcePoolConfig", res.message);
    }
    this.#persist(req, res.value, () => ({}), () => this.rm.tree.update(id, before!, true));
  }

  #delete(req: ApiRequest, body: Body): void {
    const path = this.#path(req, body, "notFound");
    if (path === undefined) return;
    const node = this.rm.tree.lookup(path);
    if (!node || !node.isLeaf || node.isRoot || node.busy() || this.#claimedBy(node.id)) {
      return this.#deleteNow(req, path);
    }
    // A job not ended keeps its pool, though none of its tasks is here yet: one acknowledged by a create
    // whose claim was made at a leader before a failover (claims live in memory), or whose tasks the job
    // manager has not sent again since.
    this.deps.store.queryJobs({ respoolId: node.id, states: LIVE_JOB_STATES, limit: 1 }).then(
      (page) => {
        const job = page.jobs[0];
        if (!job) return this.#deleteNow(req, path);
        const message = `resource pool ${path} is busy: job ${job.jobId} (${job.runtime.state}) is in it`;
        this.#reply(req, { error: { isBusy: { id: { value: node.id }, message } } });
      },
      (err) => this.#storeError(req, err, `deleting ${path}`),
    );
  }

  #deleteNow(req: ApiRequest, path: string): void {
    const node = this.rm.tree.lookup(path);
    const res = this.rm.tree.delete(path, this.#claimedBy);
    if (!res.ok) {
      // Peloton's answers: the root is not a leaf while it has pools, and cannot be deleted (NotDeleted) when
      // it has none. A pool not found is named by its path (ResourcePoolPathNotFound), one found by its id.
      if (res.code === "not-found" || !node) {
        return this.#reply(req, { error: { notFound: { path: { value: path }, message: res.message } } });
      }
      const key = res.code === "invalid-argument"
        ? "notDeleted"
        : res.message.endsWith("is not a leaf")
        ? "isNotLeaf"
        : "isBusy";
      return this.#reply(req, { error: { [key]: { id: { value: node.id }, message: res.message } } });
    }
    const gone = res.value;
    this.deps.store.write([{ kind: "respool.delete", id: gone.id }], (err) => {
      if (err) {
        // The pool is still stored: put it back so memory and store agree.
        this.rm.tree.load([{ id: gone.id, path: gone.path, parentId: gone.parent!.id, config: gone.config }]);
        return this.#storeError(req, err, `deleting ${path}`);
      }
      this.#reply(req, {});
    });
  }

  /**
   * Ours, not Peloton's: why a leaf pool's queued tasks wait for admission (`admission_waits.ts`), the
   * job manager's source for the message of a PENDING task.
   */
  #waits(req: ApiRequest, body: Body): void {
    const id = valueOf(body.id, "id", POOL_ID);
    if (id instanceof Error) return this.#error(req, "invalid-argument", id.message);
    if (!id) return this.#error(req, "invalid-argument", `id: missing, expected ${POOL_ID}`);
    const node = this.rm.tree.get(id);
    if (!node) {
      return this.#reply(req, {
        error: { notFound: { id: { value: id }, message: `resource pool ${id} not found` } },
      });
    }
    if (!node.isLeaf || node.isRoot) {
      return this.#reply(req, {
        error: { isNotLeaf: { id: { value: id }, message: `resource pool ${node.path} is not a leaf pool` } },
      });
    }
    const capacityKnown = this.rm.capacity.physical.cpuMilli > 0 || this.rm.capacity.physical.memMb > 0;
    const waits = admissionWaits(
      node,
      this.rm.config.preemption.enabled,
      capacityKnown,
      this.rm.capacity.physical,
    );
    this.#reply(req, { waits });
  }

  #get(req: ApiRequest, body: Body): void {
    // No id is the root, as in Peloton; an id that is not a `{value}` message is a mistake, not the root.
    const given = valueOf(body.id, "id", POOL_ID);
    if (given instanceof Error) return this.#error(req, "invalid-argument", given.message);
    const withChildren = flagOf(body.includeChildPools, "includeChildPools");
    if (withChildren instanceof Error) return this.#error(req, "invalid-argument", withChildren.message);
    const id = given ?? ROOT_ID;
    const node = this.rm.tree.get(id);
    if (!node) {
      return this.#reply(req, {
        error: { notFound: { id: { value: id }, message: `resource pool ${id} not found` } },
      });
    }
    // A job manager creating a job in it: the pool stays until the job's tasks are in it.
    const claim = req.poolClaim;
    if (claim && node.isLeaf && !node.isRoot) {
      this.rm.claims.claim(node.id, claim.key, this.deps.clock.now(), claim.jobId);
    }
    const out: Body = { poolinfo: respoolInfo(node) };
    if (withChildren) out.childPools = node.children.map(respoolInfo);
    this.#reply(req, out);
  }

  #lookup(req: ApiRequest, body: Body): void {
    const path = this.#path(req, body, "invalidPath");
    if (path === undefined) return;
    const node = this.rm.tree.lookup(path);
    if (!node) {
      return this.#reply(req, {
        error: { notFound: { path: { value: path }, message: `resource pool ${path} not found` } },
      });
    }
    this.#reply(req, { id: { value: node.id } });
  }

  /**
   * The pool path a request names (`path`), or undefined once the request is answered: one that is not a
   * `{value}` message is refused as protobuf's decoding would (InvalidArgument); a missing or malformed
   * one in the response's error of `kind` with the path, as Peloton answers it: Lookup's
   * InvalidResourcePoolPath (`ValidateResourcePoolPath`), Delete's ResourcePoolPathNotFound (its lookup
   * failed; DeleteResponse has no other error for a path).
   */
  #path(req: ApiRequest, body: Body, kind: "invalidPath" | "notFound"): string | undefined {
    const path = valueOf(body.path, "path", POOL_PATH);
    if (path instanceof Error) return void this.#error(req, "invalid-argument", path.message);
    const invalid = (message: string, value?: string) =>
      void this.#reply(req, {
        error: { [kind]: { ...(value === undefined ? {} : { path: { value } }), message } },
      });
    if (!path) return invalid(`path: missing, expected ${POOL_PATH}`, path);
    const problem = pathProblem(path);
    if (problem) return invalid(`path.value: got ${shown(path)}, expected ${problem}`, path);
    return path;
  }

  /** Replies once the pool is durable; a failed write undoes the change in the tree. */
  #persist(req: ApiRequest, node: RespoolNode, ok: () => Body, undo: () => void): void {
    const pool = { id: node.id, path: node.path, parentId: node.parent!.id, config: node.config };
    this.deps.store.write([{ kind: "respool.put", pool }], (err) => {
      if (err) {
        undo();
        return this.#storeError(req, err, `storing ${node.path}`);
      }
      this.#reply(req, ok());
    });
  }

  #reply(req: ApiRequest, body: Body): void {
    this.deps.transport.send(req.replyTo, { kind: "api-reply", reqId: req.reqId, body });
  }

  #error(req: ApiRequest, code: "unimplemented" | "invalid-argument", message: string): void {
    this.deps.transport.send(req.replyTo, { kind: "api-reply", reqId: req.reqId, error: { code, message } });
  }

  #storeError(req: ApiRequest, err: Error, doing: string): void {
    this.deps.transport.send(req.replyTo, {
      kind: "api-reply",
      reqId: req.reqId,
      error: storeFailure(err, doing),
    });
  }
}

function issues(list: { message: string }[]): string {
  return list.map((i) => i.message).join("; ");
}
