/** Data dir ownership: one live holder or many sharers, refusals that touch nothing, dead holders taken over. */
import { DataDirInUseError, ownDataDir, ownerPath, shareDataDir } from "./data_dir_owner.ts";
import { Minicluster } from "./minicluster.ts";
import { isAlive, makeSpec, Recorder } from "../backend_testing.ts";

function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(message);
}

function inUse(take: () => unknown): DataDirInUseError {
  try {
    take();
  } catch (e) {
    if (e instanceof DataDirInUseError) return e;
    throw e;
  }
  throw new Error("the dir was taken although it is held");
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The holder this test kills (`deno run` of this file): takes the dir, says so, waits. */
if (import.meta.main) {
  ownDataDir(Deno.args[0], "doomed holder");
  console.log("held");
  setInterval(() => {}, 60_000);
}

Deno.test("a held dir is refused with its holder named; released, it is free and its owner file gone", async () => {
  const dir = await Deno.makeTempDir({ prefix: "data_dir_owner_test_" });
  try {
    const held = ownDataDir(dir, "test");
    const refused = inUse(() => ownDataDir(dir, "again"));
    assert(refused.owner?.pid === Deno.pid, `holder ${JSON.stringify(refused.owner)}`);
    assert(
      new RegExp(`^data dir ${dir} is in use by pid ${Deno.pid} \\(test, started \\d{4}-.*Z\\)$`)
        .test(refused.message),
      refused.message,
    );
    held.release();
    held.release();
    assert(!exists(ownerPath(dir)), "the owner file outlived its release");
    ownDataDir(dir, "next").release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a data dir made by its first owner or sharer is owner-only; one that exists keeps its mode", () => {
  const root = Deno.makeTempDirSync({ prefix: "data_dir_owner_test_" });
  try {
    ownDataDir(`${root}/own/data`, "test").release();
    shareDataDir(`${root}/shared`, "jobmgr.0", "test").release();
    for (const dir of [`${root}/own`, `${root}/own/data`, `${root}/shared`]) {
      const mode = Deno.statSync(dir).mode! & 0o777;
      assert(mode === 0o700, `${dir} is ${mode.toString(8)}, expected 700`);
    }
    Deno.mkdirSync(`${root}/open`, { mode: 0o755 });
    ownDataDir(`${root}/open`, "test").release();
    const mode = Deno.statSync(`${root}/open`).mode! & 0o777;
    assert(mode === 0o755, `an existing dir was changed to ${mode.toString(8)}`);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

const listing = (dir: string) => [...Deno.readDirSync(dir)].map((e) => e.name).sort();

Deno.test("daemons share a dir, two of a role too; while one lives nobody takes it alone, and the other way round", async () => {
  const dir = await Deno.makeTempDir({ prefix: "data_dir_owner_test_" });
  try {
    const a = shareDataDir(dir, "jobmgr.aaaa", "peloton jobmgr");
    const b = shareDataDir(dir, "jobmgr.bbbb", "peloton jobmgr");
    const c = shareDataDir(dir, "hostmgr.cccc", "peloton hostmgr");
    assert(a.held && b.held && c.held, "sharers hold their files");
    assert(
      listing(dir).join() === "hostmgr.cccc.owner,jobmgr.aaaa.owner,jobmgr.bbbb.owner",
      `${listing(dir)}`,
    );
    const refused = inUse(() => ownDataDir(dir, "peloton up"));
    assert(refused.owner?.pid === Deno.pid && refused.owner.by === "peloton hostmgr", refused.message);
    assert(
      new RegExp(`^data dir ${dir} is in use by pid ${Deno.pid} \\(peloton hostmgr, started \\d{4}-.*Z\\)$`)
        .test(refused.message),
      refused.message,
    );
    assert(listing(dir).length === 3, `the refused owner left ${listing(dir)}`);
    a.release();
    b.release();
    inUse(() => ownDataDir(dir, "peloton up"));
    c.release();
    assert(listing(dir).length === 0, `released sharers left ${listing(dir)}`);

    const up = ownDataDir(dir, "peloton up");
    const shut = inUse(() => shareDataDir(dir, "resmgr.dddd", "peloton resmgr"));
    assert(shut.owner?.by === "peloton up", shut.message);
    assert(listing(dir).join() === "owner", `the refused sharer left ${listing(dir)}`);
    up.release();
    shareDataDir(dir, "resmgr.dddd", "peloton resmgr").release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("files of daemons that died neither block an owner nor outlive the next start", async () => {
  const dir = await Deno.makeTempDir({ prefix: "data_dir_owner_test_" });
  try {
    const dead = { pid: 2 ** 22 + 1, startedAt: "2000-01-01T00:00:00.000Z", by: "peloton jobmgr" };
    Deno.writeTextFileSync(`${dir}/jobmgr.dead.owner`, JSON.stringify(dead));
    const live = shareDataDir(dir, "jobmgr.live", "peloton jobmgr");
    assert(listing(dir).join() === "jobmgr.live.owner", `a sharer left ${listing(dir)}`);
    live.release();
    Deno.writeTextFileSync(`${dir}/jobmgr.dead.owner`, JSON.stringify(dead));
    const up = ownDataDir(dir, "peloton up");
    assert(listing(dir).join() === "owner", `an owner left ${listing(dir)}`);
    up.release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a holder killed with SIGKILL leaves the dir free; its owner file is rewritten", async () => {
  const dir = await Deno.makeTempDir({ prefix: "data_dir_owner_test_" });
  const holder = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", import.meta.filename!, dir],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = holder.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const { value } = await reader.read();
    assert(value?.startsWith("held"), `the holder said ${JSON.stringify(value)}`);
    reader.releaseLock();
    const refused = inUse(() => ownDataDir(dir, "test"));
    assert(refused.owner?.pid === holder.pid && refused.owner.by === "doomed holder", refused.message);

    holder.kill("SIGKILL");
    await holder.status;
    assert(exists(ownerPath(dir)), "a killed holder cannot remove its owner file");
    const taken = ownDataDir(dir, "successor");
    const record = JSON.parse(Deno.readTextFileSync(ownerPath(dir)));
    assert(record.pid === Deno.pid && record.by === "successor", `owner file ${JSON.stringify(record)}`);
    taken.release();
  } finally {
    try {
      holder.kill("SIGKILL");
    } catch { /* dead already */ }
    await holder.status;
    await holder.stdout.cancel().catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a minicluster on a dir another one drives is refused and ends none of its tasks", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "data_dir_owner_test_" });
  const mc = new Minicluster({ dataDir, agents: 1, stopGracePeriodMs: 200 });
  const rec = new Recorder();
  mc.start(rec.sink);
  try {
    const spec = makeSpec({ hostname: "agent-0", agentId: "minicluster-S0" }, "sleep 300");
    mc.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    const pid = mc.pid(spec.taskId)!;
    inUse(() => new Minicluster({ dataDir, agents: 1 }));
    await new Promise((r) => setTimeout(r, 100));
    assert(isAlive(pid), "the refused minicluster ended the live one's task");
    assert(rec.statuses(spec.taskId).at(-1)?.state === "TASK_RUNNING", "the task's state changed");
    await mc.stop();
    assert(!exists(ownerPath(dataDir)), "a stopped minicluster still holds its dir");
  } finally {
    await mc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
