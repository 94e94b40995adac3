import assert from "node:assert/strict";
import { cli } from "../testing.ts";

Deno.test("host maintenance start|complete call Peloton's HostService with the host name", async () => {
  const calls: [string | null, unknown][] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.json();
    calls.push([req.headers.get("rpc-procedure"), body]);
    return Response.json({ hostname: body.hostname }, { headers: { "rpc-status": "ok" } });
  });
  try {
    const url = `http://127.0.0.1:${server.addr.port}`;
    const start = await cli(url, "host", "maintenance", "start", "h7");
    assert.equal(start.code, 0, start.err);
    assert.equal(start.out, "Host h7: maintenance started");
    const done = await cli(url, "host", "maintenance", "complete", "h7", "-j");
    assert.deepEqual(JSON.parse(done.out), { hostname: "h7" });
    assert.deepEqual(calls, [
      ["peloton.api.v0.host.svc.HostService::StartMaintenance", { hostname: "h7" }],
      ["peloton.api.v0.host.svc.HostService::CompleteMaintenance", { hostname: "h7" }],
    ]);
    const missing = await cli(url, "host", "maintenance", "start");
    assert.equal(missing.code, 2);
    assert.match(missing.err, /missing HOSTNAME/);
  } finally {
    await server.shutdown();
  }
});
