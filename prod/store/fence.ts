/** Fencing: a store write is applied only while the leases its writer holds are still its own. */
import type { Kysely } from "kysely";
import type { DialectKind, StoreDatabase } from "./schema.ts";

/** What a write must still hold to be applied: the lease `name` with this holder and token. */
export interface Fence {
  name: string;
  holder: string;
  token: number;
}

/** A lease this process no longer holds; its writes are refused. */
export class FencedError extends Error {
  override readonly name = "FencedError";
}

/**
 * Checks, inside a store transaction, that every fence still holds: MySQL locks the lease rows until
 * commit, so no one takes a lease over between this check and the commit (SQLite's BEGIN IMMEDIATE
 * already serializes writers).
 */
export async function checkFences(
  trx: Kysely<StoreDatabase>,
  kind: DialectKind,
  fences: Fence[],
): Promise<void> {
  if (!fences.length) return;
  const rows = await trx.selectFrom("leases").select(["name", "holder", "token"])
    .where("name", "in", fences.map((f) => f.name)).$if(kind === "mysql", (q) => q.forUpdate()).execute();
  const held = new Map(rows.map((r) => [r.name, r]));
  for (const f of fences) {
    const r = held.get(f.name);
    if (!r || r.holder !== f.holder || r.token !== f.token) {
      throw new FencedError(
        `Cannot write: lease ${f.name} (token ${f.token}) is now held by ${r?.holder || "no one"}` +
          (r ? ` with token ${r.token}` : ""),
      );
    }
  }
}
