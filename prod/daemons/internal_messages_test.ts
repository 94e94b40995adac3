/**
 * A separately started daemon with `--auth-config`: its internal message path takes the internal user's
 * credentials only, and a body that is not an envelope is refused naming what is missing; sandbox files are
 * checked as BrowseSandbox under all its names; a daemon whose auth file names no internal user does not start.
 */
import assert from "node:assert/strict";
import { BasicAuth, basicHeader } from "../auth/basic_auth.ts";
import { runCli } from "../cli/main.ts";
import { MESSAGES_PATH } from "../http_transport.ts";
import { jsonLogger } from "../log.ts";
import { startResmgr } from "./resmgr_daemon.ts";

const USERS = `users:
  - username: root
    password: rootpw
    role: root
  - username: ops
    password: opspw
    role: ops
roles:
  - role: root
    accept: ['*']
  - role: ops
    accept: ['*']
    reject:
      - peloton.api.v0.task.TaskManager:BrowseSandbox
      - peloton.api.v0.host.svc.HostService:StartMaintenance
`;

const ROOT = { authorization: basicHeader({ username: "root", password: "rootpw" }) };
const OPS = { authorization: basicHeader({ username: "ops", password: "opspw" }) };

/** Runs `f` against a resource manager daemon on its own SQLite store, with `USERS` and root internal. */
async function withResmgr(f: (url: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "peloton-internal-" });
  await Deno.writeTextFile(`${dir}/auth.yaml`, `${USERS}internal_user: root\n`);
  const d = await startResmgr({
    host: "127.0.0.1",
    port: 0,
    store: `sqlite:${dir}/peloton.sqlite`,
    dataDir: dir,
    leaseTtlMs: 2_000,
    auth: await BasicAuth.load(`${dir}/auth.yaml`),
    log: jsonLogger({ daemon: "resmgr" }, () => {}),
  });
  try {
    await f(d.process.url);
  } finally {
    await d.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}${MESSAGES_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return [res.status, await res.text()];
}

Deno.test({
  name: "internal messages need the internal user's credentials; a body that is not an envelope is 400",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withResmgr(async (url) => {
      const envelope = JSON.stringify({
        to: "resmgr",
        from: { instance: "x", url: "http://127.0.0.1:1" },
        messages: [{ kind: "drop-tasks", taskIds: [] }],
      });
      assert.equal((await post(url, envelope))[0], 401, "no credentials");
      assert.equal((await post(url, envelope, OPS))[0], 401, "a user's, not the internal user's");
      assert.deepEqual(await post(url, "{}", ROOT), [400, "to: got nothing, expected an address\n"]);
      assert.deepEqual(await post(url, "null", ROOT), [
        400,
        "envelope: got null, expected {to, from, messages}\n",
      ]);
      assert.deepEqual(await post(url, '{"to": "resmgr"}', ROOT), [
        400,
        "messages: got nothing, expected a list of messages\n",
      ]);
      assert.deepEqual(await post(url, '{"to": "resmgr", "messages": [{}]}', ROOT), [
        400,
        "messages[0].kind: got nothing, expected a message kind\n",
      ]);
      assert.deepEqual(await post(url, '{"to": "resmgr", "from": 1, "messages": []}', ROOT), [
        400,
        "from: got number, expected {instance, url}\n",
      ]);
      const gone = JSON.stringify({ to: "jobmgr@nobody", messages: [] });
      assert.deepEqual(await post(url, gone, ROOT), [410, ""], "an envelope: delivered, or not served here");
    }),
});

Deno.test({
  name: "a sandbox file is BrowseSandbox to a role that rejects the procedure's v0 name",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withResmgr(async (url) => {
      const res = await fetch(`${url}/sandbox/t-0-1/stdout`, { headers: OPS });
      assert.equal(res.status, 403, await res.text());
      assert.equal(res.headers.get("rpc-error-code"), "permission-denied");
    }),
});

Deno.test("a daemon started with an auth file that names no internal_user is refused, naming the field", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-internal-" });
  try {
    await Deno.writeTextFile(`${dir}/auth.yaml`, USERS);
    for (const role of ["jobmgr", "resmgr", "hostmgr", "placement"]) {
      const err: string[] = [];
      const code = await runCli(
        // A store flag that is refused after the auth file is read: a daemon that took the file does not
        // start either, so that this test ends whatever the outcome.
        [role, "--port", "0", "--data-dir", dir, "--store", "nope:", "--auth-config", `${dir}/auth.yaml`],
        { out: () => {}, err: (l) => err.push(l), env: () => undefined },
      );
      assert.equal(code, 2, err.join("\n"));
      assert.match(err.join("\n"), /--auth-config: Cannot load auth config .*: internal_user: missing/);
    }
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["auth.yaml"], "nothing started");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
