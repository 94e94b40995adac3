/** The WatchService's HTTP stream against a fake job manager: lines, ends, refusals, overflow and Cancels. */
import assert from "node:assert/strict";
import { routeProcedure } from "../core/api/procedures.ts";
import type { ApiErrorCode, ApiRequest, Message } from "../core/messages.ts";
import type { Address, Receiver } from "../core/ports/transport.ts";
import { ApiError, PelotonClient } from "./cli/client.ts";
import { givesDeadline, ttlOf } from "./daemons/api_request.ts";
import { waitFor } from "./testing.ts";
import { CANCEL_PROCEDURE, type StreamTransport, WATCH_PROCEDURE, WatchStreams } from "./watch_stream.ts";

const WATCH_ID = "pod-1@jobmgr";

/**
 * A transport with a job manager behind it that answers a Watch with `reply` (default `{watchId}`) and a
 * Cancel with a watch-end and `ok`, unless told otherwise; delivery is asynchronous, as the real ones'.
 */
class FakeCore implements StreamTransport {
  readonly receivers = new Map<Address, Receiver>();
  readonly calls: ApiRequest[] = [];
  reply: { body?: unknown; error?: { code: ApiErrorCode; message: string } } | undefined = {
    body: { watchId: WATCH_ID },
  };
  cancelError: { code: ApiErrorCode; message: string } | undefined;

  register(address: Address, receiver: Receiver): void {
    this.receivers.set(address, receiver);
  }

  unregister(address: Address): void {
    this.receivers.delete(address);
  }

  send(to: Address, msg: Message): void {
    assert.equal(to, "jobmgr");
    assert.equal(msg.kind, "api");
    this.calls.push(msg);
    if (msg.procedure === WATCH_PROCEDURE && this.reply) {
      this.deliver(msg.replyTo, { kind: "api-reply", reqId: msg.reqId, ...this.reply });
    }
    if (msg.procedure === CANCEL_PROCEDURE) {
      if (!this.cancelError) {
        this.deliver(msg.replyTo, {
          kind: "watch-end",
          watchId: WATCH_ID,
          error: { code: "cancelled", message: `watch cancelled: ${WATCH_ID}` },
        });
      }
      this.deliver(msg.replyTo, { kind: "api-reply", reqId: msg.reqId, body: {}, error: this.cancelError });
    }
  }

  /** Sends a message to the stream's address as the job manager would (after the current turn). */
  deliver(to: Address, msg: Message): void {
    setTimeout(() => this.receivers.get(to)?.receive(msg), 0);
  }

  /** The one stream address registered now. */
  get stream(): Address {
    assert.equal(this.receivers.size, 1, "one stream registered");
    return [...this.receivers.keys()][0];
  }

  event(to: Address, n: number): void {
    this.deliver(to, {
      kind: "watch-event",
      watchId: WATCH_ID,
      response: { watchId: WATCH_ID, pods: [{ podName: { value: `job-${n}` } }] },
    });
  }

  cancels(): unknown[] {
    return this.calls.filter((c) => c.procedure === CANCEL_PROCEDURE).map((c) => c.body);
  }
}

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

/** Ticks until `done` holds, for at most 5 s: what happens after a timer, however busy the machine. */
async function until(done: () => boolean): Promise<void> {
  for (let waited = 0; !done() && waited < 5_000; waited += 5) await tick();
}

/** Reads NDJSON lines from a body until it ends. */
async function allLines(body: ReadableStream<Uint8Array>): Promise<unknown[]> {
  const text = await new Response(body).text();
  return text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

async function nextLine(reader: ReadableStreamDefaultReader<string>): Promise<unknown> {
  const { value, done } = await reader.read();
  assert.equal(done, false);
  return JSON.parse(value!);
}

function lineReader(body: ReadableStream<Uint8Array>): ReadableStreamDefaultReader<string> {
  let rest = "";
  return body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new TransformStream<string, string>({
      transform(chunk, c) {
        rest += chunk;
        for (let nl; (nl = rest.indexOf("\n")) >= 0; rest = rest.slice(nl + 1)) c.enqueue(rest.slice(0, nl));
      },
    }),
  ).getReader();
}

