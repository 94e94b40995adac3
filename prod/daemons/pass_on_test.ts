/** Streams passed on from another process: a stop cuts them at once, and those that end are forgotten. */
import assert from "node:assert/strict";
import { passOn } from "./pass_on.ts";
import { settlesWithin } from "../settle.ts";

const enc = new TextEncoder();

/** A stream read from another process that sends one line and then neither ends nor fails, whatever is done. */
function stuckUpstream(): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(enc.encode("Watch pod-1@jobmgr@a\n"));
    },
    pull: () => new Promise(() => {}),
  });
}

Deno.test("a stop cuts a passed-on stream at once, though the one read from goes on: the server shuts down", async () => {
  const live = new Set<() => void>();
  // Aborting this fetch's controller does nothing to the stream read from, as a read already waiting on an
  // aborted fetch's body sometimes went on waiting.
  const abort = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      new Response(passOn(stuckUpstream(), abort, live), {
        headers: { "content-type": "application/x-ndjson" },
      }),
  );
  const res = await fetch(`http://127.0.0.1:${server.addr.port}/`);
  const reader = res.body!.getReader();
  assert.equal(new TextDecoder().decode((await reader.read()).value), "Watch pod-1@jobmgr@a\n");
  assert.equal(live.size, 1);
  const rest = reader.read().then(({ done }) => done ? "ended" : "more", (e) => `broke: ${e}`);

  for (const cut of live) cut();
  assert.equal(await settlesWithin(server.shutdown(), 10_000), true, "the server waited for the stream");
  assert.equal(abort.signal.aborted, true, "the fetch of the stream read from is aborted too");
  assert.equal(live.size, 0);
  // The client sees the stream end with nothing more: no last line, so it knows the watch was cut.
  assert.equal(await rest, "ended");
});

Deno.test("a passed-on stream that ends, or whose client leaves, is no longer held", async () => {
  const live = new Set<() => void>();
  const ended = passOn(new Response("a\nb\n").body!, new AbortController(), live);
  assert.equal(live.size, 1);
  assert.equal(await new Response(ended).text(), "a\nb\n");
  assert.equal(live.size, 0);

  const left = passOn(stuckUpstream(), new AbortController(), live);
  const reader = left.getReader();
  await reader.read();
  await reader.cancel("the client left");
  assert.equal(live.size, 0);
});
