/** Disk measurements as a Mesos agent makes them: `du` of sandboxes, `df` of the work dir, and their use. */
import assert from "node:assert/strict";
import {
  directoryUsage,
  diskQuotaMessage,
  filesystemUsage,
  formatBytes,
  gcMaxAgeMs,
  parseDfUsage,
} from "./disk_usage.ts";

const MB = 1024 * 1024;

Deno.test("bytes show in the largest unit that loses nothing, as Mesos's messages show them", () => {
  assert.equal(formatBytes(0), "0B");
  assert.equal(formatBytes(1536), "1536B");
  assert.equal(formatBytes(2048), "2KB");
  assert.equal(formatBytes(10 * MB), "10MB");
  assert.equal(formatBytes(3 * MB + 1024), "3073KB");
  assert.equal(formatBytes(2 * 1024 * MB), "2GB");
  assert.equal(diskQuotaMessage(20484 * 1024, 10 * MB), "Disk usage (20484KB) exceeds quota (10MB)");
});

Deno.test("the GC delay shrinks as the disk fills, to nothing above 1 - headroom", () => {
  const week = 7 * 24 * 3600_000;
  assert.equal(gcMaxAgeMs(week, 0.1, 0), week * 0.9);
  assert.equal(gcMaxAgeMs(week, 0.1, 0.4), week * 0.5);
  assert.equal(gcMaxAgeMs(week, 0.1, 0.9), 0);
  assert.equal(gcMaxAgeMs(week, 0.1, 0.97), 0);
  assert.equal(gcMaxAgeMs(week, 0, 0), week);
  assert.equal(gcMaxAgeMs(week, 1, 0), 0);
});

Deno.test("df's answer is read as used / (used + available), also for a name with spaces", () => {
  const header = "Filesystem     1024-blocks     Used Available Capacity Mounted on\n";
  assert.equal(parseDfUsage(`${header}/dev/vda 1000 300 100 75% /\n`), 0.75);
  assert.equal(parseDfUsage(`${header}my disk 7 1000 900 100 90% /mnt/my disk\n`), 0.9);
  assert.equal(parseDfUsage(`${header}proc 0 0 0 - /proc\n`), undefined);
  assert.equal(parseDfUsage(""), undefined);
});

Deno.test("a directory's usage counts what it holds, not what a symlink in it points to", async () => {
  const dir = await Deno.makeTempDir({ prefix: "disk_usage_test_" });
  try {
    await Deno.mkdir(`${dir}/sandbox/sub`, { recursive: true });
    await Deno.mkdir(`${dir}/volume`);
    await Deno.writeFile(`${dir}/sandbox/sub/out`, new Uint8Array(3 * MB).fill(1));
    await Deno.writeFile(`${dir}/volume/data`, new Uint8Array(8 * MB).fill(1));
    await Deno.symlink(`${dir}/volume`, `${dir}/sandbox/data`);
    const usage = await directoryUsage([`${dir}/sandbox`, `${dir}/missing`]);
    const bytes = usage.get(`${dir}/sandbox`)!;
    assert.ok(bytes >= 3 * MB && bytes < 4 * MB, `sandbox usage ${bytes}`);
    assert.equal(usage.has(`${dir}/missing`), false);
    const aborted = new AbortController();
    aborted.abort();
    assert.equal((await directoryUsage([`${dir}/sandbox`], aborted.signal)).size, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the file system's usage is df's Use%, as statfs's block counts give it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "disk_usage_test_" });
  try {
    const usage = await filesystemUsage(dir);
    // statfs through another tool: blocks, free blocks, blocks available to a user who is not root.
    const out = await new Deno.Command("stat", { args: ["-f", "-c", "%b %f %a", dir] }).output();
    const [blocks, free, available] = new TextDecoder().decode(out.stdout).trim().split(" ").map(Number);
    const expected = (blocks - free) / (blocks - free + available);
    assert.ok(usage !== undefined && Math.abs(usage - expected) < 0.01, `usage ${usage}, statfs ${expected}`);
    assert.equal(await filesystemUsage(`${dir}/missing`), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
