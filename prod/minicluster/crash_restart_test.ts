/** A minicluster started on the data dir of one that was SIGKILLed ends the tasks the dead one left running. */
import type { ProcessRecord } from "./_task_records.ts";
import { DATA_DIR_ENV, dataDirMark, recordsDir } from "./_task_records.ts";
import { sessionCommand, signalGroup } from "./_session.ts";
import { Minicluster } from "./minicluster.ts";
import { isAlive, makeSpec, Recorder } from "../backend_testing.ts";

const AGENT_0 = { hostname: "agent-0", agentId: "minicluster-S0" };
const SECRET = "s3cr3t-of-the-doomed-run";

/** What the doomed daemon prints once its task runs and is recorded. */
interface Launched {
  taskId: string;
  pid: number;
}

function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(message);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function eventually(probe: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}

/** The pid a task's shell writes to `file`: waits until the file holds one (it exists, empty, before). */
async function pidIn(file: string): Promise<number> {
  let pid = NaN;
  await eventually(() => {
    try {
      pid = Number(Deno.readTextFileSync(file).trim() || NaN);
    } catch { /* not yet made */ }
    return Number.isInteger(pid) && pid > 1;
  }, `a pid in ${file}`);
  return pid;
}

function files(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name);
  } catch {
    return [];
  }
}

/**
 * The daemon this test kills (`deno run` of this file): production's minicluster with one agent, running a
 * shell task that has a child of its own. Prints the task's id and pid, then waits to be killed.
 */
async function runDoomedDaemon(dataDir: string): Promise<void> {
  const mc = new Minicluster({ dataDir, agents: 1, spawnInWorker: true });
  const rec = new Recorder();
  mc.start(rec.sink);
  const spec = makeSpec(AGENT_0, "sleep 300 & echo $! >grandchild; wait", {
    secrets: [{ path: "/etc/app/token", data: btoa(SECRET) }],
  });
  mc.launch([spec]);
  await rec.waitState(spec.taskId, "TASK_RUNNING");
  const sandbox = mc.sandboxOf(spec.taskId)!;
  const records = recordsDir(dataDir, AGENT_0.agentId);
  await eventually(
    () => files(records).includes(spec.taskId) && files(sandbox).includes("grandchild"),
    "the task's record and its child",
  );
  console.log(JSON.stringify({ taskId: spec.taskId, pid: mc.pid(spec.taskId)! } satisfies Launched));
  setInterval(() => {}, 60_000);
}

if (import.meta.main) await runDoomedDaemon(Deno.args[0]);

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    text += chunk;
    if (text.includes("\n")) break;
  }
  return text.split("\n")[0];
}

