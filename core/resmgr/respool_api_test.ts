import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { makePorts, makeRespoolConfig } from "../testing/harness.ts";
import { ResourceManager } from "./resmgr.ts";
import { RESPOOL_SERVICE } from "./respool_api.ts";
import { ROOT_ID } from "./respool_tree.ts";

type Body = Record<string, unknown>;
/** A delete of an idle leaf first reads the store for jobs still in it. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

function setup() {
  const ports = makePorts();
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" });
  let reqId = 0;
  /** Sends one API call; returns the reqId. */
  const call = (method: string, body: unknown): number => {
    rm.receive({
      kind: "api",
      reqId: ++reqId,
      replyTo: "api/1",
      procedure: `${RESPOOL_SERVICE}::${method}`,
      body,
    });
    return reqId;
  };
  const replies = (): ApiReply[] => ports.transport.take("api-reply", "api/1");
  const reply = (): Body => {
    const [r] = replies();
    assert.ok(r, "expected a reply");
    assert.equal(r.error, undefined);
    return r.body as Body;
  };
  /** Creates a pool through the API and returns its id once durable. */
  const create = (name: string, parent?: string): string => {
    call("CreateResourcePool", {
      config: { ...makeRespoolConfig(name), parent: parent ? { value: parent } : undefined },
    });
    ports.store.settle();
    return ((reply().result as Body).value) as string;
  };
  return { ...ports, rm, call, replies, reply, create };
}

Deno.test("CreateResourcePool replies only once the pool is durable in the store", () => {
  const { rm, store, call, replies, reply } = setup();
  call("CreateResourcePool", { config: makeRespoolConfig("batch") });
  assert.deepEqual(replies(), [], "no reply before the write is durable");
  assert.equal(store.unsettled, 1);
  store.settle();
  const id = (reply().result as Body).value as string;
  assert.match(id, /^[0-9a-f-]{36}$/);
  assert.equal(rm.tree.get(id)!.path, "/batch");
  const rec = store.pools.get(id)!;
  assert.deepEqual([rec.path, rec.parentId], ["/batch", ROOT_ID]);
  assert.equal(rec.config.resources.length, 4, "stored with every kind");
});

Deno.test("a failed store write undoes the create and answers internal", () => {
  const { rm, store, call, replies } = setup();
  store.failNextWrite(new Error("disk full"));
  call("CreateResourcePool", { config: makeRespoolConfig("batch") });
  store.settle();
  const [r] = replies();
  assert.equal(r.error?.code, "internal");
  assert.match(r.error!.message, /disk full/);
  assert.equal(rm.tree.lookup("/batch"), undefined);
});

Deno.test("tree rule violations answer in Peloton's in-body error shape without writing", () => {
  const { store, call, replies, create } = setup();
  create("a");
  call("CreateResourcePool", { config: makeRespoolConfig("a") });
  const dup = replies()[0].body as Body;
  assert.match(((dup.error as Body).alreadyExists as Body).message as string, /already exists/);
  call("CreateResourcePool", { config: makeRespoolConfig("root") });
  const root = replies()[0].body as Body;
  assert.match(((root.error as Body).invalidResourcePoolConfig as Body).message as string, /override root/);
  call("CreateResourcePool", {
    config: { name: "bad", resources: [{ kind: "cpu", reservation: 5, limit: 1 }] },
  });
  const bad = replies()[0].body as Body;
  assert.ok((bad.error as Body).invalidResourcePoolConfig);
  assert.equal(store.unsettled, 0);
});

