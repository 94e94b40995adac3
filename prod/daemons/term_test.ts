/** A role's term: cut off once it ends, and replies to an earlier term's calls kept from a later term. */
import assert from "node:assert/strict";
import type { Message } from "../../core/messages.ts";
import { StoreUnavailableError } from "../../core/ports/store.ts";
import type { DaemonProcess } from "./process.ts";
import { SystemClock } from "../clock.ts";
import { jsonLogger } from "../log.ts";
import { Term, TermFront } from "./term.ts";

/** The slice of a daemon process a term uses: its clock, transport, store and lost-write exit. */
function fakeProcess() {
  const sent: [string, Message][] = [];
  const writes: ((err?: Error) => void)[] = [];
  const lost: Error[] = [];
  const logs: string[] = [];
  const p = {
    clock: new SystemClock(),
    transport: { send: (to: string, m: Message) => void sent.push([to, m]) },
    store: { write: (_: unknown, done?: (err?: Error) => void) => void writes.push(done ?? (() => {})) },
    lostWrite: (err: Error) => void lost.push(err),
    log: jsonLogger({}, (l) => logs.push(l)),
  } as unknown as DaemonProcess;
  return { p, sent, writes, lost, logs };
}

Deno.test("a term that ended sends nothing but answers, writes nothing, and a write it lost ends nothing", async () => {
  const { p, sent, writes, lost } = fakeProcess();
  const t = new Term(p, "resmgr", 0);
  t.store.write([], undefined);
  t.end();
  t.transport.send("hostmgr", { kind: "release-hosts", leaseIds: ["x"] });
  t.transport.send("api@a", { kind: "api-reply", reqId: 3, body: {} });
  assert.deepEqual(sent.map(([to, m]) => [to, m.kind]), [["api@a", "api-reply"]]);
  // The write made while it lasted fails after it ended: the memory behind it is thrown away anyway.
  writes[0](new Error("fenced"));
  assert.deepEqual(lost, []);
  const refused = Promise.withResolvers<Error | undefined>();
  t.store.write([], (err) => refused.resolve(err));
  assert.ok((await refused.promise) instanceof StoreUnavailableError);
  assert.equal(writes.length, 1, "not handed to the store");
  let fired = false;
  t.clock.setTimer(0, () => fired = true);
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(fired, false);
});

Deno.test("a write lost while the term lasts ends the process, as before", () => {
  const { p, writes, lost } = fakeProcess();
  const t = new Term(p, "jobmgr", 0);
  t.store.write([]);
  writes[0](new Error("disk full"));
  assert.deepEqual(lost.map((e) => e.message), ["disk full"]);
});

Deno.test("a reply to an earlier term's call does not answer a later term's; a placements reply is carried out", () => {
  const { p, sent } = fakeProcess();
  const self = "jobmgr@a";
  const front = new TermFront();
  const got: Message[] = [];
  const daemon = { receive: (m: Message) => void got.push(m) };
  const first = new Term(p, "jobmgr", 0, self);
  front.attach(first, daemon);
  first.transport.send("resmgr", { kind: "api", reqId: 5, replyTo: self, procedure: "p", body: {} });
  first.end();
  const second = new Term(p, "jobmgr", 1, self);
  front.attach(second, daemon);
  second.transport.send("resmgr", { kind: "api", reqId: 5, replyTo: self, procedure: "p", body: {} });
  const [old, now] = sent.map(([, m]) => (m as { reqId: number }).reqId);
  assert.notEqual(old, now, "the two terms' calls travel under different ids");
  front.receive({ kind: "api-reply", reqId: old, body: { from: "first" } });
  front.receive({ kind: "api-reply", reqId: now, body: { from: "second" } });
  front.receive({ kind: "placements", reqId: old, placements: [], changes: [] });
  assert.deepEqual(got, [
    { kind: "api-reply", reqId: 5, body: { from: "second" } },
    { kind: "placements", reqId: 0, placements: [], changes: [] },
  ]);
});

Deno.test("the next term's job manager hears that the backend keeps volumes as created", () => {
  const { p } = fakeProcess();
  const front = new TermFront();
  const hosts = [{ hostname: "h1", attributes: {}, state: "HOST_STATE_UP" as const }];
  front.receive({ kind: "host-inventory", full: true, hosts, fixedVolumes: true });
  front.receive({ kind: "host-inventory", full: false, hosts: [] });
  const got: Message[] = [];
  front.attach(new Term(p, "jobmgr", 1, "jobmgr@a"), { receive: (m) => void got.push(m) });
  assert.deepEqual(got, [{ kind: "host-inventory", full: true, hosts, fixedVolumes: true }]);
});

Deno.test("the next term's job manager gets the host inventory pushed before it started", () => {
  const { p } = fakeProcess();
  const front = new TermFront();
  front.receive({
    kind: "host-inventory",
    full: true,
    hosts: [{ hostname: "h1", attributes: {}, state: "HOST_STATE_UP" }],
  });
  front.receive({
    kind: "host-inventory",
    full: false,
    hosts: [{ hostname: "h2", attributes: {}, state: "HOST_STATE_UP" }],
  });
  const got: Message[] = [];
  front.attach(new Term(p, "jobmgr", 1, "jobmgr@a"), { receive: (m) => void got.push(m) });
  assert.deepEqual(got, [{
    kind: "host-inventory",
    full: true,
    hosts: [
      { hostname: "h1", attributes: {}, state: "HOST_STATE_UP" },
      { hostname: "h2", attributes: {}, state: "HOST_STATE_UP" },
    ],
  }]);
});
