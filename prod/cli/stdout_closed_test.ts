/**
 * A reader that goes away (`peloton ... | head -1`) ends the CLI quietly, exit 0, as `task list | head` does:
 * `task logs` and `pod logs` without a BrokenPipe stack trace, `watch pod` at its first line that cannot be
 * written, its watch cancelled on the server as Ctrl-C cancels it.
 */
import assert from "node:assert/strict";
import { cli, createJob, pumpOutput, ROOT, waitFor, withUp } from "../testing.ts";
import { batchJobYaml } from "../testing_cluster.ts";
import { settlesWithin } from "../settle.ts";

/** `peloton ARGV -m URL | head -N` in bash: the CLI's exit code, what it said on stderr, what head printed. */
function pipedToHead(url: string, lines: number, ...argv: string[]) {
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const cliCmd = [Deno.execPath(), "run", "-A", `${ROOT}/prod/cli/main.ts`, ...argv, "-m", url].map(quote)
    .join(" ");
  const child = new Deno.Command("bash", {
    // The CLI's exit code goes last on stderr, after whatever the CLI itself wrote there.
    args: ["-c", `${cliCmd} | head -${lines}; echo "exit ${"${PIPESTATUS[0]}"}" >&2`],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const { out, err: errText, pumps } = pumpOutput(child);
  return {
    out,
    /** The CLI's exit code and its stderr, once the pipeline ends; an error if it does not within `ms`. */
    async done(ms = 20_000): Promise<{ code: number; err: string }> {
      if (!await settlesWithin(child.status, ms)) {
        // The CLI, not bash, is what hangs: kill the whole group it runs in.
        child.kill("SIGKILL");
        await new Deno.Command("pkill", { args: ["-KILL", "-P", String(child.pid)] }).output();
        await child.status;
        throw new Error(
          `peloton ${argv.join(" ")} | head -${lines} did not end within ${ms} ms: ${errText()}`,
        );
      }
      await pumps;
      const err = errText();
      const m = /exit (\d+)\n$/.exec(err);
      assert.ok(m, err);
      return { code: Number(m[1]), err: err.slice(0, m.index) };
    },
    async kill() {
      try {
        child.kill("SIGKILL");
      } catch { /* ended */ }
      await child.status;
    },
  };
}

Deno.test({
  name: "peloton ... | head: the CLI ends quietly, exit 0, when its reader goes (logs, and a watch at once)",
  sanitizeResources: false,
  async fn(t) {
    await withUp("peloton-stdout-closed-", async (up, dir) => {
      await t.step("task logs and pod logs of a long file, cut by head: no BrokenPipe, exit 0", async () => {
        await Deno.writeTextFile(`${dir}/many.yaml`, batchJobYaml("many", 1, "seq 1 200000"));
        const job = await createJob(up.url, `${dir}/many.yaml`);
        await waitFor("the job to succeed", async () => {
          const r = await cli(up.url, "task", "get", job, "0", "-j");
          return r.code === 0 && JSON.parse(r.out).result.runtime.state === "SUCCEEDED" || undefined;
        });
        for (
          const [argv, lines] of [[["task", "logs", job, "0"], 2], [["pod", "logs", `${job}-0`], 1]] as const
        ) {
          const run = pipedToHead(up.url, lines, ...argv);
          const r = await run.done();
          assert.deepEqual([r.code, r.err], [0, ""], argv.join(" "));
          assert.equal(run.out(), lines === 2 ? "1\n2\n" : "1\n");
        }
        // As `task list | head` already did.
        const list = await pipedToHead(up.url, 1, "task", "list", job).done();
        assert.deepEqual([list.code, list.err], [0, ""]);
      });

      await t.step(
        "watch pod | head -1 ends at the first line it cannot write, its watch cancelled",
        async () => {
          await Deno.writeTextFile(
            `${dir}/svc.yaml`,
            `type: SERVICE\n${batchJobYaml("svc", 1, "sleep 600")}`,
          );
          const job = await createJob(up.url, `${dir}/svc.yaml`);
          const run = pipedToHead(up.url, 1, "watch", "pod", job);
          try {
            const watchId = await waitFor("the watch id", () => {
              return Promise.resolve(/^Watch (\S+)\n/.exec(run.out())?.[1]);
            }, 20_000);
            // head has gone; the next change is the first line the watch cannot write.
            await waitFor("the pod to run", async () => {
              const r = await cli(up.url, "task", "get", job, "0", "-j");
              return r.code === 0 && JSON.parse(r.out).result.runtime.state === "RUNNING" || undefined;
            });
            assert.equal((await cli(up.url, "job", "stop", job)).code, 0);
            const r = await run.done();
            assert.deepEqual([r.code, r.err], [0, ""]);
            // Its watch has ended on the server too: there is none to cancel.
            await waitFor("the server to end the watch", async () => {
              const c = await cli(up.url, "watch", "cancel", watchId);
              return c.code === 1 && /not-found/.test(c.err) || undefined;
            }, 10_000);
          } finally {
            await run.kill();
          }
        },
      );
    });
  },
});

/** `peloton ARGV` in bash with `redirect` for its stdout: its exit code and stderr. */
async function redirected(redirect: string, ...argv: string[]): Promise<{ code: number; err: string }> {
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const cliCmd = [Deno.execPath(), "run", "-A", `${ROOT}/prod/cli/main.ts`, ...argv].map(quote).join(" ");
  const r = await new Deno.Command("bash", {
    args: ["-c", `${cliCmd} ${redirect}`],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: r.code, err: new TextDecoder().decode(r.stderr) };
}

Deno.test("a stdout that cannot be written (a full disk) is said in one line on stderr, exit 1, no stack trace", async () => {
  for (const argv of [["job", "validate", `${ROOT}/scenarios/jobs/testjob.yaml`], ["--help"]]) {
    const r = await redirected("> /dev/full", ...argv);
    assert.deepEqual(
      [r.code, r.err],
      [1, "peloton: cannot write its output: No space left on device (os error 28)\n"],
      argv.join(" "),
    );
  }
});
