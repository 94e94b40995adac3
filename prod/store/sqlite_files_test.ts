/** The SQLite store's files are the owner's alone (0600, in a 0700 data dir): they hold jobs' secrets. */
import assert from "node:assert/strict";
import { openStore } from "./kysely_store.ts";
import { claimStore } from "./store_claim.ts";
import { ownDataDir, shareDataDir } from "../minicluster/data_dir_owner.ts";

const mode = (path: string) => Deno.statSync(path).mode! & 0o777;
const modes = (dir: string) =>
  Object.fromEntries(
    [...Deno.readDirSync(dir)].filter((e) => e.name.startsWith("peloton.sqlite")).map((e) => [
      e.name,
      mode(`${dir}/${e.name}`).toString(8),
    ]),
  );

/**
 * Opens the store as `peloton up` does (claim, then open), writes a secret through it and answers the modes
 * of its files while it is open (SQLite removes the WAL and its index when the last connection closes).
 */
async function openAndWrite(dir: string): Promise<Record<string, string>> {
  const url = `sqlite:${dir}/peloton.sqlite`;
  const claim = await claimStore(url, "exclusive", "test");
  const store = await openStore(url, { claim });
  try {
    const secret = { jobId: "j", secretId: "s", path: "key", data: btoa("secret"), createdMs: 0, version: 1 };
    await new Promise<void>((resolve, reject) =>
      store.write([{ kind: "secret.put", secret }], (err) => err ? reject(err) : resolve())
    );
    assert.equal((await store.getSecrets("j")).length, 1);
    return modes(dir);
  } finally {
    await store.close();
    await claim.release();
  }
}

Deno.test("a new data dir is 0700 by the time the store is open, the database, its WAL, index and claim 0600", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "peloton-files-" });
  try {
    Deno.chmodSync(tmp, 0o755);
    const dir = `${tmp}/data`;
    const held = ownDataDir(dir, "test");
    let files: Record<string, string>;
    try {
      files = await openAndWrite(dir);
    } finally {
      held.release();
    }
    assert.equal(mode(dir).toString(8), "700");
    for (
      const name of ["peloton.sqlite", "peloton.sqlite-wal", "peloton.sqlite-shm", "peloton.sqlite.claim"]
    ) {
      assert.equal(files[name], "600", `${name}: ${JSON.stringify(files)}`);
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("an existing data dir (peloton up's, or daemons') is tightened to 0700, its store's files to 0600", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "peloton-files-" });
  try {
    for (const name of ["up", "daemon"]) {
      const dir = `${tmp}/${name}`;
      Deno.mkdirSync(dir, { mode: 0o755 });
      Deno.chmodSync(dir, 0o755);
      // Files an earlier version left world-readable (an empty database is a new one to SQLite).
      for (const f of ["peloton.sqlite", "peloton.sqlite.claim"]) {
        Deno.writeFileSync(`${dir}/${f}`, new Uint8Array());
        Deno.chmodSync(`${dir}/${f}`, 0o644);
      }
      const held = name === "up" ? ownDataDir(dir, "test") : shareDataDir(dir, "jobmgr.test", "test");
      let files: Record<string, string>;
      try {
        files = await openAndWrite(dir);
      } finally {
        held.release();
      }
      assert.equal(mode(dir).toString(8), "700", name);
      assert.deepEqual(
        Object.values(files).filter((m) => m !== "600"),
        [],
        `${name}: ${JSON.stringify(files)}`,
      );
      assert.ok(files["peloton.sqlite-wal"], `${name}: ${JSON.stringify(files)}`);
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("a directory of the operator's choosing keeps its mode; the store's files in it are 0600", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "peloton-files-" });
  try {
    Deno.chmodSync(tmp, 0o755);
    Deno.writeTextFileSync(`${tmp}/other.txt`, "not Peloton's");
    const files = await openAndWrite(tmp);
    assert.equal(mode(tmp).toString(8), "755");
    assert.equal(Object.keys(files).length, 4, JSON.stringify(files));
    assert.deepEqual(Object.values(files).filter((m) => m !== "600"), []);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