Deno.test("an id or path wider than the store's columns is refused naming the field, before anything is written", () => {
  const { store, rm, call, replies, create } = setup();
  call("CreateResourcePool", { id: { value: "i".repeat(129) }, config: makeRespoolConfig("a") });
  const wideId = replies()[0].body as Body;
  assert.match(
    ((wideId.error as Body).invalidResourcePoolConfig as Body).message as string,
    /^id: got 129 characters, expected at most 128$/,
  );
  // Three levels of 255-character names make a path of 768 characters.
  const a = create("a".repeat(255));
  const b = create("b".repeat(255), a);
  call("CreateResourcePool", { config: { ...makeRespoolConfig("c".repeat(255)), parent: { value: b } } });
  const deep = replies()[0].body as Body;
  assert.match(
    ((deep.error as Body).invalidResourcePoolConfig as Body).message as string,
    /^config\.name: the pool's path .* would be 768 characters, expected at most 700$/,
  );
  assert.equal(store.unsettled, 0, "nothing written");
  assert.equal(rm.tree.lookup(`/${"a".repeat(255)}/${"b".repeat(255)}/${"c".repeat(255)}`), undefined);
  assert.ok(rm.tree.lookup(`/${"a".repeat(255)}/${"b".repeat(255)}`), "its parent is still there");
});

Deno.test("LookupResourcePoolID resolves a path to the pool id; bad paths are named", () => {
  const { call, reply, replies, create } = setup();
  const a = create("a");
  const b = create("b", a);
  call("LookupResourcePoolID", { path: { value: "/a/b" } });
  assert.deepEqual(reply(), { id: { value: b } });
  call("LookupResourcePoolID", { path: { value: "/a/zzz" } });
  assert.ok(((replies()[0].body as Body).error as Body).notFound);
  call("LookupResourcePoolID", { path: { value: "a" } });
  assert.ok(((replies()[0].body as Body).error as Body).invalidPath);
});

Deno.test("GetResourcePool shows config, children, usage and path; missing ids are not found", () => {
  const { call, reply, replies, create } = setup();
  const a = create("a");
  const b = create("b", a);
  call("GetResourcePool", { id: { value: a }, includeChildPools: true });
  const body = reply();
  const info = body.poolinfo as Body;
  assert.deepEqual(info.id, { value: a });
  assert.deepEqual(info.path, { value: "/a" });
  assert.deepEqual(info.parent, { value: ROOT_ID });
  assert.deepEqual(info.children, [{ value: b }]);
  assert.equal((info.config as Body).name, "a");
  // `usage`, as respool.proto's ResourcePoolInfo names it: a strict decoder refuses any other field.
  assert.deepEqual((info.usage as Body[]).map((u) => u.kind), ["cpu", "memory", "disk", "gpu"]);
  assert.equal(info.usages, undefined);
  assert.equal((body.childPools as Body[]).length, 1);
  call("GetResourcePool", {});
  assert.deepEqual(((reply().poolinfo as Body).id as Body).value, ROOT_ID, "no id means root");
  call("GetResourcePool", { id: { value: "nope" } });
  assert.ok(((replies()[0].body as Body).error as Body).notFound);
});

Deno.test("usage is Peloton's: allocation of non-revocable tasks, slack of revocable ones, parents sum leaves", () => {
  const { rm, call, reply, create } = setup();
  const a = create("a");
  const b = create("b", a);
  const leaf = rm.tree.get(b)!;
  leaf.allocation.nonSlack.cpuMilli = 2000;
  leaf.allocation.slack.cpuMilli = 500;
  leaf.allocation.total.cpuMilli = 2500;
  // Ours besides: each pool's own entitlement, and the demand its leaves still queue (slack demand too).
  leaf.demand.cpuMilli = 3000;
  leaf.slackDemand.cpuMilli = 250;
  rm.tree.get(a)!.entitlement.cpu = 8;
  leaf.entitlement.cpu = 6;
  for (const [id, entitlement] of [[a, 8], [b, 6]] as const) {
    call("GetResourcePool", { id: { value: id } });
    const cpu = ((reply().poolinfo as Body).usage as Body[])[0];
    assert.deepEqual(cpu, { kind: "cpu", allocation: 2, slack: 0.5, entitlement, demand: 3.25 });
  }
});

