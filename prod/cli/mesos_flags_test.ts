/** `--mesos-principal` and `--mesos-secret-file`: the Mesos backend's credentials, the secret from a file. */
import assert from "node:assert/strict";
import { UsageError } from "./command.ts";
import { daemonCommands } from "./daemon_commands.ts";
import { type CliIo, runCli } from "./main.ts";
import { backendFlags, upCommand } from "./up_command.ts";

const MESOS = {
  backend: "mesos",
  "mesos-master": "http://127.0.0.1:5050",
  agents: "3",
  "agent-cpus": "4",
  "agent-mem-mb": "8192",
  "agent-disk-mb": "20480",
};

/** The credentials `backendFlags` reads, or its UsageError's message (FILE for the secret file's path). */
async function credentialsOf(flags: Record<string, unknown>, secret?: string): Promise<unknown> {
  const dir = await Deno.makeTempDir({ prefix: "peloton-mesos-flags-" });
  const file = `${dir}/secret`;
  if (secret !== undefined) await Deno.writeTextFile(file, secret);
  const given = Object.fromEntries(
    Object.entries(flags).map(([k, v]) => [k, v === "FILE" ? file : v]),
  );
  try {
    const parsed = await backendFlags({ ...MESOS, ...given });
    return parsed.mesosCredentials;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    return e.message.replaceAll(file, "FILE");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("--mesos-principal with --mesos-secret-file: the secret is the file's, trailing newlines stripped", async () => {
  const flags = { "mesos-principal": "peloton", "mesos-secret-file": "FILE" };
  assert.deepEqual(await credentialsOf(flags, "s3cret\n"), { principal: "peloton", secret: "s3cret" });
  assert.deepEqual(await credentialsOf(flags, "s3 cret\r\n\n"), { principal: "peloton", secret: "s3 cret" });
  assert.equal(await credentialsOf({}), undefined, "none without the flags");
});

Deno.test("--mesos-principal and --mesos-secret-file: each needs the other, and a readable file with a secret", async () => {
  assert.equal(
    await credentialsOf({ "mesos-principal": "peloton" }),
    '--mesos-secret-file: expected the file holding the secret of principal "peloton" (--mesos-principal); ' +
      "a secret is never taken on the command line",
  );
  assert.equal(
    await credentialsOf({ "mesos-secret-file": "FILE" }, "s3cret"),
    "--mesos-principal: expected the principal whose secret --mesos-secret-file FILE holds",
  );
  assert.match(
    String(await credentialsOf({ "mesos-principal": "peloton", "mesos-secret-file": "FILE" })),
    /^--mesos-secret-file: cannot read FILE: No such file or directory/,
  );
  for (const empty of ["", "\n", "\r\n"]) {
    assert.equal(
      await credentialsOf({ "mesos-principal": "peloton", "mesos-secret-file": "FILE" }, empty),
      '--mesos-secret-file: FILE is empty; expected the secret of principal "peloton"',
    );
  }
  for (const principal of ["", "a:b"]) {
    assert.equal(
      await credentialsOf({ "mesos-principal": principal, "mesos-secret-file": "FILE" }, "s3cret"),
      `--mesos-principal: got ${JSON.stringify(principal)}, expected a non-empty name without ':'`,
    );
  }
  assert.equal(
    await credentialsOf(
      {
        backend: "minicluster",
        "mesos-master": undefined,
        "mesos-principal": "peloton",
        "mesos-secret-file": "FILE",
      },
      "s3cret",
    ),
    "--mesos-principal: only used with --backend mesos",
  );
});

Deno.test("every command that starts a host manager takes the Mesos credentials' flags, and --help shows them", async () => {
  const hostmgr = daemonCommands.find((c) => c.name === "hostmgr")!;
  for (const c of [upCommand, hostmgr]) {
    for (const flag of ["mesos-master", "mesos-principal", "mesos-secret-file"]) {
      assert.equal(c.options?.[flag]?.type, "string", `${c.name} --${flag}`);
    }
  }
  const out: string[] = [];
  const io: CliIo = { out: (l) => out.push(l), err: (l) => out.push(l), env: () => undefined };
  assert.equal(await runCli(["up", "--help"], io), 0);
  assert.match(out.join("\n"), /\[--mesos-principal VALUE\] \[--mesos-secret-file VALUE\]/);
  assert.match(out.join("\n"), /--mesos-secret-file/);
});
