/**
 * Peloton's v1alpha AdminService (`pkg/jobmgr/adminsvc`): an operator locks parts of the job manager down
 * in an incident and lifts the lock after.
 * - `GoalStateEngine`: no goal-state actions run (work queues up and runs once unlocked).
 * - `Read` / `Write`: the job manager's read or write API calls are refused, as Peloton's API lock
 *   middleware refuses them, by method name (`config/jobmgr/base.yaml` `api_lock`).
 * - `Kill`: kills are held back and sent once unlocked.
 * - `Launch`: placements are not fetched, so nothing is launched; placed tasks wait in the resource
 *   manager (their host leases may run out meanwhile, and such tasks are placed again).
 * Unlike Peloton's, a lockdown is stored: it outlives a restart of the job manager, and job managers that
 * share a store take it up from there.
 */
import type { AdminLockRecord } from "../model/records.ts";
import { WATCH_SERVICE } from "./watch.ts";

export const ADMIN_SERVICE = "peloton.api.v1alpha.admin.svc.AdminService";

/** Peloton's `admin.svc.Component`, by number. */
export const LOCK_COMPONENTS = ["GoalStateEngine", "Read", "Write", "Kill", "Launch"] as const;
export type LockComponent = typeof LOCK_COMPONENTS[number];

/** Peloton's `api_lock` read and write method globs (every service of the job manager). */
const READ_METHODS = ["Get", "Query", "List", "Browse"];
const WRITE_METHODS = [
  "Create",
  "Delete",
  "Start",
  "Stop",
  "Restart",
  "Refresh",
  "Update",
  "Pause",
  "Resume",
  "Rollback",
  "Abort",
  "Replace",
  "Patch",
];

/** Whether a procedure (`service::Method`) is a read or a write API for the lock, or neither. */
export function apiLockKind(procedure: string): "Read" | "Write" | undefined {
  // Peloton lists the WatchService as read APIs. Cancel is left out: a front cancels the watch of a client
  // that went away, which Peloton's handler does inside, past the lock.
  if (procedure.startsWith(`${WATCH_SERVICE}::`)) return procedure.endsWith("::Cancel") ? undefined : "Read";
  const method = procedure.slice(procedure.indexOf("::") + 2);
  if (READ_METHODS.some((m) => method.startsWith(m))) return "Read";
  if (WRITE_METHODS.some((m) => method.startsWith(m))) return "Write";
  return undefined;
}

/**
 * `components` of a Lockdown or RemoveLockdown request (names or Peloton's numbers), or why they are
 * not valid.
 */
export function lockComponents(v: unknown): LockComponent[] | string {
  const expected = `expected a list of components (${LOCK_COMPONENTS.join(", ")})`;
  if (!Array.isArray(v) || !v.length) return `components: got ${JSON.stringify(v)}, ${expected}`;
  const out: LockComponent[] = [];
  for (const c of v) {
    const name = typeof c === "number" ? LOCK_COMPONENTS[c] : c;
    if (typeof name !== "string" || !(LOCK_COMPONENTS as readonly string[]).includes(name)) {
      return `components: got ${JSON.stringify(c)}, ${expected}`;
    }
    if (!out.includes(name as LockComponent)) out.push(name as LockComponent);
  }
  return out;
}

/** The stored records as components, leaving out any name this version does not know. */
export function storedLocks(records: AdminLockRecord[]): LockComponent[] {
  return records.map((r) => r.component).filter((c): c is LockComponent =>
    (LOCK_COMPONENTS as readonly string[]).includes(c)
  );
}