Deno.test("Query lists every pool, root first", () => {
  const { call, reply, create } = setup();
  const a = create("a");
  create("b", a);
  call("Query", {});
  const pools = reply().resourcePools as Body[];
  assert.deepEqual(pools.map((p) => (p.path as Body).value), ["/", "/a", "/a/b"]);
  for (const p of pools) {
    assert.deepEqual((p.usage as Body[]).map((u) => u.kind), ["cpu", "memory", "disk", "gpu"]);
    assert.equal(p.usages, undefined);
  }
});

Deno.test("DeleteResourcePool removes an idle leaf after the write is durable; a parent is refused", async () => {
  const { rm, store, call, replies, reply, create } = setup();
  const a = create("a");
  create("b", a);
  call("DeleteResourcePool", { path: { value: "/a" } });
  assert.ok(((replies()[0].body as Body).error as Body).isNotLeaf);
  call("DeleteResourcePool", { path: { value: "/a/b" } });
  await tick();
  assert.deepEqual(replies(), []);
  store.settle();
  assert.deepEqual(reply(), {});
  assert.equal(rm.tree.lookup("/a/b"), undefined);
  assert.equal([...store.pools.values()].some((p) => p.path === "/a/b"), false);
  call("DeleteResourcePool", { path: { value: "/nope" } });
  assert.ok(((replies()[0].body as Body).error as Body).notFound);
});

Deno.test("DeleteResourcePool of the root answers as Peloton's: not a leaf while it has pools, else not deleted", async () => {
  const { rm, store, call, replies, create } = setup();
  const a = create("a");
  const error = () => (replies()[0].body as Body).error as Body;
  call("DeleteResourcePool", { path: { value: "/" } });
  assert.deepEqual(error(), {
    isNotLeaf: { id: { value: ROOT_ID }, message: "resource pool / is not a leaf" },
  });
  call("DeleteResourcePool", { path: { value: "/a" } });
  await tick();
  store.settle();
  replies();
  assert.equal(rm.tree.get(a), undefined);
  call("DeleteResourcePool", { path: { value: "/" } });
  assert.deepEqual(error(), { notDeleted: { id: { value: ROOT_ID }, message: "cannot delete root" } });
  assert.equal(rm.tree.lookup("/"), rm.tree.root);
});

Deno.test("UpdateResourcePool changes limits after durability but refuses a rename", () => {
  const { rm, store, call, replies, reply, create } = setup();
  const a = create("a");
  call("UpdateResourcePool", { id: { value: a }, config: makeRespoolConfig("a", { cpu: 3 }) });
  assert.deepEqual(replies(), []);
  store.settle();
  assert.deepEqual(reply(), {});
  assert.equal(rm.tree.get(a)!.resource("cpu")!.limit, 3);
  call("UpdateResourcePool", { id: { value: a }, config: makeRespoolConfig("z") });
  assert.ok(((replies()[0].body as Body).error as Body).invalidResourcePoolConfig);
});

Deno.test("an unknown respool procedure is unimplemented", () => {
  const { call, replies } = setup();
  call("Frobnicate", {});
  assert.equal(replies()[0].error?.code, "unimplemented");
});

Deno.test("a failed store write undoes the delete: the pool is back in the tree", async () => {
  const { rm, store, call, replies, create } = setup();
  const a = create("a");
  store.failNextWrite(new Error("disk full"));
  call("DeleteResourcePool", { path: { value: "/a" } });
  await tick();
  store.settle();
  assert.equal(replies()[0].error?.code, "internal");
  assert.equal(rm.tree.lookup("/a")?.id, a);
  assert.equal(rm.tree.get(a)?.parent, rm.tree.root);
});

