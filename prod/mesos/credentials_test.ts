/** The backend against a master that requires HTTP authentication: every request carries the credentials. */
import assert from "node:assert/strict";
import {
  eventually,
  frameworkInfo,
  makeSpec,
  newBackend,
  post,
  Recorder,
  startTestMaster,
  withBackend,
} from "./_testing.ts";
import { MemoryFrameworkIdStore } from "./scheduler_client.ts";
import { authorization } from "./credentials.ts";
import { CONTENT_TYPE_JSON } from "./protocol.ts";

const CREDENTIALS = { principal: "peloton", secret: "s3cret" };

Deno.test("MesosBackend with credentials: GET_AGENTS, maintenance's machine ids and sandbox reads are authenticated", async () => {
  const lines: string[] = [];
  await withBackend(async ({ m, backend, rec, hosts }) => {
    const h = hosts.find((x) => x.hostname === "agent-0")!;
    assert.equal(h.ip, "127.0.0.1", `the agent's IP from GET_AGENTS; log: ${lines.join("\n")}`);
    assert.deepEqual(await backend.machineOf("agent-0"), { hostname: "agent-0", ip: "127.0.0.1" });
    const spec = makeSpec(h, "echo authenticated");
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    assert.equal(await backend.logs(spec.taskId, "stdout"), "authenticated\n");
    // The agent's `/files` refuses a read without them, as an agent with `--authenticate_http_readonly`.
    const frameworkId = backend.client.frameworkId;
    const path = `/frameworks/${frameworkId}/executors/${spec.taskId}/runs/latest/stdout`;
    const anonymous = await fetch(`${m.url}/files/download?path=${encodeURIComponent(path)}`);
    await anonymous.body?.cancel();
    assert.equal(anonymous.status, 401);
    assert.deepEqual(lines.filter((l) => /401|refused/.test(l)), []);
  }, {
    master: { credentials: [CREDENTIALS] },
    backend: { credentials: CREDENTIALS, log: (l) => lines.push(l) },
  });
});

Deno.test("MesosBackend: an operator API refusing the credentials is logged as an authentication problem", async () => {
  const lines: string[] = [];
  await withBackend(async ({ backend }) => {
    await eventually("the refusal logged", () => lines.find((l) => /GET_AGENTS/.test(l)));
    assert.equal(await backend.machineOf("agent-0"), undefined);
    const refusals = lines.filter((l) => /GET_AGENTS/.test(l));
    assert.match(
      refusals[0],
      /^mesos: ERROR: GET_AGENTS: the master refused the credentials of principal "peloton" \(HTTP 401\)/,
    );
    assert.match(refusals[0], /hosts have no IP/);
    assert.equal(refusals.length, 1, `logged once while it lasts: ${refusals.join("\n")}`);
  }, {
    // The scheduler API takes them; the operator API has credentials of its own (Mesos's `--credentials` and
    // `--http_credentials`), which do not name the framework's principal.
    master: { credentials: [CREDENTIALS], operatorCredentials: [{ principal: "ops", secret: "other" }] },
    backend: { credentials: CREDENTIALS, log: (l) => lines.push(l) },
  });
});

Deno.test("MesosBackend: a SUBSCRIBE refused for its credentials, or for having none, says so in the log", async () => {
  const m = await startTestMaster({ credentials: [CREDENTIALS] });
  const store = new MemoryFrameworkIdStore();
  try {
    for (
      const [credentials, expected] of [
        [undefined, /^mesos: ERROR: SUBSCRIBE: the master requires HTTP authentication \(HTTP 401\) and no/],
        [
          { principal: "peloton", secret: "wrong" },
          /^mesos: ERROR: SUBSCRIBE: the master refused the credentials of principal "peloton" \(HTTP 401\)/,
        ],
      ] as const
    ) {
      const lines: string[] = [];
      const backend = newBackend(m, store, { credentials, log: (l) => lines.push(l) });
      backend.start(new Recorder().sink);
      try {
        const line = await eventually("the refusal logged", () => lines.find((l) => /SUBSCRIBE/.test(l)));
        assert.match(line, expected);
        assert.match(line, /--mesos-principal and --mesos-secret-file/);
        assert.doesNotMatch(lines.join("\n"), /wrong|s3cret/, "the secret is never logged");
      } finally {
        await backend.stop();
      }
    }
  } finally {
    await m.stop();
  }
});

Deno.test("MesosBackend: the credentials' principal is the FrameworkInfo's, which the master holds it to", async () => {
  const alice = { principal: "alice", secret: "pw" };
  await withBackend(async ({ m, backend, rec, hosts }) => {
    const spec = makeSpec(hosts[0], "echo as-alice");
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    const subscribe = m.calls.find((c) => (c as { type: string }).type === "SUBSCRIBE") as {
      subscribe: { framework_info: { principal?: string } };
    };
    assert.equal(subscribe.subscribe.framework_info.principal, "alice");
    // As Mesos's master, the emulator refuses a FrameworkInfo naming another principal than the caller's.
    const other = await post(m.url, {
      type: "SUBSCRIBE",
      subscribe: { framework_info: frameworkInfo({ principal: "peloton" }) },
    }, {
      "content-type": CONTENT_TYPE_JSON,
      ...authorization(alice),
    });
    assert.deepEqual([other.status, other.body], [
      400,
      "Authenticated principal 'alice' does not match principal 'peloton' set in `FrameworkInfo`",
    ]);
  }, { master: { credentials: [alice] }, backend: { credentials: alice } });
});
