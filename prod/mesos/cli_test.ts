/** `peloton minicluster` as a real process, driven by the MesosBackend over HTTP. */
import assert from "node:assert/strict";
import { eventually, makeSpec, Recorder } from "./_testing.ts";
import { MesosBackend } from "./mesos_backend.ts";
import type { HostInfo } from "../../core/ports/host_backend.ts";

const COMMAND = new URL("../cli/minicluster_command.ts", import.meta.url).href;
/** The project's import map: the runner script lives in a temp dir, outside the project. */
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

// `prod/cli/main.ts` registers the command; until then the test runs it the way main.ts would.
const RUNNER = `
import { miniclusterCommand } from ${JSON.stringify(COMMAND)};
const [port, agents, dataDir] = Deno.args;
const code = await miniclusterCommand.run(
  { client: undefined as never, json: false, out: console.log, err: console.error },
  [],
  { port, agents, "data-dir": dataDir, host: "127.0.0.1", "agent-cpus": "2", "agent-mem-mb": "1024", "heartbeat-seconds": "1", verbose: false },
);
Deno.exit(code);
`;

Deno.test("peloton minicluster: serves the scheduler API; a MesosBackend runs a task on it; SIGINT stops it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "minicluster-cli-" });
  const script = `${dir}/run.ts`;
  await Deno.writeTextFile(script, RUNNER);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", CONFIG, script, "0", "2", `${dir}/data`],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const c of s.pipeThrough(new TextDecoderStream())) out += c;
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const rec = new Recorder();
  let backend: MesosBackend | undefined;
  try {
    const url = await eventually(
      "the master URL",
      () =>
        /documented Mesos v1 protocol/.test(out) ? /emulator at (http:\/\/\S+) /.exec(out)?.[1] : undefined,
      30_000,
    );
    backend = new MesosBackend({ masterUrl: url });
    rec.onStatus = (s) =>
      s.uuid && backend!.acknowledge([{ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid }]);
    backend.start(rec.sink);
    const up = (await rec.waitFor((e) => e.kind === "host-up", "a host")) as { host: HostInfo };
    assert.deepEqual(up.host.resources, { cpuMilli: 2000, memMb: 1024, diskMb: 20480, gpuMilli: 0 });
    const spec = makeSpec(up.host, "echo from-the-cli");
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    assert.equal(await backend.logs(spec.taskId, "stdout"), "from-the-cli\n");
  } finally {
    await backend?.stop();
    try {
      child.kill("SIGINT");
    } catch {
      // It already exited: the exit code check below shows its output.
    }
    const status = await child.status;
    await pumps;
    await Deno.remove(dir, { recursive: true });
    assert.equal(status.code, 0, out);
    assert.match(out, /stopping/);
  }
});
