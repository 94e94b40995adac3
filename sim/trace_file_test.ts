/** Reading trace files: gzip members and truncation, rows streamed as they come, the parse kept for reuse. */
import assert from "node:assert/strict";
import { loadScenarioFile } from "./scenario_load.ts";
import { parseTaskEvents, TRACE_EVENTS as E, type TraceJob } from "./trace.ts";
import { MAX_LINE_CHARS, parseTaskEventStream, readTaskEvents, TraceCache } from "./trace_file.ts";
import { writeTraceScenario } from "./testing.ts";

/** One task_events row (time in trace seconds), a one-core task of a 16-core machine. */
function row(sec: number, job: string, index: number, type: number, user = "u1"): string {
  return [sec * 1e6, "", job, index, "", type, user, "1", "2", "0.0625", "0.01", "0.0001", "0"].join(",");
}

/** Jobs 1 (two tasks, 10 s each) and 2 (one task, 20 s), submitted at 0 and 30 s. */
const FIRST = [
  row(0, "1", 0, E.SUBMIT),
  row(0, "1", 1, E.SUBMIT),
  row(1, "1", 0, E.SCHEDULE),
  row(1, "1", 1, E.SCHEDULE),
  row(11, "1", 0, E.FINISH),
  row(11, "1", 1, E.FINISH),
].join("\n") + "\n";
const SECOND =
  [row(30, "2", 0, E.SUBMIT), row(31, "2", 0, E.SCHEDULE), row(51, "2", 0, E.FINISH)].join("\n") +
  "\n";

async function gzip(text: string): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A scenario replaying `trace` (a file name in `dir`); its path. */
const scenario = (dir: string, trace: string) => writeTraceScenario(dir, trace, 100);

Deno.test("a gzip file of several members (cat a.gz b.gz) is read whole, as zcat reads it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const [a, b] = [await gzip(FIRST), await gzip(SECOND)];
    const joined = new Uint8Array(a.length + b.length);
    joined.set(a), joined.set(b, a.length);
    await Deno.writeFile(`${dir}/joined.csv.gz`, joined);
    const loaded = await loadScenarioFile(await scenario(dir, "joined.csv.gz"));
    assert.deepEqual(loaded.traces?.g, parseTaskEvents(FIRST + SECOND, `${dir}/joined.csv.gz`));
    assert.deepEqual(loaded.traces?.g.map((j) => j.jobId), ["1", "2"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a truncated or corrupt gzip file is refused, saying it looks truncated or is no gzip", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await scenario(dir, "t.csv.gz");
    const where = `${file}:12: workloads[0].trace.file: cannot read trace ${dir}/t.csv.gz`;
    const whole = await gzip(FIRST + SECOND);
    // Cut in the deflate data, and in the 8-byte trailer (whose checksum the web's stream then misses).
    for (const cut of [whole.length - 20, whole.length - 4]) {
      await Deno.writeFile(`${dir}/t.csv.gz`, whole.subarray(0, cut));
      await assert.rejects(() => loadScenarioFile(file), {
        name: "ScenarioError",
        message: `${where}: the gzip stream ends early: the file looks truncated (a download or copy cut ` +
          "short?); `gzip -t` checks it",
      });
    }
    await Deno.writeTextFile(`${dir}/t.csv.gz`, FIRST);
    await assert.rejects(() => loadScenarioFile(file), {
      name: "ScenarioError",
      message: `${where}: not a valid gzip file (incorrect header check); \`gzip -t\` checks it`,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a trace streams: a bad row fails as soon as it is read, before the rest of the file comes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // A pipe: the test writes the rows, and the loader sees them only as they come.
    const mkfifo = await new Deno.Command("mkfifo", { args: [`${dir}/t.csv`] }).output();
    assert.ok(mkfifo.success, "mkfifo");
    const file = await scenario(dir, "t.csv");
    let loaded = false;
    const failure = loadScenarioFile(file).then(() => undefined, (e: Error) => e).finally(
      () => (loaded = true),
    );
    const pipe = await Deno.open(`${dir}/t.csv`, { write: true });
    await pipe.write(new TextEncoder().encode(`${row(0, "1", 0, E.SUBMIT)}\n1,2,3\n`));
    // The rest of the file is not written until the load has failed, or 5 s have passed.
    for (let i = 0; i < 50 && !loaded; i++) await new Promise((r) => setTimeout(r, 100));
    const early = loaded;
    await pipe.write(new TextEncoder().encode(SECOND)).catch(() => 0);
    pipe.close();
    assert.equal(
      (await failure)?.message,
      `${dir}/t.csv line 2: expected 13 columns (task_events of 2011), got 3`,
    );
    assert.ok(early, "failed only once the whole file was read");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("rows cut across chunks (a character's bytes, a CRLF) read as the whole text does", async () => {
  const text = [
    row(0, "1", 0, E.SUBMIT, "usér"),
    row(1, "1", 0, E.SCHEDULE, "用户"),
    row(11, "1", 0, E.FINISH),
  ].join("\r\n") + "\r\n" + SECOND.trimEnd(); // no line break at the end
  const bytes = new TextEncoder().encode(text);
  for (const size of [1, 2, 3, 7, 64]) {
    let at = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (at >= bytes.length) return c.close();
        c.enqueue(bytes.slice(at, at += size));
      },
    });
    assert.deepEqual(
      await parseTaskEventStream(stream, "c.csv", false),
      parseTaskEvents(text, "c.csv"),
      `${size}`,
    );
  }
});

Deno.test("a file with no line break in its first MiB is refused rather than read into one string", async () => {
  const big = new TextEncoder().encode("x".repeat(MAX_LINE_CHARS + 1));
  await assert.rejects(() => parseTaskEventStream(new Blob([big, big]).stream(), "b.csv", false), {
    name: "TraceError",
    message:
      `b.csv line 1: longer than ${MAX_LINE_CHARS} characters with no line break: not a task_events CSV file`,
  });
});

Deno.test("a TraceCache parses a file once while its modification time and size stay as they were", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/t.csv`;
    await Deno.writeTextFile(path, FIRST);
    const reads: string[] = [];
    const cache = new TraceCache((p) => (reads.push(p), readTaskEvents(p)));
    const first = await cache.get(path);
    assert.equal(await cache.get(path), first, "the same parse");
    assert.equal(reads.length, 1);
    // The same size, an hour later: read again.
    const later = new Date(Date.now() + 3_600_000);
    await Deno.utime(path, later, later);
    assert.notEqual(await cache.get(path), first);
    assert.equal(reads.length, 2);
    // Another size at the same time: read again, and the new rows are what comes back.
    await Deno.writeTextFile(path, FIRST + SECOND);
    await Deno.utime(path, later, later);
    const grown: TraceJob[] = await cache.get(path);
    assert.deepEqual(grown.map((j) => j.jobId), ["1", "2"]);
    assert.equal(reads.length, 3);
    // A file that fails is not kept: the next get reads it again.
    await Deno.writeTextFile(path, "1,2,3\n");
    await assert.rejects(() => cache.get(path), { name: "TraceError" });
    await assert.rejects(() => cache.get(path), { name: "TraceError" });
    assert.equal(reads.length, 5);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