Deno.test("a minicluster restarted after a kill -9 ends the old tasks' process groups, and nothing else", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "minicluster_crash_test_" });
  const daemon = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", import.meta.filename!, dataDir],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  // Not the minicluster's: a process of its own session whose pid a stale record names with another start.
  const bystander = sessionCommand("sleep", ["300"], { stdin: "null", stdout: "null", stderr: "null" })
    .spawn();
  const pids: number[] = [];
  let restarted: Minicluster | undefined;
  try {
    const line = await Promise.race([
      firstLine(daemon.stdout),
      delay(30_000).then(() => "timed out"),
    ]);
    assert(line.startsWith("{"), `the doomed daemon did not report its task: ${JSON.stringify(line)}`);
    const launched: Launched = JSON.parse(line);
    const sandbox = `${dataDir}/agents/${AGENT_0.agentId}/tasks/${launched.taskId}`;
    const grandchild = await pidIn(`${sandbox}/grandchild`);
    pids.push(launched.pid, grandchild);
    const records = recordsDir(dataDir, AGENT_0.agentId);
    const stale: ProcessRecord = { pid: bystander.pid, startTicks: "1" };
    Deno.writeTextFileSync(`${records}/stale-task`, JSON.stringify(stale));

    daemon.kill("SIGKILL");
    await daemon.status;
    await delay(200);
    assert(isAlive(launched.pid) && isAlive(grandchild), "the task outlives its daemon (re-parented)");
    const token = `${sandbox}/etc/app/token`;
    assert(Deno.readTextFileSync(token) === SECRET, "the secret is in the sandbox of the run still going");

    restarted = new Minicluster({ dataDir, agents: 1, spawnInWorker: true });
    // The run it ended goes as one ending in it would: its secrets with it, its logs kept.
    assert(!files(`${sandbox}/etc/app`).includes("token"), "the ended run's secret is still on disk");
    assert(files(sandbox).includes("grandchild"), "the sandbox's other files stay");
    assert(files(`${dataDir}/agents/${AGENT_0.agentId}/secrets`).length === 0, "a record of secrets left");
    await eventually(() => !isAlive(launched.pid), `the old task process ${launched.pid} to end`);
    await eventually(() => !isAlive(grandchild), `the old task's child ${grandchild} to end`);
    assert(isAlive(bystander.pid), "a process the records do not vouch for was killed");
    assert(files(records).length === 0, `records left: ${files(records)}`);

    // The restarted agent records its own tasks and forgets them once they end.
    const rec = new Recorder();
    restarted.start(rec.sink);
    const spec = makeSpec(AGENT_0, "exit 0");
    restarted.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    await restarted.stop();
    assert(files(records).length === 0, `records left after the task ended: ${files(records)}`);
  } finally {
    try {
      daemon.kill("SIGKILL");
    } catch { /* already dead */ }
    await daemon.status;
    await daemon.stdout.cancel().catch(() => {});
    for (const pid of pids) signalGroup(pid, "SIGKILL", true);
    signalGroup(bystander.pid, "SIGKILL", true);
    await bystander.status;
    await restarted?.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("processes a crash kept from being recorded are found by their environment and ended", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "minicluster_mark_test_" });
  const otherDir = await Deno.makeTempDir({ prefix: "minicluster_mark_other_" });
  // What an agent's spawn leaves when the daemon dies before the record is written: a task leading its own
  // session, with a child, both carrying the data dir's mark; and a task of another minicluster.
  const marked = (dir: string) =>
    sessionCommand("/bin/sh", ["-c", "sleep 300 & echo $! >child; wait"], {
      cwd: dir,
      env: { [DATA_DIR_ENV]: dataDirMark(dir) },
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  const orphan = marked(dataDir), other = marked(otherDir);
  const pids = [orphan.pid, other.pid];
  let restarted: Minicluster | undefined;
  try {
    await eventually(
      () => files(dataDir).includes("child") && files(otherDir).includes("child"),
      "the children",
    );
    const child = await pidIn(`${dataDir}/child`);
    pids.push(child);
    restarted = new Minicluster({ dataDir, agents: 1 });
    await eventually(() => !isAlive(orphan.pid), `the unrecorded task ${orphan.pid} to end`);
    await eventually(() => !isAlive(child), `its child ${child} to end`);
    assert(isAlive(other.pid), "another minicluster's task was killed");

    // The agents mark what they start with the data dir, as the restart looks for it.
    const rec = new Recorder();
    restarted.start(rec.sink);
    const spec = makeSpec(AGENT_0, `echo "$${DATA_DIR_ENV}" >mark`);
    restarted.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    const mark = Deno.readTextFileSync(`${restarted.sandboxOf(spec.taskId)}/mark`).trim();
    assert(mark === dataDirMark(dataDir), `the task's mark is ${JSON.stringify(mark)}`);
  } finally {
    for (const pid of pids) signalGroup(pid, "SIGKILL", true);
    await orphan.status;
    await other.status;
    await restarted?.stop();
    await Deno.remove(dataDir, { recursive: true });
    await Deno.remove(otherDir, { recursive: true });
  }
});
