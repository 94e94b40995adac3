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
