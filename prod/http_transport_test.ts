/** The HTTP transport between daemon processes: order, batching, waiting for a leader, replay, gone processes. */
import assert from "node:assert/strict";
import type { Message } from "../core/messages.ts";
import { type Envelope, HttpTransport, MESSAGES_PATH, type Resolver } from "./http_transport.ts";

interface Node {
  t: HttpTransport;
  url: string;
  got: Message[];
  posts: number;
  server: Deno.HttpServer<Deno.NetAddr>;
}

/** A transport serving on its own port; `where` maps addresses to the nodes serving them. */
function node(name: string, where: Map<string, string>): Node {
  const resolver: Resolver = {
    resolve: (a) => where.get(a),
    isDurable: (a) => a === "resmgr",
  };
  const n = { got: [] as Message[], posts: 0 } as Node;
  n.server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    n.posts++;
    const status = n.t.deliver(await req.json() as Envelope);
    return new Response(null, { status });
  });
  n.url = `http://127.0.0.1:${n.server.addr.port}`;
  n.t = new HttpTransport({ instance: name, url: n.url, resolver, retryMs: 20 });
  return n;
}

const receiver = (n: Node) => ({ receive: (m: Message) => void n.got.push(m) });
const wait = async (what: string, ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(ok(), `timed out waiting for ${what}`);
};

Deno.test("messages to one destination arrive in order, many per POST", async () => {
  const where = new Map<string, string>();
  const a = node("a", where), b = node("b", where);
  try {
    b.t.register("resmgr", receiver(b));
    where.set("resmgr", b.url);
    for (let i = 0; i < 500; i++) a.t.send("resmgr", { kind: "drop-tasks", taskIds: [String(i)] });
    await wait("500 messages", () => b.got.length === 500);
    assert.deepEqual(
      b.got.map((m) => (m as { taskIds: string[] }).taskIds[0]),
      [...Array(500).keys()].map(String),
    );
    assert.ok(b.posts < 50, `${b.posts} POSTs for 500 messages`);
  } finally {
    for (const n of [a, b]) n.t.close(), await n.server.shutdown();
  }
});

Deno.test("a leader's messages wait for one; an unanswered request goes again to a new leader", async () => {
  const where = new Map<string, string>();
  const a = node("a", where), b = node("b", where), c = node("c", where);
  try {
    a.t.register("jobmgr@a", receiver(a));
    // No resource manager leads yet: the poll waits in the outbox.
    a.t.send("resmgr", { kind: "get-placements", reqId: 7, replyTo: "jobmgr@a", limit: 1, timeoutMs: 100 });
    await new Promise((r) => setTimeout(r, 100));
    where.set("resmgr", b.url);
    b.t.register("resmgr", receiver(b));
    await wait("the poll at b", () => b.got.length === 1);
    // b dies without answering; c leads now and gets the request again.
    b.t.unregister("resmgr");
    where.set("resmgr", c.url);
    c.t.register("resmgr", receiver(c));
    a.t.replay("resmgr");
    await wait("the poll at c", () => c.got.length === 1);
    // Once answered, it is not sent again.
    c.t.send("jobmgr@a", { kind: "placements", reqId: 7, placements: [], changes: [] });
    await wait("the reply", () => a.got.length === 1);
    a.t.replay("resmgr");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(c.got.length, 1);
  } finally {
    for (const n of [a, b, c]) n.t.close(), await n.server.shutdown();
  }
});

Deno.test("messages to a process that is gone are dropped, not retried", async () => {
  const where = new Map<string, string>();
  const a = node("a", where), b = node("b", where);
  try {
    where.set("placement@old", b.url); // b serves other addresses: the old instance is gone
    const logged: [string, Record<string, unknown> | undefined][] = [];
    const t = new HttpTransport({
      instance: "a3",
      url: a.url,
      resolver: { resolve: (x) => where.get(x), isDurable: () => false, isLive: () => false },
      retryMs: 20,
      log: (line, fields) => logged.push([line, fields]),
    });
    t.send("placement@old", { kind: "drop-tasks", taskIds: ["x"] });
    t.send("placement@old", { kind: "drop-tasks", taskIds: ["y"] });
    await wait("the drop", () => t.dropped === 2);
    assert.equal(b.posts, 1, "sent once, in one post, and not retried");
    t.close();
    // The log says which kinds of messages were lost.
    assert.deepEqual(logged.map(([line]) => line.replace(/: .*$/, "")), [
      "dropped 2 messages to placement@old (drop-tasks ×2)",
    ]);
    assert.deepEqual(logged[0][1]?.kinds, { "drop-tasks": 2 });
    assert.equal(MESSAGES_PATH, "/internal/v1/messages");
  } finally {
    for (const n of [a, b]) n.t.close(), await n.server.shutdown();
  }
});

Deno.test("a live process that has not registered an address yet (starting) gets its messages once it has", async () => {
  const where = new Map<string, string>();
  const a = node("a", where), b = node("b", where);
  try {
    // b's process is a live member, but its job manager is not registered yet: b refuses the address.
    const live = new Set(["jobmgr@b"]);
    const t = new HttpTransport({
      instance: "a2",
      url: a.url,
      resolver: { resolve: (x) => where.get(x), isDurable: () => false, isLive: (x) => live.has(x) },
      retryMs: 20,
    });
    where.set("jobmgr@b", b.url);
    t.send("jobmgr@b", { kind: "drop-tasks", taskIds: ["x"] });
    await wait("the refusal", () => b.posts >= 1);
    b.t.register("jobmgr@b", receiver(b));
    await wait("the message", () => b.got.length === 1);
    assert.equal(t.dropped, 0);
    // Once the cluster no longer lists its process, a refusal means gone.
    live.clear();
    b.t.unregister("jobmgr@b");
    t.send("jobmgr@b", { kind: "drop-tasks", taskIds: ["y"] });
    await wait("the drop", () => t.dropped === 1);
    t.close();
  } finally {
    for (const n of [a, b]) n.t.close(), await n.server.shutdown();
  }
});
