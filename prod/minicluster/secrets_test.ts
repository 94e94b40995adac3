/** A job's secrets in the minicluster: written under the sandbox before the command starts, bad ones refused. */
import assert from "node:assert/strict";
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { filesUnder, makeSpec as specFor, Recorder } from "../backend_testing.ts";
import { Minicluster } from "./minicluster.ts";
import { secretPathParts, secretsProblem } from "./secrets.ts";
import { withMinicluster } from "./testing.ts";

const AGENT_0 = { hostname: "agent-0", agentId: "minicluster-S0" };
const TEXT = "s3cr3t-Pa55w0rd-do-not-log";
const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const TEXT_B64 = b64(new TextEncoder().encode(TEXT));
/** Bytes no text decoding keeps intact: NUL, 0xff, a lone UTF-8 continuation byte. */
const BINARY = new Uint8Array([0, 1, 0xfe, 0xff, 0x80, 10, 0x41]);

function makeSpec(command: string, overrides: Partial<LaunchSpec> = {}): LaunchSpec {
  return specFor(AGENT_0, command, overrides);
}

function withCluster(body: (mc: Minicluster, rec: Recorder, dataDir: string) => Promise<void>) {
  // Production's spawner: a worker thread.
  return withMinicluster("minicluster_secrets_test_", {
    agents: 1,
    stopGracePeriodMs: 500,
    spawnInWorker: true,
  }, body);
}

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

Deno.test("secret paths: absolute ones go below the sandbox, relative ones into it; .., empty and output files refused", () => {
  assert.deepEqual(secretPathParts("/etc/app/key"), ["etc", "app", "key"]);
  assert.deepEqual(secretPathParts("conf//./key"), ["conf", "key"]);
  assert.equal(secretPathParts(""), "path is empty");
  assert.equal(secretPathParts("/"), "path names no file");
  assert.equal(secretPathParts("a/../../b"), 'path must not have ".." components');
  assert.equal(secretPathParts("/stdout"), "path is the task's stdout file");
  assert.deepEqual(secretPathParts("logs/stderr"), ["logs", "stderr"]);
  assert.equal(
    secretsProblem([{ path: "/k", data: TEXT_B64 }, { path: "k", data: TEXT_B64 }]),
    'secrets[1].path: "k" is given twice: secrets[0].path "/k" is the same file',
  );
  // The rule a job's secrets were held to when it was created: no file where another's directory is, no
  // path naming a directory.
  assert.equal(
    secretsProblem([{ path: "sec/a", data: TEXT_B64 }, { path: "sec/a/b", data: TEXT_B64 }]),
    'secrets[1].path: "sec/a/b" is below secrets[0].path "sec/a", a file, not a directory',
  );
  assert.equal(
    secretsProblem([{ path: "sec/", data: TEXT_B64 }]),
    `secrets[0].path: got "sec/", expected a file's path, not a directory's (it ends in /)`,
  );
  // Unpadded base64 is read as Mesos reads bytes; anything else is refused without being quoted.
  assert.equal(secretsProblem([{ path: "k", data: TEXT_B64.replace(/=+$/, "") }]), undefined);
  assert.equal(secretsProblem([{ path: "k", data: `${TEXT}!` }]), 'secrets[0] "k": data is not valid base64');
});

