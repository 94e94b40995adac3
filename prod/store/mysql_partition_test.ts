/**
 * The MySQL store across a network partition: a TCP proxy between the store and the real server stops
 * passing bytes, as a partition or a frozen server does, with no reset the client could notice. Without a
 * statement timeout a write on such a connection waits for good, and so does the stop that flushes it.
 */
import { deepStrictEqual as equal, match, ok } from "node:assert/strict";
import { type KyselyStore, openStore } from "./kysely_store.ts";
import { dropMysqlDatabase, mysqlUrlOptions, parseMysqlUrl } from "./mysql_dialect.ts";
import { makeJob, makeTask, put } from "./store_suite.ts";
import { PartitionProxy } from "./partition_proxy.ts";
import { orWithin } from "../settle.ts";

const LATE = Symbol("late");

/** Fails, rather than letting the test hang, if `p` is still pending after `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  const r = await orWithin(p, ms, LATE);
  if (r === LATE) throw new Error(`${what}: still waiting after ${ms} ms`);
  return r;
}

interface Partitioned {
  store: KyselyStore;
  proxy: PartitionProxy;
  /** Opens a store on the same database directly, for `fn` to read what was stored. */
  direct<T>(fn: (store: KyselyStore) => Promise<T>): Promise<T>;
}

/**
 * Runs `fn` with a store on a database of its own, reached through a `PartitionProxy` with short timeouts (a
 * test waits seconds, not minutes); then closes the store and the proxy and drops the database.
 */
