/**
 * The posix_spawn spawner against real processes: sessions, exit statuses as Deno.Command reports them, the
 * environment, descriptors and signals a task starts with, reaping beside Deno.Command, and the fallback.
 */
import { decodeWaitStatus, PosixSpawn } from "./_posix_spawn.ts";
import { PosixSpawner } from "./posix_spawner.ts";
import { type SpawnRequest, WorkerSpawner } from "./spawner.ts";
import { isAlive } from "../backend_testing.ts";

function assertEquals<T>(actual: T, expected: T, what = "value"): void {
  const a = JSON.stringify(actual), e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(message);
}

async function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "posix_spawner_test_" });
  try {
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A test body with a fresh spawner and directory, both gone afterwards. */
function withSpawner(body: (spawner: PosixSpawner, dir: string) => Promise<void>): Promise<void> {
  return withDir(async (dir) => {
    const spawner = new PosixSpawner();
    try {
      await body(spawner, dir);
    } finally {
      await spawner.close();
    }
  });
}

function shell(cwd: string, script: string, env: Record<string, string> = {}): SpawnRequest {
  return { program: "/bin/sh", args: ["-c", script], cwd, env };
}

/** Runs a shell script through Deno.Command as the fallback spawner would, for comparison. */
async function viaDenoCommand(cwd: string, script: string): Promise<Deno.CommandStatus> {
  const { success, code, signal } = await new Deno.Command("/bin/sh", {
    args: ["-c", script],
    cwd,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  return { success, code, signal };
}

async function waitUntilDead(pid: number): Promise<void> {
  for (let i = 0; i < 500 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 10));
  assert(!isAlive(pid), `process ${pid} is still alive`);
}

/** Fields 5 and 6 of /proc/<pid>/stat: process group and session. */
function groupAndSession(pid: number): [number, number] {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return [Number(fields[2]), Number(fields[3])];
}

Deno.test("wait statuses decode as Deno.Command reports them", () => {
  assertEquals(decodeWaitStatus(0), { success: true, code: 0, signal: null }, "exit 0");
  assertEquals(decodeWaitStatus(3 << 8), { success: false, code: 3, signal: null }, "exit 3");
  assertEquals(decodeWaitStatus(9), { success: false, code: 137, signal: "SIGKILL" }, "SIGKILL");
  assertEquals(
    decodeWaitStatus(15 | 0x80),
    { success: false, code: 143, signal: "SIGTERM" },
    "SIGTERM, core",
  );
});

Deno.test("exit codes and signals are reported exactly as Deno.Command reports them", () =>
  withSpawner(async (spawner, dir) => {
    for (
      const script of ["true", "exit 3", "exit 255", "kill -TERM $$", "kill -KILL $$", "kill -USR1 $$"]
    ) {
      const child = await spawner.spawn(shell(dir, script));
      assertEquals(await child.status, await viaDenoCommand(dir, script), script);
    }
  }));

Deno.test("a task leads its own session and process group from the moment it has a pid", () =>
  withSpawner(async (spawner, dir) => {
    const child = await spawner.spawn(shell(dir, "sleep 30"));
    assertEquals(groupAndSession(child.pid), [child.pid, child.pid], "process group and session");
    Deno.kill(-child.pid, "SIGTERM");
    assertEquals((await child.status).signal, "SIGTERM", "ended by the group kill");
  }));

Deno.test("a task runs in its sandbox (made if missing) with the daemon's environment under its own", () =>
  withSpawner(async (spawner, dir) => {
    const sandbox = `${dir}/a/b/sandbox`;
    const script = 'pwd > out; echo "$ONE $HOME" >> out; echo "$(printf "%s" "$2")" >> out';
    const req = shell(sandbox, script, { ONE: "1", HOME: "/nowhere" });
    req.args.push("arg0", "two words", "ünïcode");
    const child = await spawner.spawn(req);
    assertEquals((await child.status).code, 0, "exit code");
    const out = await Deno.readTextFile(`${sandbox}/out`);
    assertEquals(out, `${await Deno.realPath(sandbox)}\n1 /nowhere\nünïcode\n`, "output");
    const path = await spawner.spawn(shell(sandbox, 'test "$PATH" = "$EXPECTED"', {
      EXPECTED: Deno.env.get("PATH") ?? "",
    }));
    assertEquals((await path.status).code, 0, "the daemon's PATH is inherited");
  }));

Deno.test("a task starts with stdin on /dev/null, no other descriptor of the daemon, and Deno.Command's signal dispositions", () =>
  withSpawner(async (spawner, dir) => {
    // What the program itself (not a shell around it) sees.
    const script =
      "exec >out; readlink /proc/self/fd/0; ls /proc/self/fd | grep -vx '[0123]' || echo none; " +
      "grep -E '^Sig(Blk|Ign)' /proc/self/status";
    const child = await spawner.spawn(shell(dir, script));
    assertEquals((await child.status).code, 0, "exit code");
    const [stdin, others, ...masks] = (await Deno.readTextFile(`${dir}/out`)).trim().split("\n");
    assertEquals(stdin, "/dev/null", "stdin");
    assertEquals(others, "none", "descriptors beyond 0-2 (3 is ls's own)");
    await viaDenoCommand(dir, script);
    // (Deno.Command's children do inherit a descriptor of Deno's: a pipe.)
    const viaDeno = (await Deno.readTextFile(`${dir}/out`)).split("\n").filter((l) => l.startsWith("Sig"));
    assertEquals(masks, viaDeno, "blocked and ignored signals");
    assert(masks.some((m) => m.startsWith("SigBlk:\t0000000000000000")), `no signal blocked: ${masks}`);
  }));

Deno.test("a program that is missing or cannot run is a clear error", () =>
  withSpawner(async (spawner, dir) => {
    const errors: string[] = [];
    for (const program of [`${dir}/no-such-program`, "no-such-program-4711", dir]) {
      await spawner.spawn({ program, args: [], cwd: dir, env: {} }).then(
        () => errors.push("started"),
        (e: Error) => errors.push(e.message),
      );
    }
    assertEquals(errors, [
      `Cannot start ${dir}/no-such-program: No such file or directory`,
      'program "no-such-program-4711" was not found on PATH',
      `Cannot start ${dir}: Permission denied`,
    ], "errors");
  }));

Deno.test("reaping takes only its own children: Deno.Command's children keep their statuses", () =>
  withSpawner(async (spawner, dir) => {
    // Both kinds end at the same time, many times over, so each one's SIGCHLD finds the other's zombies.
    const ours = Array.from({ length: 60 }, (_, i) => spawner.spawn(shell(dir, `exit ${i % 7}`)));
    const theirs = Array.from({ length: 30 }, (_, i) => viaDenoCommand(dir, `exit ${10 + i % 5}`));
    const ourStatuses = await Promise.all((await Promise.all(ours)).map((c) => c.status));
    assertEquals(ourStatuses.map((s) => s.code), ourStatuses.map((_, i) => i % 7), "our exit codes");
    const theirStatuses = await Promise.all(theirs);
    assertEquals(theirStatuses.map((s) => s.code), theirStatuses.map((_, i) => 10 + i % 5), "Deno's");
  }));

Deno.test("a burst of short tasks is reaped completely, however fast each one exits", () =>
  withSpawner(async (spawner, dir) => {
    const children = await Promise.all(
      Array.from({ length: 300 }, (_, i) => spawner.spawn(shell(`${dir}/${i}`, "true"))),
    );
    const statuses = await Promise.all(children.map((c) => c.status));
    assertEquals(statuses.filter((s) => s.success).length, 300, "tasks that succeeded");
  }));

Deno.test("what a task leaves running in its group is killed when it exits", () =>
  withSpawner(async (spawner, dir) => {
    const child = await spawner.spawn(shell(dir, "sleep 30 & echo $! > bg.pid"));
    await child.status;
    const bg = Number((await Deno.readTextFile(`${dir}/bg.pid`)).trim());
    // SIGKILLed before the status settled; it may take a moment to be scheduled and die.
    await waitUntilDead(bg);
  }));

Deno.test("closing the spawner rejects the statuses it still waits for and leaves the processes alone", () =>
  withDir(async (dir) => {
    const spawn = new PosixSpawn();
    const child = spawn.spawn({ program: "/bin/sh", args: ["-c", "sleep 30"], cwd: dir, env: [] });
    spawn.close();
    const err = await child.status.then(() => undefined, (e: Error) => e.message);
    assertEquals(err, "the spawner was closed", "status after close");
    assertEquals(groupAndSession(child.pid)[0], child.pid, "the process still runs");
    Deno.kill(-child.pid, "SIGKILL");
    // Nobody reaps it now: it stays a zombie until this process ends.
    await waitUntilDead(child.pid);
  }));

Deno.test("production's worker starts processes with posix_spawn, or through setsid where libc is missing", async () => {
  const withLibc = new WorkerSpawner("auto");
  const without = new WorkerSpawner("auto", "/no/such/libc.so.6");
  const insisting = new WorkerSpawner("posix_spawn", "/no/such/libc.so.6");
  try {
    assertEquals((await withLibc.mode()).mode, "posix_spawn", "with libc");
    const hello = await without.mode();
    assertEquals(hello.mode, "setsid", "without libc");
    assert(hello.why?.includes("/no/such/libc.so.6"), `the reason names the library: ${hello.why}`);
    await withDir(async (dir) => {
      const child = await without.spawn(shell(dir, "exit 4"));
      assertEquals((await child.status).code, 4, "exit code through setsid");
      const refused = await insisting.spawn(shell(dir, "true")).then(
        () => "started",
        (e: Error) => e.message,
      );
      assert(refused.startsWith("cannot start processes with posix_spawn: "), refused);
    });
  } finally {
    await Promise.all([withLibc.close(), without.close(), insisting.close()]);
  }
});

Deno.test("a minicluster in a process without FFI permission runs its tasks through setsid", async () => {
  const dir = await Deno.makeTempDir({ prefix: "posix_spawner_test_" });
  try {
    const script = `${dir}/run.ts`;
    await Deno.writeTextFile(
      script,
      `import { createSpawner, type WorkerSpawner } from ${
        JSON.stringify(import.meta.resolve("./spawner.ts"))
      };
import { Minicluster } from ${JSON.stringify(import.meta.resolve("./minicluster.ts"))};
import { makeSpec } from ${JSON.stringify(import.meta.resolve("../backend_testing.ts"))};
const spawner = createSpawner("auto") as WorkerSpawner;
const hello = await spawner.mode();
console.log(hello.mode, hello.why);
await spawner.close();
const mc = new Minicluster({ dataDir: ${JSON.stringify(`${dir}/data`)}, agents: 1, spawnInWorker: true });
const done = Promise.withResolvers<string>();
mc.start((events) => {
  for (const e of events) {
    if (e.kind === "task-status" && e.status.state !== "TASK_STAGING" && e.status.state !== "TASK_STARTING" &&
      e.status.state !== "TASK_RUNNING") done.resolve(e.status.state);
  }
});
const host = { hostname: "agent-0", agentId: "minicluster-S0" };
// Field 6 of /proc/<pid>/stat is the session.
mc.launch([makeSpec(host, "echo $$ > pid; cut -d' ' -f6 /proc/$$/stat > sid; echo hi", { taskId: "t-1" })]);
console.log(await done.promise);
console.log((await mc.logs("t-1", "stdout"))?.trim());
await mc.stop();
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-prompt", "--allow-read", "--allow-write", "--allow-run", "--allow-env", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 0, `exit code of the child deno (output: ${text})`);
    const expected = ["setsid no FFI permission (--allow-ffi)", "TASK_FINISHED", "hi"];
    assertEquals(text.trim().split("\n"), expected, "output");
    const sandbox = `${dir}/data/agents/minicluster-S0/tasks/t-1`;
    const pid = (await Deno.readTextFile(`${sandbox}/pid`)).trim();
    assertEquals((await Deno.readTextFile(`${sandbox}/sid`)).trim(), pid, "the task led its own session");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
