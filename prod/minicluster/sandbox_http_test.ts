/** The sandbox file endpoint of the minicluster: raw bytes, streamed, of any size. */
import { Minicluster } from "./minicluster.ts";
import { makeSpec, Recorder } from "../backend_testing.ts";
import { serveSandboxFile } from "./sandbox_http.ts";
import { sandboxPath } from "./agent.ts";

function assert(cond: unknown, message = "assertion failed"): asserts cond {
  if (!cond) throw new Error(message);
}

const AGENT_0 = { hostname: "agent-0", agentId: "minicluster-S0" };

Deno.test("a task's stdout is served as its raw bytes, streamed, however large", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbox_http_test_" });
  const mc = new Minicluster({ dataDir, agents: 1 });
  const rec = new Recorder();
  mc.start(rec.sink);
  try {
    const spec = makeSpec(AGENT_0, "printf 'caf\\351 \\377\\376 end'");
    mc.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    // Grown on disk past what one read returns: the answer must come in pieces, not as one string.
    const file = `${sandboxPath(dataDir, AGENT_0.agentId, spec.taskId)}/stdout`;
    const tail = new Uint8Array(8 << 20).fill(0xff);
    await Deno.writeFile(file, tail, { append: true });
    const expected = await Deno.readFile(file);
    const res = await serveSandboxFile(mc, new URL(`http://x/sandbox/${spec.taskId}/stdout`));
    assert(res.status === 200, `status ${res.status}`);
    let chunks = 0, size = 0;
    const got = new Uint8Array(expected.length);
    for await (const chunk of res.body!) {
      chunks++;
      got.set(chunk, size);
      size += chunk.length;
    }
    assert(size === expected.length, `got ${size} bytes, expected ${expected.length}`);
    assert(got.every((b, i) => b === expected[i]), "the bytes were altered");
    assert(chunks > 1, "the file was sent as one piece, read whole into memory");
    const missing = await serveSandboxFile(mc, new URL("http://x/sandbox/t-0-9/stdout"));
    assert(missing.status === 404, `a missing sandbox: status ${missing.status}`);
    await missing.body?.cancel();
    const bad = await serveSandboxFile(mc, new URL(`http://x/sandbox/${spec.taskId}/other`));
    assert(bad.status === 400, `another file: status ${bad.status}`);
    await bad.body?.cancel();
  } finally {
    await mc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
