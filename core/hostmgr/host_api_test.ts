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
