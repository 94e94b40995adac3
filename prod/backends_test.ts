/** The backends' HTTP helpers and agent wiring: sandbox file paths, agents' port ranges. */
import assert from "node:assert/strict";
import {
  addAgent,
  agentDefaults,
  createBackend,
  portRangeOverlap,
  type SandboxBackend,
  sandboxFile,
} from "./backends.ts";
import { MemoryFrameworkIdStore } from "./mesos/framework_id_store.ts";
import { startTestMaster } from "./mesos/_testing.ts";
import { makeSpec, Recorder } from "./backend_testing.ts";
import type { HostInfo } from "../core/ports/host_backend.ts";
import { backendFlags } from "./cli/up_command.ts";
import { DEFAULT_SANDBOX_GC_DELAY_MS } from "./minicluster/minicluster.ts";
import { Minicluster } from "./minicluster/minicluster.ts";
import { SANDBOX_HEADERS } from "./minicluster/sandbox_http.ts";

/** A backend with one task's stdout; only `logs` is used by the endpoint. */
const backend = {
  logs: (taskId: string, file: string) =>
    Promise.resolve(taskId === "t-0-1" && file === "stdout" ? "hello\n" : undefined),
} as unknown as SandboxBackend;

const get = async (path: string) => {
  const res = await sandboxFile(backend, new URL(`http://x${path}`));
  return [res.status, await res.text()];
};

Deno.test("sandbox files: a path that is not percent-encoded UTF-8 is 400, naming the problem", async () => {
  assert.deepEqual(await get("/sandbox/%E0%A4%A/stdout"), [
    400,
    "the sandbox path is not valid percent-encoded UTF-8\n",
  ]);
  assert.deepEqual(await get("/sandbox/t-0-1/%FF"), [
    400,
    "the sandbox path is not valid percent-encoded UTF-8\n",
  ]);
  assert.deepEqual(await get("/sandbox/t-0-1/stdout"), [200, "hello\n"]);
  assert.deepEqual(await get("/sandbox/t%2D0%2D1/stdout"), [200, "hello\n"], "escapes are decoded");
  assert.deepEqual(await get("/sandbox/t-0-2/stdout"), [404, "no sandbox for task t-0-2\n"]);
  assert.deepEqual(await get("/sandbox/t-0-1/other"), [400, "file must be stdout or stderr\n"]);
});

Deno.test("sandbox files from a backend (Mesos's agents) carry the minicluster's hardening headers", async () => {
  for (const path of ["/sandbox/t-0-1/stdout", "/sandbox/t-0-2/stdout"]) {
    const res = await sandboxFile(backend, new URL(`http://x${path}`));
    await res.body?.cancel();
    for (const [name, value] of Object.entries(SANDBOX_HEADERS)) {
      assert.equal(res.headers.get(name), value, `${path}: ${name}`);
    }
  }
});

Deno.test("agent port ranges: two agents given overlapping ranges are refused, naming both and the overlap", () => {
  const given = [
    { hostname: "a", portRanges: [[33000, 33004]] as [number, number][] },
    { hostname: "b", portRanges: [[33002, 33010]] as [number, number][] },
  ];
  assert.throws(
    () => agentDefaults(2, given),
    /agents a and b both offer ports 33002-33004 \(a: 33000-33004, b: 33002-33010\)/,
  );
  assert.match(portRangeOverlap([...given, { hostname: "c", portRanges: [] }]) ?? "", /agents a and b/);
  assert.equal(portRangeOverlap([given[0], { hostname: "b", portRanges: [[33005, 33010]] }]), undefined);
});

Deno.test("agent port ranges: an agent with no range gets one no given range overlaps", () => {
  const out = agentDefaults(3, [{}, { hostname: "b", portRanges: [[31000, 31999]] }, {}]);
  assert.deepEqual(out.map((a) => a.portRanges), [[[32000, 32999]], [[31000, 31999]], [[33000, 33999]]]);
  assert.deepEqual(agentDefaults(2).map((a) => a.portRanges), [[[31000, 31999]], [[32000, 32999]]]);
});