Deno.test("the WatchService routes to the job manager by its full and short names", () => {
  assert.deepEqual(routeProcedure(WATCH_PROCEDURE), { procedure: WATCH_PROCEDURE, daemon: "jobmgr" });
  assert.deepEqual(routeProcedure("WatchService.Cancel"), { procedure: CANCEL_PROCEDURE, daemon: "jobmgr" });
});

Deno.test("a watch streams its id, then one line per event, then the end's error as the last line", async () => {
  const core = new FakeCore();
  const streams = new WatchStreams({ transport: core, base: "api/http" });
  const body = { podFilter: { jobId: { value: "j" } } };
  const opened = await streams.open("jobmgr", body, 1000);
  assert.equal(opened.code, "ok");
  const res = opened.response;
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/x-ndjson");
  assert.equal(res.headers.get("rpc-status"), "success", "yarpc's, for a reply that is not an error");
  assert.deepEqual(core.calls[0].body, body);
  assert.match(core.calls[0].replyTo, /^api\/http\/watch\/\d+$/);

  const lines = lineReader(res.body!);
  assert.deepEqual(await nextLine(lines), { watchId: WATCH_ID });
  const at = core.stream;
  core.event(at, 0);
  core.event(at, 1);
  assert.deepEqual(await nextLine(lines), { watchId: WATCH_ID, pods: [{ podName: { value: "job-0" } }] });
  assert.deepEqual(await nextLine(lines), { watchId: WATCH_ID, pods: [{ podName: { value: "job-1" } }] });
  const end = { code: "unavailable" as const, message: "the job manager stopped; watch again" };
  core.deliver(at, { kind: "watch-end", watchId: WATCH_ID, error: end });
  assert.deepEqual(await nextLine(lines), { error: end });
  assert.equal((await lines.read()).done, true);
  assert.equal(core.receivers.size, 0, "the stream's address is let go");
  assert.equal(streams.size, 0);
  assert.deepEqual(core.cancels(), [], "the job manager ended it: nothing to cancel");
});

Deno.test("a refused watch is a plain RPC error, not a stream", async () => {
  const core = new FakeCore();
  const message = "podFilter, statelessJobFilter: expected exactly one of them";
  core.reply = { error: { code: "invalid-argument", message } };
  const streams = new WatchStreams({ transport: core, base: "api/http" });
  const opened = await streams.open("jobmgr", {}, 1000);
  assert.equal(opened.code, "invalid-argument");
  assert.equal(opened.response.status, 400);
  // yarpc's form: the code in Rpc-Error-Code, the message as text.
  assert.equal(opened.response.headers.get("rpc-error-code"), "invalid-argument");
  assert.equal(opened.response.headers.get("content-type"), "text/plain; charset=utf8");
  assert.equal(await opened.response.text(), `${message}\n`);
  assert.equal(core.receivers.size, 0);
});

Deno.test("a client that does not read overflows: the stream ends aborted and the watch is cancelled", async () => {
  const core = new FakeCore();
  const streams = new WatchStreams({ transport: core, base: "api/http", maxQueued: 3 });
  const { response } = await streams.open("jobmgr", { podFilter: {} }, 1000);
  const at = core.stream;
  for (let n = 0; n < 6; n++) core.event(at, n);
  await tick(20);
  assert.deepEqual(core.cancels(), [{ watchId: WATCH_ID }]);
  const lines = await allLines(response.body!);
  // The id and two events fill the 3 places; the third is one too many, and the last line says so.
  assert.deepEqual(lines, [
    { watchId: WATCH_ID },
    { watchId: WATCH_ID, pods: [{ podName: { value: "job-0" } }] },
    { watchId: WATCH_ID, pods: [{ podName: { value: "job-1" } }] },
    { watchId: WATCH_ID, pods: [{ podName: { value: "job-2" } }] },
    { error: { code: "aborted", message: `event overflow: ${WATCH_ID}` } },
  ]);
  assert.equal(core.receivers.size, 0, "let go once the Cancel was answered");
});