async function throughPartition(
  label: string,
  fn: (p: Partitioned) => Promise<void>,
  options: { statementTimeoutMs?: number; stopGraceMs?: number } = {},
): Promise<void> {
  const direct = new URL(Deno.env.get("PELOTON_TEST_MYSQL_URL") || "mysql://root@127.0.0.1:3306/");
  direct.pathname = `/peloton_test_${label}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const target = parseMysqlUrl(direct.href);
  const proxy = new PartitionProxy(target);
  const via = new URL(direct.href);
  via.hostname = "127.0.0.1";
  via.port = String(proxy.port);
  via.search = `?statementTimeout=${options.statementTimeoutMs ?? 400}&connectTimeout=400`;
  const store = await openStore(via.href, { stopGraceMs: options.stopGraceMs });
  try {
    await fn({
      store,
      proxy,
      async direct(read) {
        const check = await openStore(direct.href);
        try {
          return await read(check);
        } finally {
          await check.close();
        }
      },
    });
  } finally {
    await within(store.close(), 20_000, "close");
    await proxy.close();
    await dropMysqlDatabase(target);
  }
}

Deno.test("MySQL store: a write cut off by a partition is retried on a new connection once it heals", async () => {
  await throughPartition("partition", async ({ store, proxy, direct }) => {
    equal(await put(store, [{ kind: "job.put", job: makeJob("before") }]), undefined);
    proxy.partition();
    // A read fails once its statement goes unanswered, as a store out of reach (which the API answers
    // unavailable), rather than waiting for good.
    const read = await store.getJob("before").then(() => "answered", (e: Error) => `${e.name}: ${e.message}`);
    match(read, /^StoreUnavailableError: the store cannot be reached: MySQL gave no answer .* within 400 ms/);
    const written = put(store, [{ kind: "job.put", job: makeJob("during") }]);
    // The statement goes unanswered, its connection is dropped, and new ones cannot be made: the writer
    // keeps retrying. Once the partition heals, a new connection carries the write.
    await new Promise((r) => setTimeout(r, 1_500));
    proxy.heal();
    equal(await within(written, 20_000, "the write after the partition healed"), undefined);
    await direct(async (check) => {
      ok(await check.getJob("during"), "the write made across the partition is in the database");
      ok(await check.getJob("before"));
    });
  });
});

Deno.test("MySQL store: a stop during a partition ends after its grace and fails the write it could not make", async () => {
  await throughPartition("partition_stop", async ({ store, proxy }) => {
    equal(await put(store, [{ kind: "job.put", job: makeJob("before") }]), undefined);
    proxy.partition();
    const written = put(store, [{ kind: "job.put", job: makeJob("lost") }]);
    // Nothing of this stop can hang: the flush gives up a second after it began, and ending the pool does
    // not wait for the connection the partition took (it was dropped when its statement went unanswered).
    await within(store.close(), 20_000, "a stop during the partition");
    const err = await written;
    ok(err, "the write the stop could not make fails");
    match(err.message, /no answer to a statement within 400 ms|connect|ETIMEDOUT/i);
  }, { stopGraceMs: 1_000 });
});

Deno.test("MySQL store: a commit whose answer was lost is not stored twice: its events are written once", async () => {
  await throughPartition("partition_commit", async ({ store, proxy, direct }) => {
    const first = [{ kind: "job.put", job: makeJob("j") }, {
      kind: "task.put",
      task: makeTask("j", 0),
    }] as const;
    equal(await put(store, [...first]), undefined);
    // The commit reaches the server and is applied; its answer never comes back. The writer cannot tell,
    // and commits the group again on a new connection: the task's row is the same, its event must not be
    // there twice.
    const cut = proxy.cutAfter("commit");
    const running = {
      jobId: "j",
      instanceId: 0,
      runId: 1,
      state: "RUNNING",
      timeMs: 2,
      hostname: "h",
    } as const;
    const written = put(store, [
      { kind: "task.put", task: makeTask("j", 0, { version: 2 }) },
      { kind: "task.event", event: { ...running, message: "", reason: "" } },
    ]);
    await within(cut, 20_000, "the commit");
    equal(await within(written, 20_000, "the write after its commit's answer was lost"), undefined);
    await direct(async (check) => {
      equal((await check.getTasks("j"))[0].version, 2);
      equal((await check.getTaskEvents("j", 0)).map((e) => e.state), ["RUNNING"]);
    });
  });
});

Deno.test("MySQL store: a group of events alone whose commit's answer was lost is not stored twice", async () => {
  await throughPartition("partition_events", async ({ store, proxy, direct }) => {
    equal(await put(store, [{ kind: "job.put", job: makeJob("j") }]), undefined);
    // No versioned row in the group to show it was stored: the events' own keys keep them from going in
    // again when the writer commits the group a second time.
    const cut = proxy.cutAfter("commit");
    const killed = { jobId: "j", instanceId: 0, runId: 1, state: "KILLED", timeMs: 3 } as const;
    // Two states in turn: read as a workflow's steps, a second copy of the pair would show as four.
    const steps = (["ROLLING_FORWARD", "SUCCEEDED"] as const).map((state) => ({
      jobId: "j",
      workflowId: "w",
      instanceId: 0,
      type: "UPDATE" as const,
      state,
      timeMs: 3,
    }));
    const written = put(store, [
      { kind: "task.event", event: killed },
      ...steps.map((event) => ({ kind: "workflow.event" as const, event })),
    ]);
    await within(cut, 20_000, "the commit");
    equal(await within(written, 20_000, "the write after its commit's answer was lost"), undefined);
    await direct(async (check) => {
      equal(await check.getTaskEvents("j", 0), [killed]);
      equal(await check.getWorkflowEvents("j", "w"), steps);
    });
  });
});

Deno.test("MySQL store: closing it abandons a statement the partition left hanging", async () => {
  // A bound far past the test's: only closing can end the read.
  await throughPartition("partition_close", async ({ store, proxy }) => {
    equal(await put(store, [{ kind: "job.put", job: makeJob("j") }]), undefined);
    proxy.partition();
    const read = store.getJob("j").then(() => "answered", (e: Error) => `${e.name}: ${e.message}`);
    await new Promise((r) => setTimeout(r, 200));
    await within(store.close(), 20_000, "close with a read under way");
    match(await read, /^StoreUnavailableError: .*closed while a statement was still under way/);
  }, { statementTimeoutMs: 600_000 });
});

Deno.test("MySQL URL parameters: the two timeouts, anything else an error naming it", () => {
  equal(mysqlUrlOptions("mysql://root@h:3306/db"), {});
  equal(mysqlUrlOptions("mysql://root@h:3306/db?statementTimeout=5000&connectTimeout=2000"), {
    statementTimeoutMs: 5000,
    connectTimeoutMs: 2000,
  });
  for (
    const [url, message] of [
      [
        "mysql://u:secret@h/db?timeout=5",
        /"mysql:\/\/u:\*\*\*@h\/db\?timeout=5": unknown parameter "timeout"/,
      ],
      [
        "mysql://u@h/db?statementTimeout=5s",
        /statementTimeout is "5s"; expected a whole number of milliseconds/,
      ],
      ["mysql://u@h/db?connectTimeout=0", /connectTimeout is "0"; expected a whole number/],
      ["mysql://u@h/db?statementTimeout=3600001", /statementTimeout is "3600001"/],
    ] as const
  ) {
    let thrown: Error | undefined;
    try {
      mysqlUrlOptions(url);
    } catch (e) {
      thrown = e as Error;
    }
    ok(thrown, url);
    match(thrown.message, message);
    ok(!thrown.message.includes("secret"), "the password is not shown");
  }
});
