/** How full sandboxes and the agents' file system are, measured as a Mesos agent does: `du` and `df`. */

/** Mesos's `--gc_disk_headroom` default: sandboxes go at once when the disk is 90% full. */
export const DEFAULT_GC_DISK_HEADROOM = 0.1;

const KB = 1024;
const UNITS: [string, number][] = [["TB", KB ** 4], ["GB", KB ** 3], ["MB", KB ** 2], ["KB", KB]];

/**
 * Bytes as Mesos's messages show them (stout's `Bytes`): in the largest unit that loses nothing, so a
 * quota of 10 MB is `10MB` and `du`'s usage, in whole kilobytes, usually `20484KB`.
 */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of UNITS) if (bytes > 0 && bytes % size === 0) return `${bytes / size}${unit}`;
  return `${bytes}B`;
}

/** The message of a task killed for its sandbox's size, as Mesos's `disk/du` isolator words it. */
export function diskQuotaMessage(usageBytes: number, quotaBytes: number): string {
  return `Disk usage (${formatBytes(usageBytes)}) exceeds quota (${formatBytes(quotaBytes)})`;
}

/**
 * How long an ended run's sandbox is kept on a disk `usage` full (0 to 1), as Mesos's agent scales its
 * `--gc_delay`: by what is left above the headroom, so on a disk fuller than `1 - headroom` at once.
 */
export function gcMaxAgeMs(gcDelayMs: number, headroom: number, usage: number): number {
  return gcDelayMs * Math.max(0, Math.min(1, 1 - headroom - usage));
}

/**
 * The disk space each directory uses (`du -s -k`: blocks allocated, symlinks not followed, so a volume
 * linked into a sandbox is not counted), in bytes, by path. A directory `du` could not read is left out.
 * `signal` ends the `du` under way (nothing is then returned).
 */
export async function directoryUsage(dirs: string[], signal?: AbortSignal): Promise<Map<string, number>> {
  const usage = new Map<string, number>();
  if (dirs.length === 0 || signal?.aborted) return usage;
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("du", {
      args: ["-s", "-k", "--", ...dirs],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
      env: { LC_ALL: "C" },
      signal,
    }).output();
  } catch (e) {
    if (signal?.aborted) return usage;
    throw new Error(`Cannot measure sandbox disk usage: du failed: ${e instanceof Error ? e.message : e}`);
  }
  if (signal?.aborted) return usage;
  // A file removed while du walks makes it exit 1; the totals it printed still hold.
  const wanted = new Set(dirs);
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    const m = /^(\d+)\t(.*)$/.exec(line);
    if (m && wanted.has(m[2])) usage.set(m[2], Number(m[1]) * KB);
  }
  return usage;
}

/**
 * How full the file system holding `dir` is, from 0 to 1: used / (used + available), `df`'s Use%. Unlike
 * Mesos's `fs::usage` (used / size) it counts the blocks reserved for root as taken, so it reaches 1 when
 * a process that is not root can no longer write. Undefined when `df` cannot tell.
 */
export async function filesystemUsage(dir: string): Promise<number | undefined> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("df", {
      args: ["-P", "-k", "--", dir],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
      env: { LC_ALL: "C" },
    }).output();
  } catch {
    return undefined;
  }
  return parseDfUsage(new TextDecoder().decode(out.stdout));
}

/** `df -P -k`'s answer for one file system as a fraction used, or undefined (none, or no sizes). */
export function parseDfUsage(text: string): number | undefined {
  const lines = text.trim().split("\n");
  // The file system's name may hold spaces: its sizes are read from the end, before `<pct>% <mount>`.
  const m = /\s(\d+)\s+(\d+)\s+(\d+)\s+(?:\d+%|-)\s+\/.*$/.exec(lines[lines.length - 1] ?? "");
  if (lines.length < 2 || !m) return undefined;
  const used = Number(m[2]), available = Number(m[3]);
  return used + available > 0 ? used / (used + available) : undefined;
}