Deno.test("a task's secrets are files in its sandbox, 0400 in 0700 directories, before its command starts; the data shows nowhere else", async () => {
  await withCluster(async (mc, rec, dataDir) => {
    const secrets = [
      { path: "/etc/app/key", data: TEXT_B64 },
      { path: "conf/bin.key", data: b64(BINARY) },
    ];
    // The command's first acts read them: they were there before it started.
    const spec = makeSpec(
      "cat conf/bin.key etc/app/key; stat -c '%a %n' etc etc/app etc/app/key conf conf/bin.key >&2; env >env.txt",
      { secrets },
    );
    mc.launch([spec]);
    const done = await rec.waitState(spec.taskId, "TASK_FINISHED");
    assert.equal(done.exitCode, 0);
    const sandbox = mc.sandboxOf(spec.taskId)!;
    const stdout = await Deno.readFile(`${sandbox}/stdout`);
    assert.deepEqual(stdout, new Uint8Array([...BINARY, ...new TextEncoder().encode(TEXT)]), "exact bytes");
    assert.equal(
      await mc.logs(spec.taskId, "stderr"),
      "700 etc\n700 etc/app\n400 etc/app/key\n700 conf\n400 conf/bin.key\n",
      "modes",
    );

    // Not in the environment, the statuses, or any file of the agent but the secrets and the task's stdout.
    const plain = new TextEncoder().encode(TEXT);
    const encoded = new TextEncoder().encode(TEXT_B64);
    assert.ok(!JSON.stringify(rec.events).includes(TEXT) && !JSON.stringify(rec.events).includes(TEXT_B64));
    const expected = new Set([`${sandbox}/etc/app/key`, `${sandbox}/conf/bin.key`, `${sandbox}/stdout`]);
    const files = await filesUnder(dataDir);
    assert.ok(files.includes(`${sandbox}/env.txt`), "the task's environment was dumped");
    for (const file of files) {
      const bytes = await Deno.readFile(file);
      const leaks = contains(bytes, plain) || contains(bytes, encoded) || contains(bytes, BINARY);
      assert.equal(leaks, expected.has(file), `${file} ${expected.has(file) ? "holds" : "leaks"} the secret`);
    }
  });
});

Deno.test("secrets with a .. path, an empty path, the task's output file or data that is not base64 are refused, naming the path only", async () => {
  await withCluster(async (mc, rec) => {
    const cases: [LaunchSpec["secrets"], string][] = [
      [
        [{ path: "../escape", data: TEXT_B64 }],
        'secrets[0].path: got "../escape", expected a path without ".." parts',
      ],
      [[{ path: "", data: TEXT_B64 }], 'secrets[0].path: got "", expected the path to write it at'],
      [
        [{ path: "stdout", data: TEXT_B64 }],
        `secrets[0].path: got "stdout", the task's own log file in its sandbox`,
      ],
      [
        [{ path: "/ok", data: TEXT_B64 }, { path: "/etc/key", data: `${TEXT}!` }],
        'secrets[1] "/etc/key": data is not valid base64',
      ],
    ];
    const specs = cases.map(([secrets], i) => makeSpec("touch ran", { secrets, taskId: `bad-${i}-1` }));
    mc.launch(specs);
    for (const [i, spec] of specs.entries()) {
      const status = await rec.waitState(spec.taskId, "TASK_ERROR");
      assert.equal(status.reason, "REASON_TASK_INVALID");
      assert.equal(status.message, `Task has an invalid secret: ${cases[i][1]}`);
      assert.deepEqual(rec.states(spec.taskId), ["TASK_ERROR"], "never staged");
    }
    assert.ok(!JSON.stringify(rec.events).includes(TEXT));
    // Refused before the agent saw them: no sandbox, nothing beside one.
    const tasks = `${mc.dataDir}/agents/${AGENT_0.agentId}/tasks`;
    await assert.rejects(Deno.lstat(`${tasks}/escape`), Deno.errors.NotFound);
    await assert.rejects(Deno.lstat(`${tasks}/${specs[0].taskId}`), Deno.errors.NotFound);
  });
});