Deno.test("a pool named empty or with a slash is refused: it would take its parent's path or fake a child's", () => {
  const { rm, call, replies, store } = setup();
  for (const name of ["", "a/b"]) {
    call("CreateResourcePool", { id: { value: "p1" }, config: makeRespoolConfig(name) });
    const [r] = replies();
    assert.deepEqual(r.body, {
      error: {
        invalidResourcePoolConfig: {
          id: { value: "p1" },
          message: `name: got ${JSON.stringify(name)}, expected a name without "/"`,
        },
      },
    });
  }
  assert.equal(store.unsettled, 0, "nothing written");
  assert.equal(rm.tree.lookup("/")!.id, ROOT_ID);
  assert.equal(rm.tree.lookup("/a/b"), undefined);
});

Deno.test("an id or path that is not a {value} message is refused naming the field, not read as the root or as no path", () => {
  const { call, replies } = setup();
  const refused = (method: string, body: Body, message: string) => {
    call(method, body);
    assert.deepEqual(
      replies()[0].error,
      { code: "invalid-argument", message },
      `${method} ${JSON.stringify(body)}`,
    );
  };
  refused("GetResourcePool", { id: { value: 12 } }, "id.value: got 12, expected a resource pool id");
  refused(
    "CreateResourcePool",
    { id: 7, config: makeRespoolConfig("x") },
    'id: got 7, expected a resource pool id as {"value": ...}',
  );
  refused(
    "LookupResourcePoolID",
    { path: { value: 5 } },
    "path.value: got 5, expected a pool path such as /a/b",
  );
  // A bare string where Peloton's API has a message: protobuf's JSON decoding (Peloton's servers used
  // jsonpb) refuses it, so this API does too.
  refused(
    "LookupResourcePoolID",
    { path: "/DefaultResPool" },
    'path: got "/DefaultResPool", expected a pool path such as /a/b as a message, {"value": "/DefaultResPool"}',
  );
  refused(
    "DeleteResourcePool",
    { path: "/a" },
    'path: got "/a", expected a pool path such as /a/b as a message, {"value": "/a"}',
  );
  refused(
    "GetResourcePool",
    { id: ROOT_ID },
    `id: got "${ROOT_ID}", expected a resource pool id as a message, {"value": "${ROOT_ID}"}`,
  );
  refused(
    "UpdateResourcePool",
    { config: makeRespoolConfig("a") },
    "id: missing, expected a resource pool id",
  );
  refused("GetAdmissionWaits", {}, "id: missing, expected a resource pool id");
  call("GetResourcePool", {});
  assert.equal(
    ((replies()[0].body as Body).poolinfo as Body & { id: Body }).id.value,
    ROOT_ID,
    "no id: the root",
  );
});

Deno.test("LookupResourcePoolID names a missing or malformed path; one with empty parts is refused, as the CLI does", () => {
  const { call, replies, create } = setup();
  const a = create("a");
  const b = create("b", a);
  const lookup = (body: Body) => {
    call("LookupResourcePoolID", body);
    return replies()[0].body as Body;
  };
  assert.deepEqual(lookup({}), {
    error: { invalidPath: { message: "path: missing, expected a pool path such as /a/b" } },
  });
  const invalid = (path: string, expected: string) => ({
    error: {
      invalidPath: { path: { value: path }, message: `path.value: got "${path}", expected ${expected}` },
    },
  });
  const noEmpty = "a pool path such as /a/b, with no empty parts";
  // `//a` read as `/a` gave a pool for a path that names none (Peloton's lookup finds no pool named "").
  assert.deepEqual(lookup({ path: { value: "//a" } }), invalid("//a", noEmpty));
  assert.deepEqual(lookup({ path: { value: "/a//b" } }), invalid("/a//b", noEmpty));
  assert.deepEqual(lookup({ path: { value: "//" } }), invalid("//", noEmpty));
  assert.deepEqual(
    lookup({ path: { value: "a/b" } }),
    invalid("a/b", "a pool path such as /a/b, starting with /"),
  );
  assert.deepEqual(lookup({ path: { value: "" } }), {
    error: {
      invalidPath: { path: { value: "" }, message: "path: missing, expected a pool path such as /a/b" },
    },
  });
  // A trailing slash is dropped, as the CLI drops it; the root is `/`.
  assert.deepEqual(lookup({ path: { value: "/a/b/" } }), { id: { value: b } });
  assert.deepEqual(lookup({ path: { value: "/" } }), { id: { value: ROOT_ID } });
});

