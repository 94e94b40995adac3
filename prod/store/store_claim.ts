/** One owner per store: `peloton up` claims a store for itself; separately started daemons share one claim. */
import type { QueryExecutorProvider } from "kysely";
import { sql } from "kysely";
import { createConnection } from "mysql2/promise";
import { ensureMysqlDatabase, type MysqlTarget, parseMysqlUrl, redact } from "./mysql_dialect.ts";
import { liveOwner } from "../minicluster/data_dir_owner.ts";
import { guardSqliteFiles } from "./sqlite_files.ts";
import { startTicks } from "../minicluster/_task_records.ts";

/**
 * `exclusive`: `peloton up`, which runs every daemon and writes without leases, must be the store's only
 * writer. `shared`: a daemon started on its own, which shares the store with the others (leases and
 * fences keep them apart) but never with an `up`.
 */
export type ClaimMode = "exclusive" | "shared";

/** Who holds a claim, for the message that refuses the next one. */
export interface ClaimHolder {
  /** What holds it, e.g. `peloton up`. */
  by: string;
  pid: number;
  host: string;
  /** When it took the claim (ISO 8601). */
  startedAt: string;
  /** `/proc/<pid>/stat` field 22 (SQLite only: tells a live holder from a pid reused since). */
  startTicks?: string;
}

/** A held claim. Writes check it in their transaction (`check`), so a process that lost it stores nothing. */
export interface StoreClaim {
  /** Resolves, with why, once the claim is gone for good: the process must stop (exit 1). */
  readonly lost: Promise<string>;
  /** Throws, inside a write transaction, unless this process still holds the claim. */
  check(trx: QueryExecutorProvider): Promise<void>;
  /** Gives the claim up; safe to call twice. */
  release(): Promise<void>;
}

/** How a claim is kept (MySQL). */
export interface ClaimOptions {
  /**
   * How long the claim's connection may leave its keep-alive unanswered, from its last answer, before the
   * claim is taken as dropped and taken back (30 s). A slow answer is not a lost claim: writes check the lock
   * in their own transactions meanwhile.
   */
  silentLimitMs?: number;
}

/** Thrown when another live process holds the store; nothing in it was touched. */
export class StoreInUseError extends Error {
  override readonly name = "StoreInUseError";

  constructor(readonly store: string, readonly holder: ClaimHolder | undefined, others = "") {
    super(
      `store ${store} is in use by ` +
        (holder
          ? `pid ${holder.pid} on ${holder.host} (${holder.by}, started ${holder.startedAt})${others}`
          : others || "another process"),
    );
  }
}

/** A write refused because this process no longer holds its claim on the store. */
export class StoreClaimLostError extends Error {
  override readonly name = "StoreClaimLostError";
}

/**
 * Writes wait (as for a database that cannot be reached) while the claim's connection is being made again
 * after the server went away; `code` makes the store's retry loop treat it as transient.
 */
export class StoreClaimInterruptedError extends Error {
  override readonly name = "StoreClaimInterruptedError";
  readonly code = "PELOTON_CLAIM_INTERRUPTED";
}

/**
 * Claims the store at `url` for this process, or throws `StoreInUseError` naming the holder. MySQL: named
 * locks (`GET_LOCK`) on a connection kept open for the claim's life, so the server frees them the moment
 * the process dies, kill -9 included. SQLite: `flock` on `<file>.claim`. `sqlite::memory:` needs none.
 */