Deno.test("POST /admin/agents: an added agent gets a free port range; a given one that overlaps is refused", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "peloton-add-agent-" });
  const mc = new Minicluster({
    dataDir,
    agents: agentDefaults(2, [{ hostname: "a", portRanges: [[33000, 33999]] }, { hostname: "b" }]),
  });
  try {
    const post = (body: unknown) =>
      addAgent(mc, new Request("http://x/admin/agents", { method: "POST", body: JSON.stringify(body) }));
    const res = await post({ hostname: "c" });
    assert.equal(res.status, 200, await res.clone().text());
    const ranges = Object.fromEntries(mc.hosts().map((h) => [h.hostname, h.portRanges]));
    assert.deepEqual(ranges, { a: [[33000, 33999]], b: [[31000, 31999]], c: [[32000, 32999]] });
    const refused = await post({ hostname: "d", ports: [32500, 34000] });
    assert.equal(refused.headers.get("Rpc-Error-Code"), "failed-precondition");
    assert.match(await refused.text(), /ports: agents d and a both offer ports 33000-33999/);
    const bad = await post({ hostname: "e", ports: [35000, 34000] });
    assert.equal(bad.headers.get("Rpc-Error-Code"), "invalid-argument");
    assert.match(await bad.text(), /ports: got \[35000,34000\], expected/);
    const own = await post({ hostname: "f", ports: [35000, 35009] });
    assert.equal(own.status, 200);
    assert.deepEqual(mc.hosts().find((h) => h.hostname === "f")?.portRanges, [[35000, 35009]]);
  } finally {
    await mc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("the minicluster keeps ended runs' sandboxes as long as --sandbox-gc-delay-ms says, a week by default", async () => {
  for (const [given, kept] of [[undefined, DEFAULT_SANDBOX_GC_DELAY_MS], [60_000, 60_000], [0, 0]]) {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-backends-gc-" });
    const { minicluster } = createBackend(
      { dataDir, agents: 1, ...(given === undefined ? {} : { sandboxGcDelayMs: given }) },
      new MemoryFrameworkIdStore(),
    );
    try {
      assert.equal(minicluster!.sandboxGcDelayMs, kept);
    } finally {
      await minicluster!.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  }
});

Deno.test("the Mesos backend as `up` and `hostmgr` make it: the credentials flags reach the master, which it subscribes to and launches on", async () => {
  const credentials = { principal: "alice", secret: "s3cret" };
  const m = await startTestMaster({ credentials: [credentials] });
  const dataDir = await Deno.makeTempDir({ prefix: "peloton-backends-mesos-" });
  await Deno.writeTextFile(`${dataDir}/secret`, "s3cret\n");
  const lines: string[] = [];
  const flags = await backendFlags({
    backend: "mesos",
    "mesos-master": m.url,
    "mesos-principal": "alice",
    "mesos-secret-file": `${dataDir}/secret`,
    agents: "3",
    "agent-cpus": "4",
    "agent-mem-mb": "8192",
    "agent-disk-mb": "20480",
  });
  const { backend, mesos } = createBackend(
    { ...flags, dataDir, log: (l) => lines.push(l) },
    new MemoryFrameworkIdStore(),
  );
  const rec = new Recorder();
  rec.onStatus = (s) =>
    s.uuid && mesos!.acknowledge([{ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid }]);
  try {
    backend.start(rec.sink);
    const up = await rec.waitFor((e) => e.kind === "host-up", "a host");
    const host = (up as { host: HostInfo }).host;
    assert.equal(host.ip, "127.0.0.1", "GET_AGENTS answered");
    const spec = makeSpec(host, "echo through-backends");
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    assert.equal(await backend.logs(spec.taskId, "stdout"), "through-backends\n");
    assert.equal(mesos!.client.framework.principal, "alice");
    assert.deepEqual(lines.filter((l) => /401|ERROR/.test(l)), []);
  } finally {
    await backend.stop();
    await m.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