Deno.test("respool errors carry the path or id Peloton's do: ResourcePoolPathNotFound, ResourcePoolNotFound, ...", () => {
  const { store, call, replies, create } = setup();
  const a = create("a");
  create("b", a);
  const error = (method: string, body: Body) => {
    call(method, body);
    return (replies()[0].body as Body).error as Body;
  };
  assert.deepEqual(error("LookupResourcePoolID", { path: { value: "/a/zzz" } }), {
    notFound: { path: { value: "/a/zzz" }, message: "resource pool /a/zzz not found" },
  });
  assert.deepEqual(error("DeleteResourcePool", { path: { value: "/nope" } }), {
    notFound: { path: { value: "/nope" }, message: "resource pool /nope not found" },
  });
  // DeleteResponse has no invalidPath: a malformed path is a path not found, named.
  assert.deepEqual(error("DeleteResourcePool", { path: { value: "//a" } }), {
    notFound: {
      path: { value: "//a" },
      message: 'path.value: got "//a", expected a pool path such as /a/b, with no empty parts',
    },
  });
  assert.deepEqual(error("DeleteResourcePool", { path: { value: "/a" } }), {
    isNotLeaf: { id: { value: a }, message: "resource pool /a is not a leaf" },
  });
  assert.deepEqual(error("GetResourcePool", { id: { value: "nope" } }), {
    notFound: { id: { value: "nope" }, message: "resource pool nope not found" },
  });
  assert.deepEqual(
    error("UpdateResourcePool", { id: { value: "nope" }, config: makeRespoolConfig("nope") }),
    {
      notFound: { id: { value: "nope" }, message: "resource pool nope not found" },
    },
  );
  assert.deepEqual(error("UpdateResourcePool", { id: { value: a }, config: makeRespoolConfig("z") }), {
    invalidResourcePoolConfig: { id: { value: a }, message: "cannot rename /a to z" },
  });
  const dup = error("CreateResourcePool", { config: makeRespoolConfig("a") });
  assert.match(((dup.alreadyExists as Body).id as Body).value as string, /^[0-9a-f-]{36}$/);
  const bad = error("CreateResourcePool", {
    config: { name: "x", resources: [{ kind: "cpu", limit: 1e308 }] },
  });
  assert.match(((bad.invalidResourcePoolConfig as Body).id as Body).value as string, /^[0-9a-f-]{36}$/);
  assert.equal(store.unsettled, 0, "nothing written");
});

Deno.test("a bool field given anything but true or false is refused naming it, and nothing changes", () => {
  const { rm, store, call, replies, create } = setup();
  const a = create("a");
  for (const bad of ["nope", 1, "true", {}]) {
    call("GetResourcePool", { id: { value: a }, includeChildPools: bad });
    assert.deepEqual(replies()[0].error, {
      code: "invalid-argument",
      message: `includeChildPools: got ${JSON.stringify(bad)}, expected true or false`,
    });
    for (const field of ["Force", "force"]) {
      call("UpdateResourcePool", {
        id: { value: a },
        config: makeRespoolConfig("a", { cpu: 3 }),
        [field]: bad,
      });
      store.settle();
      assert.deepEqual(replies()[0].error, {
        code: "invalid-argument",
        message: `${field}: got ${JSON.stringify(bad)}, expected true or false`,
      });
    }
  }
  assert.notEqual(rm.tree.get(a)!.resource("cpu")!.limit, 3, "not updated");
  call("GetResourcePool", { id: { value: a }, includeChildPools: false });
  assert.equal((replies()[0].body as Body).childPools, undefined);
});
