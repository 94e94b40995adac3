/** `--mesos-master`: checked at start, by `up` and `hostmgr` alike, as an http or https URL with a host, or host:port. */
import assert from "node:assert/strict";
import { UsageError } from "./command.ts";
import { ROOT } from "../testing.ts";
import { settlesWithin } from "../settle.ts";
import { backendFlags } from "./up_command.ts";

const FLAGS = {
  backend: "mesos",
  agents: "3",
  "agent-cpus": "4",
  "agent-mem-mb": "8192",
  "agent-disk-mb": "20480",
};

/** The master `backendFlags` takes, or its UsageError's message. */
async function masterOf(value: string): Promise<string | undefined> {
  try {
    return (await backendFlags({ ...FLAGS, "mesos-master": value })).mesosMaster;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    return e.message;
  }
}

Deno.test("--mesos-master: an http or https URL with a host, or several separated by commas", async () => {
  for (
    const good of [
      "http://127.0.0.1:5050",
      "https://mesos.example.com:5050/",
      "http://[::1]:5050",
      "http://m1:5050,http://m2:5050",
      "http://m1:5050, https://m2:5050",
      "127.0.0.1:5050",
      "mesos-master.example.com:5050",
      "[::1]:5050",
      "m1:5050,http://m2:5050",
    ]
  ) {
    assert.equal(await masterOf(good), good);
  }
  const expected = "expected the master's http or https URL with a host (e.g. http://127.0.0.1:5050) " +
    "or its host:port, or several separated by commas";
  for (
    const [bad, why] of [
      ["not-a-url", '"not-a-url" is neither a URL nor host:port'],
      ["127.0.0.1", '"127.0.0.1" is neither a URL nor host:port'],
      ["localhost:http", '"localhost:http" is neither a URL nor host:port'],
      ["m1:5050/mesos", '"m1:5050/mesos" is neither a URL nor host:port'],
      ["127.0.0.1:0", '"127.0.0.1:0" names port 0'],
      [
        "http://m1:5050/some/path",
        '"http://m1:5050/some/path" has a path, query or fragment (the client talks to the master\'s /api/v1)',
      ],
      [
        "http://m1:5050?q=1",
        '"http://m1:5050?q=1" has a path, query or fragment (the client talks to the master\'s /api/v1)',
      ],
      [
        "http://m1:5050#f",
        '"http://m1:5050#f" has a path, query or fragment (the client talks to the master\'s /api/v1)',
      ],
      [
        "http://u:p@m1:5050",
        "a master URL carries no credentials: give them with --mesos-principal and --mesos-secret-file",
      ],
      ["zk://zk1:2181/mesos", '"zk://zk1:2181/mesos" is a zk: URL'],
      ["file:///tmp/master", '"file:///tmp/master" is a file: URL'],
      ["http://", '"http://" is not a URL'],
      ["http://m1:5050,", '"" names no master'],
      ["http://m1:5050,,http://m2:5050", '"" names no master'],
      [" ", '"" names no master'],
    ]
  ) {
    const shown = JSON.stringify(bad.replace("//u:p@", "//***@"));
    assert.equal(await masterOf(bad), `--mesos-master: got ${shown}: ${why}; ${expected}`, bad);
  }
});

Deno.test("--mesos-master without --backend mesos is refused, as the credentials' flags are", async () => {
  await assert.rejects(
    backendFlags({ ...FLAGS, backend: "minicluster", "mesos-master": "http://127.0.0.1:5050" }),
    (e: Error) => e instanceof UsageError && e.message === "--mesos-master: only used with --backend mesos",
  );
});

Deno.test({
  name: "up and hostmgr refuse a bad --mesos-master at start: exit 2, naming the flag",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-mesos-master-flag-" });
    try {
      for (const command of ["up", "hostmgr"]) {
        const child = new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            `${ROOT}/prod/cli/main.ts`,
            command,
            "--port",
            "0",
            "--data-dir",
            `${dir}/${command}`,
            "--backend",
            "mesos",
            "--mesos-master",
            "not-a-url",
          ],
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        const output = child.output();
        // One that starts instead runs until it is stopped.
        if (!(await settlesWithin(child.status, 20_000))) child.kill("SIGKILL");
        const r = await output;
        const text = (b: Uint8Array) => new TextDecoder().decode(b).trimEnd();
        const [out, err] = [text(r.stdout), text(r.stderr)];
        assert.equal(r.code, 2, `${command} exited ${r.code}:\n${out}\n${err}`);
        assert.match(
          err,
          /--mesos-master: got "not-a-url": "not-a-url" is neither a URL nor host:port; expected the master's http or https URL/,
        );
        assert.equal(out, "", `${command} printed ${out}`);
        // Refused before anything was made.
        assert.equal(await Deno.stat(`${dir}/${command}`).then(() => true, () => false), false, command);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
