/** HostService requests naming their hosts: a field left out reads as missing, never JavaScript's undefined. */
import assert from "node:assert/strict";
import { hostmgrRig } from "./testing.ts";

const HOST = "peloton.api.v0.host.svc.HostService";

function error(method: string, body: unknown) {
  const rig = hostmgrRig([["h1"]]);
  rig.hm.receive({ kind: "api", reqId: 1, replyTo: "cli", procedure: `${HOST}::${method}`, body });
  rig.store.settle();
  const reply = rig.transport.take("api-reply", "cli")[0];
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_UP", "nothing changed");
  return reply?.error;
}

Deno.test("a maintenance call whose hostname or hostnames is null says missing, as if left out", () => {
  const missing = {
    code: "invalid-argument",
    message: "hostname: missing, expected a host name (or hostnames, a list)",
  };
  for (const method of ["StartMaintenance", "CompleteMaintenance"]) {
    assert.deepEqual(error(method, { hostname: null }), missing, method);
    assert.deepEqual(error(method, { hostnames: null }), missing, method);
    assert.deepEqual(error(method, { hostname: null, hostnames: null }), missing, method);
  }
  assert.deepEqual(error("StartMaintenance", { hostname: null, hostnames: [] }), {
    code: "invalid-argument",
    message: "hostnames: got [], expected a non-empty list of host names",
  });
  assert.deepEqual(error("StartMaintenance", { hostname: "" }), {
    code: "invalid-argument",
    message: 'hostname: got "", expected a host name',
  });
});

Deno.test("a maintenance call naming different hosts in hostname and hostnames is refused: neither is dropped", () => {
  const both = "give hostnames or hostname, not both";
  for (const method of ["StartMaintenance", "CompleteMaintenance"]) {
    assert.deepEqual(error(method, { hostname: "h1", hostnames: ["h2"] }), {
      code: "invalid-argument",
      message: `hostname and hostnames: got "h1" and ["h2"], ${both} (Peloton acts on the list alone)`,
    }, method);
    assert.deepEqual(error(method, { hostname: "h1", hostnames: ["h1", "h2"] }), {
      code: "invalid-argument",
      message: `hostname and hostnames: got "h1" and ["h1","h2"], ${both} (Peloton acts on the list alone)`,
    }, method);
    assert.deepEqual(error(method, { hostname: "h1", hostnames: "h2" }), {
      code: "invalid-argument",
      message: 'hostnames: got "h2", expected a non-empty list of host names',
    }, method);
    assert.deepEqual(error(method, { hostname: "h1", hostnames: ["h1", 5] }), {
      code: "invalid-argument",
      message: "hostnames[1]: got 5, expected a host name",
    }, method);
  }
});

Deno.test("a maintenance call naming one host in both hostname and hostnames acts on it", () => {
  const rig = hostmgrRig([["h1"], ["h2"]]);
  rig.hm.receive({
    kind: "api",
    reqId: 1,
    replyTo: "cli",
    procedure: `${HOST}::StartMaintenance`,
    body: { hostname: "h1", hostnames: ["h1"] },
  });
  rig.store.settle();
  assert.deepEqual(rig.transport.take("api-reply", "cli")[0].body, { hostname: "h1" });
  assert.notEqual(rig.hm.host("h1")!.state, "HOST_STATE_UP");
  assert.equal(rig.hm.host("h2")!.state, "HOST_STATE_UP");
  // An empty list is the list left out, as protobuf reads it.
  rig.hm.receive({
    kind: "api",
    reqId: 2,
    replyTo: "cli",
    procedure: `${HOST}::StartMaintenance`,
    body: { hostname: "h2", hostnames: [] },
  });
  rig.store.settle();
  assert.deepEqual(rig.transport.take("api-reply", "cli")[0].body, { hostname: "h2" });
  assert.notEqual(rig.hm.host("h2")!.state, "HOST_STATE_UP");
});