Deno.test("a client that goes away has its watch cancelled", async () => {
  const core = new FakeCore();
  const streams = new WatchStreams({ transport: core, base: "api/http" });
  const { response } = await streams.open("jobmgr", { podFilter: {} }, 1000);
  const lines = lineReader(response.body!);
  assert.deepEqual(await nextLine(lines), { watchId: WATCH_ID });
  core.event(core.stream, 9); // on its way as the client leaves: dropped quietly
  await lines.cancel();
  await tick(20);
  assert.deepEqual(core.cancels(), [{ watchId: WATCH_ID }]);
  assert.equal(core.receivers.size, 0, "let go once the Cancel was answered");
});

Deno.test("a Cancel refused (a Read lockdown) is sent again; the address stays while the watch lives", async () => {
  const core = new FakeCore();
  core.cancelError = { code: "internal", message: "All read APIs are locked down" };
  const streams = new WatchStreams({ transport: core, base: "api/http", cancelWaitMs: 30 });
  const { response } = await streams.open("jobmgr", { podFilter: {} }, 1000);
  await response.body!.cancel();
  await tick(45);
  assert.equal(core.cancels().length, 2);
  assert.equal(core.receivers.size, 1);
  core.cancelError = undefined;
  await tick(60);
  assert.equal(core.receivers.size, 0);
});

Deno.test("no reply within the TTL is deadline-exceeded; a watch the late reply opens is cancelled", async () => {
  const core = new FakeCore();
  core.reply = undefined;
  const streams = new WatchStreams({ transport: core, base: "api/http" });
  const opened = await streams.open("jobmgr", { podFilter: {} }, 20);
  assert.equal(opened.code, "deadline-exceeded");
  assert.equal(opened.response.status, 504);
  core.deliver(core.stream, { kind: "api-reply", reqId: core.calls[0].reqId, body: { watchId: WATCH_ID } });
  await until(() => core.cancels().length > 0 && core.receivers.size === 0);
  assert.deepEqual(core.cancels(), [{ watchId: WATCH_ID }]);
  assert.equal(core.receivers.size, 0);
});

Deno.test("a caller's deadline bounds the whole stream: its last line is deadline-exceeded, its watch cancelled", async () => {
  const core = new FakeCore();
  const streams = new WatchStreams({ transport: core, base: "api/http" });
  // The reply comes on a 0 ms timer, so before the deadline's, however busy the machine.
  const opened = await streams.open("jobmgr", { podFilter: {} }, 20, true);
  assert.equal(opened.code, "ok");
  // As a gRPC stream past its deadline ends DEADLINE_EXCEEDED, in the framing of the stream's other ends.
  assert.deepEqual(await allLines(opened.response.body!), [
    { watchId: WATCH_ID },
    {
      error: {
        code: "deadline-exceeded",
        message: `deadline exceeded: ${WATCH_ID} ran for its 20 ms (Context-TTL-Ms)`,
      },
    },
  ]);
  await tick(20);
  assert.deepEqual(core.cancels(), [{ watchId: WATCH_ID }]);
  assert.equal(core.receivers.size, 0, "let go once the Cancel was answered");

  // Without one (no Context-TTL-Ms given), the TTL bounds the first answer only: the stream runs on.
  const open = await streams.open("jobmgr", { podFilter: {} }, 20);
  const lines = lineReader(open.response.body!);
  assert.deepEqual(await nextLine(lines), { watchId: WATCH_ID });
  await tick(40);
  core.event(core.stream, 1);
  assert.deepEqual(await nextLine(lines), { watchId: WATCH_ID, pods: [{ podName: { value: "job-1" } }] });
  streams.endAll("unavailable", "the server is stopping; watch again");
  assert.deepEqual(await nextLine(lines), {
    error: { code: "unavailable", message: "the server is stopping; watch again" },
  });
});