export async function claimStore(
  url: string,
  mode: ClaimMode,
  by: string,
  options: ClaimOptions = {},
): Promise<StoreClaim> {
  const holder: ClaimHolder = {
    by,
    pid: Deno.pid,
    host: Deno.hostname(),
    startedAt: new Date().toISOString(),
  };
  if (url.startsWith("mysql://")) {
    const silentLimitMs = options.silentLimitMs ?? SILENT_LIMIT_MS;
    return await MysqlClaim.take(parseMysqlUrl(url), redact(url), mode, holder, silentLimitMs);
  }
  const path = url.startsWith("sqlite:") ? url.slice("sqlite:".length).replace(/^\/\//, "") : url;
  return path === ":memory:" ? NO_CLAIM : claimSqlite(path, url, mode, holder);
}

const NO_CLAIM: StoreClaim = {
  lost: new Promise(() => {}),
  check: () => Promise.resolve(),
  release: () => Promise.resolve(),
};

// ---------------------------------------------------------------------------------------------
// SQLite: the kernel's flock, exclusive or shared; the file names an exclusive holder.

function claimSqlite(path: string, store: string, mode: ClaimMode, holder: ClaimHolder): StoreClaim {
  const lockPath = `${path}.claim`;
  let file: Deno.FsFile;
  try {
    // The data dir 0700 and the store's files 0600 from the first one made (this one): it holds secrets.
    guardSqliteFiles(path);
    file = Deno.openSync(lockPath, { read: true, write: true, create: true, mode: 0o600 });
  } catch (e) {
    throw new Error(`Cannot claim SQLite store ${path}: ${(e as Error).message}`, { cause: e });
  }
  let locked: boolean;
  try {
    locked = file.tryLockSync(mode === "exclusive");
  } catch (e) {
    file.close();
    throw e;
  }
  if (!locked) {
    file.close();
    const up = liveOwner(lockPath);
    throw new StoreInUseError(
      store,
      up && { ...up, host: (up as Partial<ClaimHolder>).host ?? "this host" },
      up ? "" : "daemons started on their own (peloton jobmgr, resmgr, placement or hostmgr)",
    );
  }
  if (mode === "exclusive") {
    // Shared holders leave the file alone, so what it says is the exclusive holder's.
    const me = { ...holder, startTicks: startTicks(Deno.pid) };
    const bytes = new TextEncoder().encode(JSON.stringify(me) + "\n");
    try {
      file.truncateSync(0);
      for (let at = 0; at < bytes.length;) at += file.writeSync(bytes.subarray(at));
    } catch (e) {
      // Closed, so that the lock does not outlive the failed claim (a retry would find the store held).
      file.close();
      throw new Error(`Cannot claim SQLite store ${path}: ${(e as Error).message}`, { cause: e });
    }
  }
  let open = true;
  return {
    lost: new Promise(() => {}),
    check: () => Promise.resolve(),
    release() {
      if (!open) return Promise.resolve();
      open = false;
      try {
        // Emptied while still locked, so that no one reads a holder that is gone.
        if (mode === "exclusive") file.truncateSync(0);
      } finally {
        file.close();
      }
      return Promise.resolve();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// MySQL: named locks, with a row per claim naming its holder.

/** Every claim, live or dead: a row is live while its lock is held by the connection it names. */
const TABLE = "peloton_store_claims";
/** How long a claim waits for a daemon that holds the gate for the moment it takes its own claim. */
const GATE_WAIT_S = 5;
/** How often the claim's connection is asked whether it still holds its lock. */
const PING_MS = 1_000;
/**
 * How long the claim's connection may leave that question unanswered before it is taken as lost: long,
 * since a busy server, machine or event loop answers late, and a dropped claim stops every write while it
 * is taken back. Writes do not depend on it: each checks the lock in its own transaction.
 */
const SILENT_LIMIT_MS = 30_000;

type Conn = Awaited<ReturnType<typeof createConnection>>;

interface ClaimRow {
  seq: number;
  lockName: string;
  mode: ClaimMode;
  connectionId: number;
  holder: ClaimHolder;
  live: boolean;
}

/**
 * The protocol. The gate is the lock `peloton:<db>`. An exclusive claim takes the gate for good, after
 * checking that no shared claim is live, and removes the rows of dead shared claims; a shared claim takes
 * the gate for a moment, removes the row of the (then dead) exclusive claim, takes a lock of its own
 * (`peloton:<db>:<random>`) and gives the gate back. Each claim writes a row (a fresh `seq`) naming its
 * lock, connection and holder, so a refusal can say who holds the store.
 *
 * When the claim's connection is lost (the server restarted) writes wait while it is made again. It is
 * taken back only if no one else claimed the store meanwhile: an exclusive claim only if its row is still
 * there and the newest, a shared one only if its row is still there and no exclusive claim came after it.
 * A claim that came and went meanwhile removed the row, so it counts too. Otherwise it is lost for good.
 */
class MysqlClaim implements StoreClaim {
  readonly lost: Promise<string>;
  #lose!: (why: string) => void;
  #state: "held" | "retaking" | "lost" | "released" = "held";
  #conn?: Conn;
  #connectionId = 0;
  #ping?: ReturnType<typeof setInterval>;
  /** The keep-alive awaiting its answer, and how many ticks found it past the limit. */
  #asking?: { late: number };
  /** When the claim's connection last answered (or was made). */
  #answeredMs = 0;
  /** This claim's row. */
  #seq = 0;

  private constructor(
    readonly target: MysqlTarget,
    readonly store: string,
    readonly mode: ClaimMode,
    readonly holder: ClaimHolder,
    readonly gate: string,
    readonly own: string,
    readonly silentLimitMs: number,
  ) {
    this.lost = new Promise((resolve) => (this.#lose = resolve));
  }

  static async take(
    target: MysqlTarget,
    store: string,
    mode: ClaimMode,
    holder: ClaimHolder,
    silentLimitMs: number,
  ) {
    const gate = lockBase(target.database);
    const own = mode === "exclusive" ? gate : `${gate}:${crypto.randomUUID().slice(0, 8)}`;
    const claim = new MysqlClaim(target, store, mode, holder, gate, own, silentLimitMs);
    // The claim comes before openStore, which creates a missing database: so must the claim.
    await ensureMysqlDatabase(target);
    const conn = await connect(target);
    try {
      await conn.query(
        `CREATE TABLE IF NOT EXISTS ${TABLE} (seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, ` +
          "lock_name VARCHAR(64) NOT NULL UNIQUE, mode VARCHAR(16) NOT NULL, " +
          "connection_id BIGINT NOT NULL, holder TEXT NOT NULL)",
      );
      await claim.#takeGate(conn);
      if (mode === "exclusive") await claim.#claimExclusive(conn);
      else await claim.#claimShared(conn);
    } catch (e) {
      conn.destroy();
      throw e;
    }
    claim.#watch(conn);
    return claim;
  }

  async check(trx: QueryExecutorProvider): Promise<void> {
    if (this.#state === "lost" || this.#state === "released") {
      throw new StoreClaimLostError(`Cannot write to store ${this.store}: this process no longer holds it`);
    }
    if (this.#state === "retaking") {
      throw new StoreClaimInterruptedError(
        `Cannot write to store ${this.store} yet: its claim is being renewed`,
      );
    }
    const { rows } = await sql<{ id: number | null }>`select is_used_lock(${this.own}) as id`.execute(trx);
    if (Number(rows[0]?.id) !== this.#connectionId) {
      this.#dropped("its lock is no longer held by its connection");
      throw new StoreClaimInterruptedError(
        `Cannot write to store ${this.store} yet: its claim is being renewed`,
      );
    }
  }

  async release(): Promise<void> {
    if (this.#state === "released") return;
    const wasHeld = this.#state === "held";
    this.#state = "released";
    clearInterval(this.#ping);
    const conn = this.#conn;
    this.#conn = undefined;
    if (!conn) return;
    // A keep-alive still unanswered (the server out of reach) would hold up whatever is asked after it on
    // the connection, which has no timeout of its own till it runs: the connection is dropped at once.
    if (this.#asking) return conn.destroy();
    try {
      // Tidiness only: a dead claim's row is ignored, and the lock goes with the connection anyway.
      if (wasHeld) {
        await conn.query({ sql: `DELETE FROM ${TABLE} WHERE lock_name = ? AND seq = ?`, timeout: 2_000 }, [
          this.own,
          this.#seq,
        ]);
      }
      await conn.end();
    } catch {
      conn.destroy();
    }
  }

  /** Takes the gate, or throws StoreInUseError naming an exclusive holder. */
  async #takeGate(conn: Conn): Promise<void> {
    if (await getLock(conn, this.gate, 0)) return;
    const up = (await readClaims(conn)).find((r) => r.live && r.mode === "exclusive");
    if (up) throw new StoreInUseError(this.store, up.holder);
    if (await getLock(conn, this.gate, GATE_WAIT_S)) return;
    const now = (await readClaims(conn)).find((r) => r.live && r.lockName === this.gate);
    throw new StoreInUseError(this.store, now?.holder);
  }

  async #claimExclusive(conn: Conn): Promise<void> {
    const daemons = (await readClaims(conn)).filter((r) => r.live && r.mode === "shared");
    if (daemons.length) {
      await releaseLock(conn, this.gate);
      const others = daemons.length > 1 ? ` and ${daemons.length - 1} other daemons` : "";
      throw new StoreInUseError(this.store, daemons[0].holder, others);
    }
    // Every shared claim left is dead, and none can start while the gate is held.
    await conn.query(`DELETE FROM ${TABLE} WHERE mode = 'shared'`);
    this.#seq = await this.#writeRow(conn);
  }

  async #claimShared(conn: Conn): Promise<void> {
    try {
      if (!(await getLock(conn, this.own, 0))) throw new Error(`lock ${this.own} is taken`);
      // With the gate held the exclusive claim is dead; one being taken back must find its row gone.
      await conn.query(`DELETE FROM ${TABLE} WHERE lock_name = ?`, [this.gate]);
      this.#seq = await this.#writeRow(conn);
    } finally {
      await releaseLock(conn, this.gate);
    }
  }

  async #writeRow(conn: Conn): Promise<number> {
    const [result] = await conn.query(
      `REPLACE INTO ${TABLE} (lock_name, mode, connection_id, holder) VALUES (?, ?, CONNECTION_ID(), ?)`,
      [this.own, this.mode, JSON.stringify(this.holder)],
    );
    return Number((result as { insertId: number }).insertId);
  }

  #watch(conn: Conn): void {
    this.#conn = conn;
    this.#connectionId = conn.threadId;
    this.#answeredMs = performance.now();
    this.#asking = undefined;
    // Only this connection's: one dropped before, ending late, says nothing of the claim taken back since.
    conn.on("error", (e: Error) => this.#conn === conn && this.#dropped(e.message));
    conn.on("end", () => this.#conn === conn && this.#dropped("its connection ended"));
    this.#ping = setInterval(() => this.#tick(conn), PING_MS);
    Deno.unrefTimer(this.#ping);
  }

  /**
   * Asks the claim's connection whether it still holds its lock, unless it has yet to answer the last time:
   * then the claim is taken as dropped only once it has been silent past the limit, on two ticks in a row (a
   * loop too busy for that long gets to read an answer that came meanwhile).
   */
  #tick(conn: Conn): void {
    if (this.#conn !== conn) return;
    if (!this.#asking) {
      void this.#ask(conn);
      return;
    }
    const silentMs = performance.now() - this.#answeredMs;
    if (silentMs > this.silentLimitMs && this.#asking.late++ > 0) {
      this.#dropped(`its connection did not answer for ${Math.round(silentMs / 1000)} s`);
    }
  }

  /**
   * No client-side timeout: a late answer is waited for (`#tick` bounds the wait), since a connection that
   * timed out would be dropped, and its lock with it. An error is the connection's: the lock may be gone.
   */
  async #ask(conn: Conn): Promise<void> {
    const asking = { late: 0 };
    this.#asking = asking;
    try {
      const [rows] = await conn.query("SELECT IS_USED_LOCK(?) AS id", [this.own]);
      if (this.#conn !== conn) return;
      this.#answeredMs = performance.now();
      const id = (rows as { id: number | null }[])[0]?.id;
      if (Number(id) !== this.#connectionId) this.#dropped("its lock is no longer held by its connection");
    } catch (e) {
      if (this.#conn === conn) this.#dropped((e as Error).message);
    } finally {
      if (this.#asking === asking) this.#asking = undefined;
    }
  }

  /** The claim's connection is gone: writes wait while it is taken back. */
  #dropped(why: string): void {
    if (this.#state !== "held") return;
    this.#state = "retaking";
    clearInterval(this.#ping);
    this.#conn?.destroy();
    this.#conn = undefined;
    console.error(`Store claim on ${this.store} interrupted (${why}); taking it back`);
    void this.#retake();
  }

  async #retake(): Promise<void> {
    let delay = 100;
    while (this.#state === "retaking") {
      let conn: Conn | undefined;
      try {
        conn = await connect(this.target);
        const why = await this.#takeBack(conn);
        if (this.#state !== "retaking") {
          conn.destroy();
          return;
        }
        if (why) {
          conn.destroy();
          this.#state = "lost";
          this.#lose(`lost its claim on store ${this.store}: ${why}`);
          return;
        }
        this.#state = "held";
        this.#watch(conn);
        console.error(`Store claim on ${this.store} taken back`);
        return;
      } catch {
        // The server is not back yet. The wait alone does not keep the process alive (a daemon's server does).
        conn?.destroy();
        await new Promise((r) => Deno.unrefTimer(setTimeout(r, delay)));
        delay = Math.min(2_000, delay * 2);
      }
    }
  }

  /** Takes the claim back on a new connection; returns why it cannot be, or undefined once it is. */
  async #takeBack(conn: Conn): Promise<string | undefined> {
    const before = this.#connectionId;
    // The old connection may linger on the server (a network failure it has not noticed): it is ours.
    const mine = (await readClaims(conn)).find((r) => r.lockName === this.own && r.seq === this.#seq);
    if (!mine) return "another process claimed it meanwhile";
    if (mine.live && mine.connectionId === before) await conn.query(`KILL CONNECTION ${Number(before)}`);
    if (!(await getLock(conn, this.gate, GATE_WAIT_S))) {
      const up = (await readClaims(conn)).find((r) => r.live && r.lockName === this.gate);
      return up
        ? `it is held by pid ${up.holder.pid} on ${up.holder.host} (${up.holder.by})`
        : "its gate is held";
    }
    const claims = await readClaims(conn);
    if (this.mode === "exclusive") {
      if (Math.max(...claims.map((r) => r.seq)) !== this.#seq) {
        await releaseLock(conn, this.gate);
        return "another process claimed it meanwhile";
      }
    } else {
      const up = claims.some((r) => r.lockName === this.gate);
      const ok = !up && (await getLock(conn, this.own, 0));
      await releaseLock(conn, this.gate);
      if (!ok) return "a peloton up claimed it meanwhile";
    }
    await conn.query(`UPDATE ${TABLE} SET connection_id = CONNECTION_ID() WHERE lock_name = ? AND seq = ?`, [
      this.own,
      this.#seq,
    ]);
    return undefined;
  }
}

/**
 * `peloton:<db>`, readable where it can be; otherwise (too long for MySQL's 64 characters with a
 * daemon's suffix, or a name whose case would be lost: lock names ignore case) a hash of the name.
 */
export function lockBase(database: string): string {
  const readable = `peloton:${database}`;
  if (readable.length <= 55 && /^[a-z0-9_$]+$/.test(database)) return readable;
  // Two FNV-1a hashes (different offsets): 64 bits, so that two databases do not share a lock by chance.
  let h = 0x811c9dc5, g = 0x2e8b3a51;
  for (const c of new TextEncoder().encode(database)) {
    h = Math.imul(h ^ c, 0x01000193) >>> 0;
    g = Math.imul(g ^ c, 0x01000193) >>> 0;
  }
  return `peloton:#${h.toString(16).padStart(8, "0")}${g.toString(16).padStart(8, "0")}`;
}

function connect(target: MysqlTarget): Promise<Conn> {
  return createConnection({
    host: target.host,
    port: target.port,
    user: target.user,
    password: target.password,
    database: target.database,
    connectTimeout: 5_000,
    supportBigNumbers: true,
    bigNumberStrings: false,
  });
}

async function getLock(conn: Conn, name: string, waitS: number): Promise<boolean> {
  const [rows] = await conn.query("SELECT GET_LOCK(?, ?) AS got", [name, waitS]);
  return Number((rows as { got: number | null }[])[0]?.got) === 1;
}

async function releaseLock(conn: Conn, name: string): Promise<void> {
  await conn.query("SELECT RELEASE_LOCK(?)", [name]);
}

async function readClaims(conn: Conn): Promise<ClaimRow[]> {
  const [rows] = await conn.query(
    `SELECT seq, lock_name, mode, connection_id, holder, IS_USED_LOCK(lock_name) AS used FROM ${TABLE}`,
  );
  return (rows as Record<string, unknown>[]).map((r) => ({
    seq: Number(r.seq),
    lockName: String(r.lock_name),
    mode: r.mode as ClaimMode,
    connectionId: Number(r.connection_id),
    holder: parseHolder(String(r.holder)),
    live: r.used !== null && Number(r.used) === Number(r.connection_id),
  }));
}

function parseHolder(text: string): ClaimHolder {
  try {
    return JSON.parse(text);
  } catch {
    return { by: "an unknown process", pid: 0, host: "an unknown host", startedAt: "at an unknown time" };
  }
}
