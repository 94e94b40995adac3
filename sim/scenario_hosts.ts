/** Host classes of the scenario format, and their expansion into the agents a simulated cluster registers. */
import { z } from "zod";
import type { HostInfo } from "../core/ports/host_backend.ts";

const portRange = z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]);

export const hostClass = z.object({
  name: z.string().min(1).regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, '_', '.' or '-'"),
  count: z.number().int().nonnegative(),
  cpu: z.number().positive(),
  memoryMb: z.number().positive(),
  diskMb: z.number().nonnegative().default(0),
  gpu: z.number().nonnegative().default(0),
  attributes: z.record(z.string(), z.string()).default({}),
  /** Spreads hosts over `<class>-rack-0 … <class>-rack-(racks-1)` in a `rack` attribute. */
  racks: z.number().int().positive().optional(),
  /** Spreads the racks (or hosts, without racks) over `zone-0 … zone-(zones-1)` in a `zone` attribute. */
  zones: z.number().int().positive().optional(),
  /** Sets the `host_pool` attribute Peloton's host pools use. */
  hostPool: z.string().min(1).optional(),
  portRange: portRange.default([31000, 32000]),
  /** Several ranges; replaces `portRange`. */
  portRanges: z.array(portRange).min(1).optional(),
}).strict();
export type HostClass = z.infer<typeof hostClass>;

/** Hosts `<class>-<first>` … `<class>-<first+count-1>` of a class, with rack, zone and pool attributes. */
export function hostsOf(c: HostClass, first = 0, count = c.count): HostInfo[] {
  const hosts: HostInfo[] = [];
  const resources = {
    cpuMilli: Math.round(c.cpu * 1000),
    memMb: Math.round(c.memoryMb),
    diskMb: Math.round(c.diskMb),
    gpuMilli: Math.round(c.gpu * 1000),
  };
  const portRanges = c.portRanges ?? [c.portRange];
  for (let i = first; i < first + count; i++) {
    const hostname = `${c.name}-${i}`;
    const attributes: Record<string, string> = { ...c.attributes, host_class: c.name };
    if (c.hostPool) attributes.host_pool = c.hostPool;
    const rack = c.racks ? i % c.racks : i;
    if (c.racks) attributes.rack = `${c.name}-rack-${rack}`;
    if (c.zones) attributes.zone = `zone-${rack % c.zones}`;
    hosts.push({ hostname, agentId: `${hostname}-S0`, resources, attributes, portRanges });
  }
  return hosts;
}

/**
 * The hosts, racks and zones a scenario's classes produce, as events add classes and hosts: what events
 * may name. Counts only, so a 50,000-host scenario is checked without building its hosts.
 */
export class HostCatalog {
  readonly #classes = new Map<string, { c: HostClass; count: number }>();

  constructor(classes: HostClass[]) {
    for (const c of classes) this.#classes.set(c.name, { c, count: c.count });
  }

  hasClass(name: string): boolean {
    return this.#classes.has(name);
  }

  classNames(): string[] {
    return [...this.#classes.keys()];
  }

  /** A class defined by an event; its hosts register with it. */
  addClass(c: HostClass): void {
    this.#classes.set(c.name, { c, count: c.count });
  }

  addHosts(name: string, count: number): void {
    const entry = this.#classes.get(name);
    if (entry) entry.count += count;
  }

  hasHost(hostname: string): boolean {
    return [...this.#classes.values()].some((e) => matches({ prefix: `${e.c.name}-`, n: e.count }, hostname));
  }

  hasRack(rack: string): boolean {
    return this.#values("rack").some((v) => matches(v, rack));
  }

  hasZone(zone: string): boolean {
    return this.#values("zone").some((v) => matches(v, zone));
  }

  /** The hosts, racks or zones there are, in short: `std-0 … std-99`, `gpu-0 … gpu-7`. */
  describe(what: "host" | "rack" | "zone"): string[] {
    const values: Values[] = what === "host"
      ? [...this.#classes.values()].map((e) => ({ prefix: `${e.c.name}-`, n: e.count }))
      : this.#values(what);
    // Classes share zone names: `zone-0 … zone-2` covers a class's `zone-0 … zone-1`.
    const ranges = new Map<string, number>();
    const single = new Set<string>();
    for (const v of values) {
      if ("value" in v) single.add(v.value);
      else if (v.n > 0) ranges.set(v.prefix, Math.max(v.n, ranges.get(v.prefix) ?? 0));
    }
    return [...[...ranges].map(([prefix, n]) => range(prefix, n)), ...single];
  }

  /** Per class, the `rack` or `zone` values its hosts have (`hostsOf`'s rules). */
  #values(attr: "rack" | "zone"): Values[] {
    const out: Values[] = [];
    for (const { c, count } of this.#classes.values()) {
      if (count === 0) continue;
      const racks = c.racks ? Math.min(c.racks, count) : 0;
      // Zones go round the racks, or round the hosts without racks.
      const n = attr === "rack" ? racks : c.zones ? Math.min(c.zones, racks || count) : 0;
      if (n > 0) out.push({ prefix: attr === "rack" ? `${c.name}-rack-` : "zone-", n });
      else if (c.attributes[attr] !== undefined) out.push({ value: c.attributes[attr] });
    }
    return out;
  }
}

/** Attribute values of a class: `<prefix>0` … `<prefix><n-1>`, or one value set in its `attributes`. */
type Values = { prefix: string; n: number } | { value: string };

function matches(v: Values, value: string): boolean {
  if ("value" in v) return v.value === value;
  const rest = value.startsWith(v.prefix) ? value.slice(v.prefix.length) : "";
  return /^(0|[1-9]\d*)$/.test(rest) && Number(rest) < v.n;
}

function range(prefix: string, n: number): string {
  return n === 1 ? `${prefix}0` : `${prefix}0 … ${prefix}${n - 1}`;
}
