/**
 * The job archiver's export in production: one JSON line per archived job, appended to a file per day
 * (`jobs-YYYY-MM-DD.ndjson`, UTC, or `jobs-<instance>-YYYY-MM-DD.ndjson` for a job manager that shares its
 * data dir with others) in the archive directory, and synced to disk before the archiver deletes anything.
 * Where Peloton's archiver streamed to Kafka; a shipper can tail these files.
 */
import type { ArchivedJob, ArchiveSink } from "../core/ports/archive.ts";

export class NdjsonArchive implements ArchiveSink {
  constructor(readonly dir: string, readonly prefix = "jobs") {}

  /** The file jobs archived at `ms` go to. */
  fileFor(ms: number): string {
    return `${this.dir}/${this.prefix}-${new Date(ms).toISOString().slice(0, 10)}.ndjson`;
  }

  async write(jobs: ArchivedJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await Deno.mkdir(this.dir, { recursive: true });
    const byFile = new Map<string, string[]>();
    for (const j of jobs) {
      const file = this.fileFor(j.archivedAtMs);
      let lines = byFile.get(file);
      if (!lines) byFile.set(file, lines = []);
      lines.push(JSON.stringify(j));
    }
    for (const [path, lines] of byFile) {
      const file = await Deno.open(path, { append: true, create: true });
      try {
        const bytes = new TextEncoder().encode(lines.join("\n") + "\n");
        for (let at = 0; at < bytes.length;) at += await file.write(bytes.subarray(at));
        await file.sync();
      } finally {
        file.close();
      }
    }
  }
}

/** Reads an archive file back: the jobs in it, in the order they were archived. */
export async function readArchive(path: string): Promise<ArchivedJob[]> {
  const text = await Deno.readTextFile(path);
  return text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as ArchivedJob);
}
