/** The host manager's side of several job managers: statuses go to their job's shard, acks come back whole. */
import type { MappedTaskStatus, Message } from "../../core/messages.ts";
import { parseMesosTaskId } from "../../core/model/records.ts";
import type { Address } from "../../core/ports/transport.ts";
import type { Router } from "../http_transport.ts";
import { JOB_SHARDS, shardAddress, shardOf } from "../cluster/registry.ts";

/** Tokens this router hands out, above any the host manager uses, so the two never mix. */
const FIRST_PART_TOKEN = 1e12;

/**
 * Routes what the host manager sends to "jobmgr": a status batch is split by job shard (each part goes to
 * the shard's current owner), a host inventory goes to every live job manager. A batch that wants an
 * acknowledgement gets one token per part; the host manager hears "processed" once every part was.
 */
export class JobmgrRouter implements Router {
  readonly #parts = new Map<number, { token: number; left: Set<number> }>();
  #next = FIRST_PART_TOKEN;

  constructor(
    readonly hostmgr: Address,
    /** Instance addresses of the live job managers. */
    readonly jobmgrs: () => Address[],
    readonly shards = JOB_SHARDS,
  ) {}

  outgoing(to: Address, msg: Message): [Address, Message][] | undefined {
    if (to !== "jobmgr") return undefined;
    if (msg.kind === "host-inventory") return this.jobmgrs().map((a) => [a, msg]);
    if (msg.kind !== "task-statuses") return [];
    const byShard = new Map<number, MappedTaskStatus[]>();
    for (const s of msg.statuses) {
      const shard = shardOf(parseMesosTaskId(s.taskId)?.jobId ?? s.taskId, this.shards);
      const list = byShard.get(shard);
      if (list) list.push(s);
      else byShard.set(shard, [s]);
    }
    const out: [Address, Message][] = [];
    const parts = new Set<number>();
    for (const [shard, statuses] of byShard) {
      let ackToken: number | undefined;
      if (msg.ackToken !== undefined) parts.add(ackToken = this.#next++);
      out.push([shardAddress(shard), { kind: "task-statuses", statuses, ackToken }]);
    }
    if (msg.ackToken !== undefined) {
      const entry = { token: msg.ackToken, left: parts };
      for (const p of parts) this.#parts.set(p, entry);
    }
    return out;
  }

  incoming(to: Address, msg: Message): Message | undefined {
    if (to !== this.hostmgr || msg.kind !== "statuses-processed" || msg.ackToken < FIRST_PART_TOKEN) {
      return msg;
    }
    const entry = this.#parts.get(msg.ackToken);
    if (!entry) return undefined;
    this.#parts.delete(msg.ackToken);
    entry.left.delete(msg.ackToken);
    return entry.left.size ? undefined : { kind: "statuses-processed", ackToken: entry.token };
  }

  /** Batches still waiting for some job manager, for metrics. */
  get waiting(): number {
    return this.#parts.size;
  }
}
