/** RecordIO tests: the documented wire example, byte-exact lengths, random re-chunking, and broken streams. */
import assert from "node:assert/strict";
import { randomInt, seededPrng } from "../../core/ports/prng.ts";
import { encodeRecord, readRecords, RecordIODecoder, RecordIOError } from "./recordio.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

function decodeAll(chunks: Uint8Array[]): string[] {
  const d = new RecordIODecoder();
  const out = chunks.flatMap((c) => d.decode(c)).map((r) => dec.decode(r));
  d.finish();
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Splits bytes at random positions: many 1-byte pieces, some large ones, empty chunks too. */
function rechunk(bytes: Uint8Array, prng: () => number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length;) {
    const n = prng() < 0.1 ? 0 : prng() < 0.5 ? 1 : randomInt(prng, 1, 64);
    out.push(bytes.subarray(i, i + n));
    i += n;
  }
  return out;
}

// The corrected form of the docs' example (docs/recordio.md, scheduler-http-api.md): each length is the
// byte count and the next length follows the previous JSON's last byte directly.
const SUBSCRIBED =
  '{"type": "SUBSCRIBED","subscribed": {"framework_id": {"value":"12220-3440-12532-2345"},"heartbeat_interval_seconds":15.0}}';
const HEARTBEAT = '{"type":"HEARTBEAT"}';

Deno.test("RecordIO: the documented stream decodes byte for byte", () => {
  const wire = `${SUBSCRIBED.length}\n${SUBSCRIBED}20\n${HEARTBEAT}`;
  assert.equal(HEARTBEAT.length, 20);
  assert.deepEqual(decodeAll([enc.encode(wire)]), [SUBSCRIBED, HEARTBEAT]);
  assert.equal(dec.decode(concat([encodeRecord(SUBSCRIBED), encodeRecord(HEARTBEAT)])), wire);
});

Deno.test("RecordIO: lengths count UTF-8 bytes, not UTF-16 code units", () => {
  const json = JSON.stringify({ message: "tâche démarrée ✓ 日本 🚀" });
  const record = encodeRecord(json);
  const header = dec.decode(record.subarray(0, record.indexOf(0x0a)));
  assert.equal(Number(header), enc.encode(json).length);
  assert.notEqual(Number(header), json.length);
  // Split inside every multi-byte character.
  for (let cut = 1; cut < record.length; cut++) {
    assert.deepEqual(decodeAll([record.subarray(0, cut), record.subarray(cut)]), [json], `cut at ${cut}`);
  }
});

Deno.test("RecordIO: random re-chunking of many records gives the same records", () => {
  for (let seed = 1; seed <= 200; seed++) {
    const prng = seededPrng(seed);
    const records = Array.from({ length: randomInt(prng, 1, 30) }, (_, i) =>
      JSON.stringify({
        type: "UPDATE",
        i,
        text: "é日🚀x".repeat(randomInt(prng, 0, 40)),
        pad: "a".repeat(randomInt(prng, 0, 300)),
      }));
    const wire = concat(records.map((r) => encodeRecord(r)));
    assert.deepEqual(decodeAll(rechunk(wire, prng)), records, `rerun with seed ${seed}`);
  }
});

Deno.test("RecordIO: several records in one chunk and a record spanning many chunks", () => {
  const big = JSON.stringify({ data: "x".repeat(100_000) });
  const wire = concat([encodeRecord(HEARTBEAT), encodeRecord(HEARTBEAT), encodeRecord(big)]);
  const d = new RecordIODecoder();
  assert.equal(d.decode(wire.subarray(0, 50)).length, 2);
  assert.equal(d.atBoundary, false);
  for (let i = 50; i < wire.length - 1000; i += 1000) {
    assert.equal(d.decode(wire.subarray(i, i + 1000)).length, 0);
  }
  const last = Math.floor((wire.length - 50) / 1000) * 1000 + 50;
  const done = d.decode(wire.subarray(last));
  assert.equal(done.length, 1);
  assert.equal(dec.decode(done[0]), big);
  d.finish();
});

Deno.test("RecordIO: broken streams fail with a reason, and stay failed", () => {
  const cases: [string, string | Uint8Array, RegExp][] = [
    ["non-digit length", "1a\n{}", /byte 0x61 in a record length/],
    ["zero length", "0\n", /record length is 0/],
    ["empty length line", "\n{}", /empty record length/],
    ["length with spaces", " 2\n{}", /expected a digit/],
    ["over the limit", "99999999999\n", /exceeds the limit/],
  ];
  for (const [what, input, pattern] of cases) {
    const d = new RecordIODecoder();
    assert.throws(() => d.decode(typeof input === "string" ? enc.encode(input) : input), pattern, what);
    assert.throws(() => d.decode(enc.encode("2\n{}")), RecordIOError, `${what}: decoder stays failed`);
  }
  const truncated = new RecordIODecoder();
  truncated.decode(enc.encode('10\n{"a"'));
  assert.throws(() => truncated.finish(), /ended after 4 of 10 record bytes/);
  const inLength = new RecordIODecoder();
  inLength.decode(enc.encode("1"));
  assert.throws(() => inLength.finish(), /inside a length line/);
  assert.throws(() => encodeRecord(""), /must not be empty/);
  assert.throws(() => new RecordIODecoder(10).decode(enc.encode("11\n")), /limit of 10 bytes/);
});

Deno.test("RecordIO: readRecords decodes a byte stream and rejects invalid UTF-8 and truncation", async () => {
  const records = [SUBSCRIBED, HEARTBEAT, JSON.stringify({ m: "日本" })];
  const wire = concat(records.map((r) => encodeRecord(r)));
  const got: string[] = [];
  for await (const r of readRecords(ReadableStream.from(rechunk(wire, seededPrng(7))))) got.push(r);
  assert.deepEqual(got, records);

  const badUtf8 = concat([enc.encode("2\n"), new Uint8Array([0xc3, 0x28])]);
  await assert.rejects(async () => {
    for await (const _ of readRecords(ReadableStream.from([badUtf8]))) { /* drain */ }
  }, TypeError);
  await assert.rejects(async () => {
    for await (const _ of readRecords(ReadableStream.from([enc.encode("5\n{}")]))) { /* drain */ }
  }, /ended after 2 of 5/);
});

Deno.test("RecordIO: a consumer that stops early cancels the source stream", async () => {
  let cancelled = false;
  const source = new ReadableStream<Uint8Array>({
    pull(c) {
      c.enqueue(encodeRecord(HEARTBEAT));
    },
    cancel() {
      cancelled = true;
    },
  });
  for await (const r of readRecords(source)) {
    assert.equal(r, HEARTBEAT);
    break;
  }
  assert.equal(cancelled, true);
});

Deno.test("RecordIO: an aborted signal ends a read that waits on a silent stream", async () => {
  let cancelled = false;
  // One record, then silence: the next read would wait for ever.
  const source = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(encodeRecord(HEARTBEAT));
    },
    cancel() {
      cancelled = true;
    },
  });
  const controller = new AbortController();
  const got: string[] = [];
  await assert.rejects(async () => {
    for await (const r of readRecords(source, undefined, controller.signal)) {
      got.push(r);
      queueMicrotask(() => controller.abort("stream dropped"));
    }
  }, /Reading stopped: stream dropped/);
  assert.deepEqual(got, [HEARTBEAT]);
  assert.equal(cancelled, true);
});
