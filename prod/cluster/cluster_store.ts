/** Leases, daemon membership and the Mesos framework id in the store's database, outside the write pipeline. */
import type { Kysely, Transaction } from "kysely";
import { openStoreDatabase } from "../store/kysely_store.ts";
import type { DialectKind, StoreDatabase } from "../store/schema.ts";

export { checkFences, type Fence, FencedError } from "../store/fence.ts";

/** A lease as stored: `token` grows with every change of holder (the fencing token). */
export interface Lease {
  name: string;
  holder: string;
  token: number;
  expiresMs: number;
  url: string;
}

export interface Member {
  instanceId: string;
  role: string;
  url: string;
  expiresMs: number;
  startedMs: number;
}

type Db = Kysely<StoreDatabase>;

/** Dead members are deleted after this long, so the table holds recent processes only. */
const FORGET_MEMBERS_MS = 3_600_000;

/**
 * Leases with a TTL and a fencing token, and a membership table, on the store's database (SQLite or MySQL).
 * Times come from this process's clock: the daemons that share a database must keep their clocks in step
 * (NTP) to well within a lease's TTL.
 */
export class ClusterStore {
  constructor(readonly db: Db, readonly kind: DialectKind, readonly now: () => number = Date.now) {}

  /** Opens the database of a migrated store URL (the daemons open the Store first, which migrates it). */
  static async open(url: string, now?: () => number): Promise<ClusterStore> {
    const { db, kind } = await openStoreDatabase(url, { mysql: { connectionLimit: 2 } });
    return new ClusterStore(db, kind, now);
  }

  /**
   * Takes or renews lease `name` for `holder`: free or expired leases are taken with the next token; a
   * live lease of the same holder is extended with its token kept. Returns the lease as it now stands.
   */
  async acquire(name: string, holder: string, url: string, ttlMs: number): Promise<Lease> {
    try {
      return await this.#tx(async (trx) => {
        const now = this.now();
        const row = await this.#lockLease(trx, name);
        const expires_ms = now + ttlMs;
        if (!row) {
          await trx.insertInto("leases").values({ name, holder, token: 1, expires_ms, url }).execute();
          return { name, holder, token: 1, expiresMs: expires_ms, url };
        }
        const mine = row.holder === holder && row.expires_ms > now;
        if (!mine && row.expires_ms > now) return leaseOf(row);
        const token = mine ? row.token : row.token + 1;
        await trx.updateTable("leases").set({ holder, token, expires_ms, url }).where("name", "=", name)
          .execute();
        return { name, holder, token, expiresMs: expires_ms, url };
      });
    } catch (err) {
      // Two processes inserting the same new lease at once: one wins, the other reads it next time.
      const code = (err as { code?: string }).code ?? "";
      if (/DUP_ENTRY|LOCK_DEADLOCK|CONSTRAINT/.test(code) || /UNIQUE constraint/.test(String(err))) {
        return { name, holder: "", token: 0, expiresMs: 0, url: "" };
      }
      throw err;
    }
  }

  /**
   * Renews several leases of one holder in one transaction (a job manager's shards); returns each lease
   * as it now stands, so the caller sees any it lost.
   */
  async renew(names: string[], holder: string, ttlMs: number): Promise<Map<string, Lease>> {
    if (!names.length) return new Map();
    return await this.#tx(async (trx) => {
      const now = this.now();
      const rows = await trx.selectFrom("leases").selectAll().where("name", "in", names)
        .$if(this.kind === "mysql", (q) => q.forUpdate()).execute();
      const live = rows.filter((r) => r.holder === holder && r.expires_ms > now).map((r) => r.name);
      const expires_ms = now + ttlMs;
      if (live.length) {
        await trx.updateTable("leases").set({ expires_ms }).where("name", "in", live).execute();
      }
      const out = new Map<string, Lease>();
      for (const r of rows) {
        out.set(r.name, live.includes(r.name) ? { ...leaseOf(r), expiresMs: expires_ms } : leaseOf(r));
      }
      return out;
    });
  }

  /** Gives a lease up at once (graceful shutdown, a shard handed over), if `holder` still holds it. */
  async release(name: string, holder: string, token: number): Promise<void> {
    await this.db.updateTable("leases").set({ expires_ms: 0 })
      .where("name", "=", name).where("holder", "=", holder).where("token", "=", token).execute();
  }

  /** Every lease whose name starts with `prefix` (expired ones included). */
  async leases(prefix = ""): Promise<Lease[]> {
    const rows = await this.db.selectFrom("leases").selectAll()
      .$if(prefix !== "", (q) => q.where("name", "like", `${prefix}%`)).orderBy("name").execute();
    return rows.map(leaseOf);
  }

  /** Records (or refreshes) a live daemon process. */
  async heartbeat(m: Omit<Member, "expiresMs">, ttlMs: number): Promise<void> {
    const row = {
      instance_id: m.instanceId,
      role: m.role,
      url: m.url,
      expires_ms: this.now() + ttlMs,
      started_ms: m.startedMs,
    };
    const insert = this.db.insertInto("members").values(row);
    if (this.kind === "mysql") {
      await insert.onDuplicateKeyUpdate({ url: row.url, expires_ms: row.expires_ms }).execute();
    } else {
      await insert.onConflict((oc) =>
        oc.column("instance_id").doUpdateSet({ url: row.url, expires_ms: row.expires_ms })
      )
        .execute();
    }
  }

  async leave(instanceId: string): Promise<void> {
    await this.db.deleteFrom("members").where("instance_id", "=", instanceId).execute();
  }

  /** Live members (heartbeat not expired); long-dead ones are deleted on the way. */
  async members(): Promise<Member[]> {
    const now = this.now();
    await this.db.deleteFrom("members").where("expires_ms", "<", now - FORGET_MEMBERS_MS).execute();
    const rows = await this.db.selectFrom("members").selectAll().where("expires_ms", ">", now)
      .orderBy("started_ms").orderBy("instance_id").execute();
    return rows.map((r) => ({
      instanceId: r.instance_id,
      role: r.role,
      url: r.url,
      expiresMs: r.expires_ms,
      startedMs: r.started_ms,
    }));
  }

  async frameworkId(name: string): Promise<string | undefined> {
    const row = await this.db.selectFrom("frameworks").select("framework_id").where(
      "framework_name",
      "=",
      name,
    )
      .executeTakeFirst();
    return row?.framework_id || undefined;
  }

  async saveFrameworkId(name: string, id: string, host: string): Promise<void> {
    const row = { framework_name: name, framework_id: id, update_host: host, update_time_ms: this.now() };
    const set = { framework_id: id, update_host: host, update_time_ms: row.update_time_ms };
    const insert = this.db.insertInto("frameworks").values(row);
    if (this.kind === "mysql") await insert.onDuplicateKeyUpdate(set).execute();
    else await insert.onConflict((oc) => oc.column("framework_name").doUpdateSet(set)).execute();
  }

  close(): Promise<void> {
    return this.db.destroy();
  }

  async #tx<T>(fn: (trx: Transaction<StoreDatabase>) => Promise<T>): Promise<T> {
    return await this.db.transaction().execute(fn);
  }

  #lockLease(trx: Transaction<StoreDatabase>, name: string) {
    return trx.selectFrom("leases").selectAll().where("name", "=", name)
      .$if(this.kind === "mysql", (q) => q.forUpdate()).executeTakeFirst();
  }
}

function leaseOf(r: { name: string; holder: string; token: number; expires_ms: number; url: string }): Lease {
  return { name: r.name, holder: r.holder, token: r.token, expiresMs: r.expires_ms, url: r.url };
}
