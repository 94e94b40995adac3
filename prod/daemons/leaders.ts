/** Notices new leaders of the elected roles, so requests waiting on the old one go to the new one. */
import type { DaemonProcess } from "./process.ts";

export type ElectedRole = "resmgr" | "hostmgr";

/**
 * Calls `onNewLeader(role)` when a role's lease shows a new term (a token other than the last one seen);
 * the first leader seen at start is not news. Requests still waiting on that role are sent again first.
 */
export function watchLeaders(p: DaemonProcess, onNewLeader: (role: ElectedRole) => void): void {
  const seen = new Map<ElectedRole, number>();
  let first = true;
  p.registry.onChange(() => {
    for (const role of ["resmgr", "hostmgr"] as const) {
      const l = p.registry.holder(role);
      if (!l || l.holder === p.instance) continue;
      const before = seen.get(role);
      if (before === l.token) continue;
      seen.set(role, l.token);
      // Only a new term: a request sent again to the leader that already has it would be answered twice,
      // and the second answer (the one with the work, perhaps) dropped as a late duplicate.
      if (before !== undefined) p.transport.replay(role);
      if (!first || before !== undefined) {
        p.log("new leader", { role, leader: l.holder, token: l.token });
        onNewLeader(role);
      }
    }
    first = false;
  });
}

/**
 * Calls `onGone(role, address)` for each process of `roles` that leaves the membership (stopped, or its
 * heartbeat expired after a crash), with the address its daemon used (`role@instance`).
 */
export function watchDepartures(
  p: DaemonProcess,
  roles: ("jobmgr" | "placement")[],
  onGone: (role: "jobmgr" | "placement", address: string) => void,
): void {
  let before = new Map<string, "jobmgr" | "placement">();
  p.registry.onChange(() => {
    const now = new Map<string, "jobmgr" | "placement">();
    for (const role of roles) for (const m of p.registry.membersOf(role)) now.set(m.instanceId, role);
    for (const [id, role] of before) {
      if (now.has(id)) continue;
      p.log("process gone", { role, instance: id });
      onGone(role, `${role}@${id}`);
    }
    before = now;
  });
}