Deno.test("a stopping front ends every stream unavailable and cancels its watch", async () => {
  const core = new FakeCore();
  const streams = new WatchStreams({ transport: core, base: "api/http" });
  const { response } = await streams.open("jobmgr", { podFilter: {} }, 1000);
  streams.endAll("unavailable", "the server is stopping; watch again");
  assert.equal(streams.size, 0);
  assert.equal(core.receivers.size, 0);
  assert.deepEqual(core.cancels(), [{ watchId: WATCH_ID }]);
  assert.deepEqual(await allLines(response.body!), [
    { watchId: WATCH_ID },
    { error: { code: "unavailable", message: "the server is stopping; watch again" } },
  ]);
});

Deno.test("over HTTP: the client reads the lines as they come, and leaving cancels the watch", async () => {
  const core = new FakeCore();
  const streams = new WatchStreams({ transport: core, base: "api/http" });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async () => (await streams.open("jobmgr", { podFilter: {} }, 1000)).response,
  );
  try {
    const client = new PelotonClient({ url: `http://127.0.0.1:${server.addr.port}` });
    const stop = new AbortController();
    const seen: unknown[] = [];
    for await (const res of client.stream(WATCH_PROCEDURE, { podFilter: {} }, stop.signal)) {
      seen.push(res);
      if (seen.length === 1) core.event(core.stream, 0);
      else stop.abort();
    }
    assert.deepEqual(seen, [
      { watchId: WATCH_ID },
      { watchId: WATCH_ID, pods: [{ podName: { value: "job-0" } }] },
    ]);
    await waitFor(
      "the watch cancelled",
      () => Promise.resolve(core.cancels().length ? true : undefined),
      5000,
    );
    assert.deepEqual(core.cancels(), [{ watchId: WATCH_ID }]);

    // The end line is thrown as the error it names.
    const ended = (async () => {
      for await (const _ of client.stream(WATCH_PROCEDURE, { podFilter: {} })) {
        core.deliver(core.stream, {
          kind: "watch-end",
          watchId: WATCH_ID,
          error: { code: "cancelled", message: `watch cancelled: ${WATCH_ID}` },
        });
      }
    })();
    await assert.rejects(
      ended,
      (e: ApiError) => e.code === "cancelled" && e.detail === `watch cancelled: ${WATCH_ID}`,
    );
  } finally {
    await server.shutdown();
  }
});

Deno.test("a CLI watch sends no Context-TTL-Ms, so a front that ends streams at one lets it run past its timeout", async () => {
  const core = new FakeCore();
  const streams = new WatchStreams({ transport: core, base: "api/http" });
  const sent: (string | null)[] = [];
  // As the HTTP fronts open a watch: the caller's deadline, if it gave one, bounds the stream.
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    sent.push(req.headers.get("context-ttl-ms"));
    const ttl = ttlOf(req);
    if (ttl instanceof Response) return ttl;
    return (await streams.open("jobmgr", { podFilter: {} }, ttl, givesDeadline(req))).response;
  });
  try {
    const client = new PelotonClient({ url: `http://127.0.0.1:${server.addr.port}`, timeoutMs: 1000 });
    const stop = new AbortController();
    const seen: unknown[] = [];
    for await (const res of client.stream(WATCH_PROCEDURE, { podFilter: {} }, stop.signal)) {
      seen.push(res);
      if (seen.length > 1) stop.abort();
      else {
        // Well past the client's timeout, which covers the first answer only.
        await tick(1300);
        core.event(core.stream, 0);
      }
    }
    assert.deepEqual(sent, [null]);
    assert.deepEqual(seen, [
      { watchId: WATCH_ID },
      { watchId: WATCH_ID, pods: [{ podName: { value: "job-0" } }] },
    ]);
  } finally {
    await server.shutdown();
  }
});
