import assert from "node:assert/strict";
import { cli } from "../testing.ts";

Deno.test("host maintenance start|complete call Peloton's HostService with the host name", async () => {
  const calls: [string | null, unknown][] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.json();
    calls.push([req.headers.get("rpc-procedure"), body]);
    return Response.json({ hostname: body.hostname }, { headers: { "rpc-status": "success" } });
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

Deno.test("host pool move asks MoveHosts for the pools' sizes after the move, and prints the hosts moved", async () => {
  const calls: [string | null, unknown][] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.json();
    const procedure = req.headers.get("rpc-procedure");
    calls.push([procedure, body]);
    const reply = procedure?.endsWith("::ListHostPools")
      ? { pools: [{ name: "shared", hosts: ["a", "b", "c"] }, { name: "stateless", hosts: ["d"] }] }
      : { hosts: ["c", "a"] };
    return Response.json(reply, { headers: { "rpc-status": "success" } });
  });
  try {
    const url = `http://127.0.0.1:${server.addr.port}`;
    const moved = await cli(url, "host", "pool", "move", "shared", "stateless", "2");
    assert.equal(moved.code, 0, moved.err);
    assert.equal(moved.out, "Moved 2 hosts from host pool shared to stateless: c, a");
    assert.deepEqual(calls, [
      ["peloton.api.v0.host.svc.HostService::ListHostPools", {}],
      ["peloton.api.v0.host.svc.HostService::MoveHosts", {
        sourcePool: "shared",
        srcPoolDesiredHosts: 1,
        destinationPool: "stateless",
        destPoolDesiredHosts: 3,
      }],
    ]);
    for (const count of ["0", "two", "1.5"]) {
      const bad = await cli(url, "host", "pool", "move", "shared", "stateless", count);
      assert.equal(bad.code, 2, count);
      assert.match(
        bad.err,
        new RegExp(`COUNT: got "${count}", expected a whole number of hosts, at least 1`),
      );
    }
    assert.equal(calls.length, 2, "nothing asked for a bad COUNT");
  } finally {
    await server.shutdown();
  }
});
