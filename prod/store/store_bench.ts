/** Benchmarks task.put throughput through the group-commit writer on SQLite and MySQL (`deno bench -A`). */
import type { Store, StoreWrite } from "../../core/ports/store.ts";
import { openStore } from "./kysely_store.ts";
import { makeTask } from "./store_suite.ts";
import { dropMysqlDatabase, ensureMysqlDatabase, parseMysqlUrl } from "./mysql_dialect.ts";

const TASKS = 10_000;
const mysqlServer = Deno.env.get("PELOTON_TEST_MYSQL_URL") || "mysql://root@127.0.0.1:3306/";
const probe = parseMysqlUrl(mysqlUrl("probe"));
// Without a server the MySQL benches are skipped (benches are measurements; the tests are what fail).
const mysqlReachable = await ensureMysqlDatabase(probe).then(() => dropMysqlDatabase(probe)).then(
  () => true,
  () => false,
);

function mysqlUrl(label: string): string {
  const u = new URL(mysqlServer);
  u.pathname = `/peloton_bench_${label}_${crypto.randomUUID().replaceAll("-", "").slice(0, 8)}`;
  return u.href;
}

type Backend = { name: string; ignore: boolean; fresh: () => { url: string; drop: () => Promise<void> } };
const backends: Backend[] = [
  {
    name: "sqlite",
    ignore: false,
    fresh: () => {
      const dir = Deno.makeTempDirSync({ prefix: "peloton-bench-" });
      return { url: `sqlite:${dir}/bench.sqlite`, drop: () => Deno.remove(dir, { recursive: true }) };
    },
  },
  {
    name: "mysql",
    ignore: !mysqlReachable,
    fresh: () => {
      const url = mysqlUrl("run");
      return { url, drop: () => dropMysqlDatabase(parseMysqlUrl(url)) };
    },
  },
];

/** Writes `TASKS` task puts (new rows, then with `updates` an update of each) in batches, all queued at once. */
async function putAll(store: Store, batchSize: number, version: number): Promise<void> {
  let failed: Error | undefined;
  for (let i = 0; i < TASKS; i += batchSize) {
    const batch: StoreWrite[] = [];
    for (let j = i; j < Math.min(i + batchSize, TASKS); j++) {
      batch.push({ kind: "task.put", task: makeTask(`job-${j % 10}`, j, { version, state: "RUNNING" }) });
    }
    store.write(batch, (err) => failed ??= err);
  }
  await store.flush();
  if (failed) throw failed;
}

/** Each batch waits for the previous one's `done`: one transaction per batch, no grouping. */
async function putOneByOne(store: Store, count: number): Promise<void> {
  for (let j = 0; j < count; j++) {
    await new Promise<void>((resolve, reject) =>
      store.write(
        [{ kind: "task.put", task: makeTask("job-serial", j) }],
        (err) => err ? reject(err) : resolve(),
      )
    );
  }
}

for (const backend of backends) {
  const bench = (name: string, run: (store: Store, b: Deno.BenchContext) => Promise<void>) =>
    Deno.bench({
      name: `${backend.name}: ${name}`,
      group: backend.name,
      ignore: backend.ignore,
      n: 5,
      warmup: 1,
      async fn(b) {
        const { url, drop } = backend.fresh();
        const store = await openStore(url);
        try {
          await run(store, b);
        } finally {
          await store.close();
          await drop();
        }
      },
    });

  bench(`insert ${TASKS} tasks, batches of 100`, async (store, b) => {
    b.start();
    await putAll(store, 100, 1);
    b.end();
  });
  bench(`update ${TASKS} tasks, batches of 100`, async (store, b) => {
    await putAll(store, 100, 1);
    b.start();
    await putAll(store, 100, 2);
    b.end();
  });
  bench(`insert ${TASKS} tasks, one per batch (grouped by the writer)`, async (store, b) => {
    b.start();
    await putAll(store, 1, 1);
    b.end();
  });
  bench("insert 500 tasks, one per batch, each awaited (no grouping)", async (store, b) => {
    b.start();
    await putOneByOne(store, 500);
    b.end();
  });
}
