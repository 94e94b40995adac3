/** The archive file: a failed append leaves nothing behind, and a torn line costs only itself. */
import { deepStrictEqual as equal, match } from "node:assert/strict";
import type { ArchivedJob } from "../core/ports/archive.ts";
import { NdjsonArchive, readArchive } from "./archive_file.ts";
import { makeJob, makeTask } from "./store/store_suite.ts";
import { fillFileSystem } from "./disk_testing.ts";

const DAY_MS = Date.UTC(2026, 0, 2, 12);

function archived(jobId: string, description = "done", archivedAtMs = DAY_MS): ArchivedJob {
  return { archivedAtMs, job: makeJob(jobId, { description }), tasks: [makeTask(jobId, 0)] };
}

/** Reads `path` back, with the warnings it gave. */
async function readBack(path: string): Promise<{ jobs: string[]; warnings: string[] }> {
  const warnings: string[] = [];
  const jobs = await readArchive(path, (w) => warnings.push(w));
  return { jobs: jobs.map((j) => j.job.jobId), warnings };
}

Deno.test("readArchive skips a torn line with a warning naming the file and line, and keeps every other job", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-archive-" });
  try {
    const path = `${dir}/jobs-2026-01-02.ndjson`;
    const line = (id: string) => JSON.stringify(archived(id));
    // As a failed append followed by a successful run left a file: a torn line with the next run's first
    // line joined to it, and an append cut short at the very end.
    await Deno.writeTextFile(
      path,
      [line("a"), line("torn").slice(0, 120) + line("b"), line("c"), line("end").slice(0, 80)].join("\n"),
    );
    const { jobs, warnings } = await readBack(path);
    equal(jobs, ["a", "b", "c"]);
    equal(warnings.length, 2, warnings.join("\n"));
    match(
      warnings[0],
      new RegExp(`^${path} line 2: skipped 120 characters torn by a failed or interrupted write`),
    );
    match(warnings[0], /kept the whole record after them/);
    match(warnings[1], new RegExp(`^${path} line 4: skipped 80 characters`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("NdjsonArchive: a write after a line torn by a crash ends that line first, so its own lines are whole", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-archive-" });
  try {
    const archive = new NdjsonArchive(dir);
    const path = archive.fileFor(DAY_MS);
    await archive.write([archived("a")]);
    await Deno.writeTextFile(path, JSON.stringify(archived("torn")).slice(0, 100), { append: true });
    await archive.write([archived("b"), archived("c")]);
    const lines = (await Deno.readTextFile(path)).split("\n");
    equal(lines.length, 5, "four lines and the empty string after the last newline");
    equal(JSON.parse(lines[2]).job.jobId, "b");
    equal(JSON.parse(lines[3]).job.jobId, "c");
    const { jobs, warnings } = await readBack(path);
    equal(jobs, ["a", "b", "c"]);
    equal(warnings.length, 1);
    match(warnings[0], /line 2: skipped 100 characters/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

async function run(...args: string[]): Promise<void> {
  const out = await new Deno.Command(args[0], { args: args.slice(1), stderr: "piped" }).output();
  if (!out.success) throw new Error(`${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
}

Deno.test({
  name:
    "NdjsonArchive on a full disk (a tmpfs; needs root): a failed append is cut back and the next run's lines read whole",
  ignore: Deno.uid() !== 0,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-archive-tmpfs-" });
    await run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir);
    try {
      const archive = new NdjsonArchive(`${dir}/archive`);
      const path = archive.fileFor(DAY_MS);
      await archive.write([archived("a")]);
      const before = await Deno.readFile(path);
      await fillFileSystem(`${dir}/filler`);
      // Its first bytes fit in the file's last block; the rest finds the disk full.
      const failed = await archive.write([archived("big", "x".repeat(64 * 1024)), archived("after")]).then(
        () => undefined,
        (err: Error) => err,
      );
      match(String(failed), /No space left on device/);
      equal(await Deno.readFile(path), before, "the file is as it was before the failed append");
      match(failed!.message, new RegExp(`^Cannot archive 2 jobs to ${path}: No space left on device`));
      // A run across two days: the first day's lines are appended whole and synced, the next day's file
      // finds the disk full. The first is cut back too: the run deletes nothing, so it archives them again.
      const nextDay = archive.fileFor(DAY_MS + 86_400_000);
      const across = [archived("same-day"), archived("next-day", "x".repeat(64 * 1024), DAY_MS + 86_400_000)];
      match(String(await archive.write(across).catch((err) => err)), /No space left on device/);
      equal(await Deno.readFile(path), before, "the first day's file is as it was");
      equal((await Deno.readFile(nextDay)).length, 0);
      await Deno.remove(`${dir}/filler`);
      await archive.write([archived("b")]);
      const { jobs, warnings } = await readBack(path);
      equal(jobs, ["a", "b"]);
      equal(warnings, []);
    } finally {
      await run("umount", dir);
      await Deno.remove(dir, { recursive: true });
    }
  },
});