Deno.test("a secret is never written through a symlink in the sandbox: a volume's, or one an earlier run left; a file in its place is replaced", async () => {
  const outside = await Deno.makeTempDir({ prefix: "secrets_outside_" });
  try {
    await withCluster(async (mc, rec) => {
      // An earlier run of the task leaves `etc` pointing out of its sandbox, and a file at the secret's path.
      const first = makeSpec(`ln -s ${outside} etc && mkdir conf && echo old >conf/key`);
      mc.launch([first]);
      await rec.waitState(first.taskId, "TASK_FINISHED");
      const again = {
        ...first,
        secrets: [{ path: "conf/key", data: TEXT_B64 }],
        command: { ...first.command },
      };
      again.command.value = "cat conf/key";
      mc.launch([again]);
      await rec.waitStatus(
        () => rec.statuses(first.taskId).filter((x) => x.state === "TASK_FINISHED").length === 2,
        "the second run to finish",
      );
      assert.equal(await mc.logs(first.taskId, "stdout"), TEXT, "the old file was replaced");

      const through = { ...again, secrets: [{ path: "/etc/passwd", data: TEXT_B64 }] };
      mc.launch([through]);
      const failed = await rec.waitStatus(
        (s) => s.taskId === first.taskId && s.state === "TASK_FAILED",
        "the third run to fail",
      );
      assert.equal(failed.reason, "REASON_CONTAINER_LAUNCH_FAILED");
      assert.equal(
        failed.message,
        'Failed to launch container: secret "/etc/passwd": etc in the sandbox is a symlink',
      );
      assert.deepEqual([...Deno.readDirSync(outside)], [], "nothing written outside the sandbox");

      // A persistent volume is a symlink to the agent's volume dir: a secret does not go into it.
      const volume = { volumeId: "job-volume", containerPath: "data", sizeMb: 8 };
      const inVolume = makeSpec("true", { volume, secrets: [{ path: "data/key", data: TEXT_B64 }] });
      mc.launch([inVolume]);
      const refused = await rec.waitState(inVolume.taskId, "TASK_FAILED");
      assert.equal(
        refused.message,
        'Failed to launch container: secret "data/key": data in the sandbox is a symlink',
      );
      assert.deepEqual(rec.states(inVolume.taskId), ["TASK_STAGING", "TASK_FAILED"], "never started");
      assert.equal(await mc.logs(inVolume.taskId, "stdout"), "", "its output files exist, empty");
    });
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("a run's secret files are removed from its sandbox when it ends, killed or finished; its logs stay", async () => {
  const outside = await Deno.makeTempDir({ prefix: "secrets_outside_" });
  try {
    await withCluster(async (mc, rec, dataDir) => {
      const secrets = [{ path: "/etc/app/token", data: TEXT_B64 }, { path: "conf/key", data: TEXT_B64 }];
      const long = makeSpec("test -f etc/app/token && echo read; sleep 600", { secrets });
      mc.launch([long]);
      await rec.waitState(long.taskId, "TASK_RUNNING");
      const sandbox = mc.sandboxOf(long.taskId)!;
      assert.equal(Deno.readTextFileSync(`${sandbox}/etc/app/token`), TEXT, "there while it runs");
      // Its command has found the secret (RUNNING comes as the process starts, maybe before its first line).
      for (
        let waited = 0;
        waited < 10_000 && await mc.logs(long.taskId, "stdout") !== "read\n";
        waited += 20
      ) {
        await new Promise((r) => setTimeout(r, 20));
      }
      mc.kill([{ taskId: long.taskId, agentId: AGENT_0.agentId, gracePeriodMs: 100 }]);
      await rec.waitState(long.taskId, "TASK_KILLED");
      for (const file of ["etc/app/token", "conf/key"]) {
        assert.throws(() => Deno.lstatSync(`${sandbox}/${file}`), Deno.errors.NotFound, `${file} left`);
      }
      assert.equal(await mc.logs(long.taskId, "stdout"), "read\n", "the logs stay");
      assert.deepEqual(
        [...Deno.readDirSync(`${dataDir}/agents/${AGENT_0.agentId}/secrets`)],
        [],
        "no record",
      );

      // A task that put a link where its secret's directory was: what the link leads to is not touched.
      await Deno.writeTextFile(`${outside}/key`, "not a secret");
      const linked = makeSpec(`rm -rf conf && ln -s ${outside} conf`, { secrets });
      mc.launch([linked]);
      await rec.waitState(linked.taskId, "TASK_FINISHED");
      const other = mc.sandboxOf(linked.taskId)!;
      assert.throws(() => Deno.lstatSync(`${other}/etc/app/token`), Deno.errors.NotFound);
      assert.equal(Deno.readTextFileSync(`${outside}/key`), "not a secret", "followed a link out");
    });
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});
