/**
 * The job archiver's export in production: one JSON line per archived job, appended to a file per day
 * (`jobs-YYYY-MM-DD.ndjson`, UTC, or `jobs-<instance>-YYYY-MM-DD.ndjson` for a job manager that shares its
 * data dir with others) in the archive directory, and synced to disk before the archiver deletes anything.
 * Where Peloton's archiver streamed to Kafka; a shipper can tail these files.
 */
import type { ArchivedJob, ArchiveSink } from "../core/ports/archive.ts";

/** How every line starts (`archivedAtMs` is the record's first key): where a whole record may begin. */
const RECORD_START = '{"archivedAtMs":';

/** A file appended to in this write, and its length before. */
interface Appended {
  path: string;
  file: Deno.FsFile;
  sizeBytes: number;
}

export class NdjsonArchive implements ArchiveSink {
  constructor(readonly dir: string, readonly prefix = "jobs") {}

  /** The file jobs archived at `ms` go to. */
  fileFor(ms: number): string {
    return `${this.dir}/${this.prefix}-${new Date(ms).toISOString().slice(0, 10)}.ndjson`;
  }

  /**
   * Appends the jobs' lines and syncs them. If any append fails (a full disk), every file is cut back to its
   * length before, so that neither a partial line (which the next run's first line would join) nor a whole
   * one of a job the store keeps (the run deletes nothing, and archives it again) is left behind.
   */
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
    const appended: Appended[] = [];
    try {
      for (const [path, lines] of byFile) {
        try {
          const file = await Deno.open(path, { read: true, append: true, create: true });
          appended.push({ path, file, sizeBytes: (await file.stat()).size });
          await appendLines(appended.at(-1)!, lines);
        } catch (err) {
          throw new Error(`Cannot archive ${lines.length} jobs to ${path}: ${(err as Error).message}`, {
            cause: err,
          });
        }
      }
    } catch (err) {
      const left = await cutBack(appended);
      if (left.length === 0) throw err;
      throw new Error(
        `${(err as Error).message}; and cannot take what was written back out: ${left.join("; ")}`,
        {
          cause: err,
        },
      );
    } finally {
      for (const a of appended) a.file.close();
    }
  }
}

async function appendLines({ file, sizeBytes }: Appended, lines: string[]): Promise<void> {
  // A line torn before (a crash mid-append) is ended first, so that it spoils none of these.
  const torn = sizeBytes > 0 && await lastByte(file, sizeBytes) !== 0x0a;
  const bytes = new TextEncoder().encode((torn ? "\n" : "") + lines.join("\n") + "\n");
  for (let at = 0; at < bytes.length;) at += await file.write(bytes.subarray(at));
  await file.sync();
}

/** The file's byte at `sizeBytes - 1` (an append goes to the end wherever the file was read). */
async function lastByte(file: Deno.FsFile, sizeBytes: number): Promise<number | undefined> {
  await file.seek(sizeBytes - 1, Deno.SeekMode.Start);
  const buf = new Uint8Array(1);
  return await file.read(buf) === 1 ? buf[0] : undefined;
}

/** Cuts each file back to its length before and syncs it; what could not be, as messages. */
async function cutBack(appended: Appended[]): Promise<string[]> {
  const left: string[] = [];
  for (const { path, file, sizeBytes } of appended) {
    try {
      await file.truncate(sizeBytes);
      await file.sync();
    } catch (err) {
      left.push(`${path}: ${(err as Error).message}`);
    }
  }
  return left;
}

/**
 * Reads an archive file back: the jobs in it, in the order they were archived. A line torn by a failed or
 * interrupted append is skipped with a warning naming the file and line, rather than failing the whole file;
 * a whole record appended after the torn part on the same line (by a writer that did not end it) is kept.
 */
export async function readArchive(
  path: string,
  warn: (message: string) => void = console.warn,
): Promise<ArchivedJob[]> {
  const text = await Deno.readTextFile(path);
  const jobs: ArchivedJob[] = [];
  text.split("\n").forEach((line, i) => {
    if (!line.trim()) return;
    try {
      jobs.push(JSON.parse(line));
      return;
    } catch (err) {
      const whole = wholeRecordAfter(line);
      const torn = whole ? whole.at : line.length;
      warn(
        `${path} line ${i + 1}: skipped ${torn} characters torn by a failed or interrupted write ` +
          `(${(err as Error).message})` + (whole ? "; kept the whole record after them" : ""),
      );
      if (whole) jobs.push(whole.job);
    }
  });
  return jobs;
}

/** The first whole record that starts after the line's own start and runs to its end, if any. */
function wholeRecordAfter(line: string): { at: number; job: ArchivedJob } | undefined {
  for (let at = line.indexOf(RECORD_START, 1); at > 0; at = line.indexOf(RECORD_START, at + 1)) {
    try {
      return { at, job: JSON.parse(line.slice(at)) };
    } catch {
      // a record's start inside the torn part; a later one may be whole
    }
  }
  return undefined;
}
