/** How long each maintenance event's hosts take to drain: from its start until none of them has a task left. */
import type { Message } from "../core/messages.ts";
import type { EventRecord } from "./events.ts";

/**
 * Host states, as the host manager tells the job manager of them, in which a host has no task left: drained,
 * down (in maintenance and not registered), or lost with its agent (its tasks lost with it).
 */
const EMPTY: ReadonlySet<string> = new Set(["HOST_STATE_DRAINED", "HOST_STATE_DOWN", "LOST"]);

interface Drain {
  record: EventRecord;
  startMs: number;
  /** Its hosts that still have tasks. */
  left: Set<string>;
}

/**
 * Follows drains through the host changes the host manager sends (`host-inventory`, sent as hosts change
 * state): the moment a host turns DRAINED is the moment the host manager sees its last task end. Only a
 * scenario with drain events needs it to see the messages.
 */
export class DrainWatch {
  /** Drains not over yet, by host. */
  readonly #byHost = new Map<string, Drain[]>();

  /**
   * A drain of `hostnames` starts now: `record.drainSeconds` is null until its last host has no task left,
   * then the seconds that took. A drain of no hosts took none.
   */
  watch(record: EventRecord, hostnames: string[], nowMs: number): void {
    if (!hostnames.length) {
      record.drainSeconds = 0;
      return;
    }
    record.drainSeconds = null;
    const drain: Drain = { record, startMs: nowMs, left: new Set(hostnames) };
    for (const h of hostnames) {
      const list = this.#byHost.get(h);
      if (list) list.push(drain);
      else this.#byHost.set(h, [drain]);
    }
  }

  /** The drains not over: each one's record and the hosts that still have tasks. */
  pending(): { record: EventRecord; hosts: string[] }[] {
    const drains = new Set([...this.#byHost.values()].flat());
    return [...drains].map((d) => ({ record: d.record, hosts: [...d.left].sort() }));
  }

  /** Sees every message sent; host changes end the drains whose last host they empty. */
  observe(msg: Message, nowMs: number): void {
    if (msg.kind !== "host-inventory" || !this.#byHost.size) return;
    for (const h of msg.hosts) {
      if (!EMPTY.has(h.state)) continue;
      const drains = this.#byHost.get(h.hostname);
      if (!drains) continue;
      this.#byHost.delete(h.hostname);
      for (const d of drains) {
        d.left.delete(h.hostname);
        if (!d.left.size) d.record.drainSeconds = Math.round(nowMs - d.startMs) / 1000;
      }
    }
  }
}
