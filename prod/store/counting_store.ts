/** A KyselyStore that counts the rows the database sends back, for tests that a read is bounded in SQL. */
import type { KyselyPlugin } from "kysely";
import { KyselyStore, openStoreDatabase } from "./kysely_store.ts";
import { migrateToLatest } from "./schema.ts";

export interface CountingStore {
  store: KyselyStore;
  /** Rows every statement so far returned (reads; writes return none). */
  rowsRead: () => number;
}

/** Opens the store at `url` (migrated) whose statements' result rows are counted. */
export async function openCountingStore(url: string): Promise<CountingStore> {
  const { db, kind } = await openStoreDatabase(url);
  let rows = 0;
  const counter: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: (args) => {
      rows += args.result.rows.length;
      return Promise.resolve(args.result);
    },
  };
  try {
    await migrateToLatest(db, kind);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return { store: new KyselyStore(db.withPlugin(counter), kind), rowsRead: () => rows };
}
