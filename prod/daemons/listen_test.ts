/** `listen`: a port it cannot bind is a `ListenError` that names the address. */
import assert from "node:assert/strict";
import { listen, ListenError } from "./listen.ts";

Deno.test("a taken port is a ListenError naming host and port; the server holding it serves on", async () => {
  const server = listen("127.0.0.1", 0, () => new Response("ok"));
  try {
    const port = server.addr.port;
    assert.throws(
      () => listen("127.0.0.1", port, () => new Response("")),
      (e) =>
        e instanceof ListenError && e.inUse && e.message === `port ${port} on 127.0.0.1 is already in use`,
    );
    assert.equal(await (await fetch(`http://127.0.0.1:${port}/`)).text(), "ok");
  } finally {
    await server.shutdown();
  }
});
