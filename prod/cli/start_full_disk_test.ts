/**
 * Starting on a full disk is refused in one line naming the path, exit 1, not with a stack trace: `peloton
 * up`, a daemon and `peloton minicluster`, on a data dir or a SQLite store there. The disk is a small tmpfs,
 * filled up, so the test needs root (and is skipped without it).
 */
import assert from "node:assert/strict";
import { runPeloton } from "../testing.ts";

/** Mounts a 64 KiB tmpfs at a new dir and fills it; undefined where this process cannot mount one. */
async function fullDisk(): Promise<{ dir: string; unmount(): Promise<void> } | undefined> {
  const dir = await Deno.makeTempDir({ prefix: "peloton-full-disk-" });
  const mount = await new Deno.Command("mount", { args: ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir] })
    .output().catch(() => undefined);
  if (!mount?.success) {
    await Deno.remove(dir);
    return undefined;
  }
  try {
    await Deno.writeFile(`${dir}/fill`, new Uint8Array(1 << 20));
  } catch { /* full: what was wanted */ }
  return {
    dir,
    async unmount() {
      await new Deno.Command("umount", { args: [dir] }).output();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test({
  name: "a start on a full disk says which data dir or store it could not write, in one line, exit 1",
  ignore: Deno.uid() !== 0,
  async fn() {
    const full = await fullDisk();
    if (!full) {
      console.error("skipped: cannot mount a tmpfs here");
      return;
    }
    const ok = await Deno.makeTempDir({ prefix: "peloton-full-disk-ok-" });
    const d = full.dir;
    try {
      const runs = await Promise.all([
        runPeloton(["up", "--port", "0", "--data-dir", `${d}/up`]),
        runPeloton(["up", "--port", "0", "--data-dir", `${ok}/up`, "--store", `sqlite:${d}/up.sqlite`]),
        runPeloton(["jobmgr", "--port", "0", "--data-dir", `${d}/jobmgr`]),
        runPeloton(["minicluster", "--port", "0", "--agents", "1", "--data-dir", `${d}/mesos`]),
      ]);
      const expected = [
        new RegExp(`^peloton up: data dir ${d}/up cannot be used: cannot write ${d}/up/owner: No space left`),
        new RegExp(`^peloton up: Cannot claim SQLite store ${d}/up.sqlite: No space left`),
        new RegExp(
          `^peloton jobmgr: data dir ${d}/jobmgr cannot be used: cannot write ${d}/jobmgr/jobmgr\\.`,
        ),
        new RegExp(
          `^peloton minicluster: data dir ${d}/mesos cannot be used: cannot write ${d}/mesos/owner: `,
        ),
      ];
      runs.forEach((r, i) => {
        assert.equal(r.code, 1, r.err);
        assert.equal(r.err.split("\n").length, 1, r.err);
        assert.match(r.err, expected[i]);
      });
    } finally {
      await full.unmount();
      await Deno.remove(ok, { recursive: true });
    }
  },
});
