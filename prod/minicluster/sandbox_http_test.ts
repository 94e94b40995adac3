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

Deno.test("?tailBytes=N serves only the file's last N bytes, saying where they start in how large a file", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbox_http_test_" });
  const mc = new Minicluster({ dataDir, agents: 1 });
  const rec = new Recorder();
  mc.start(rec.sink);
  try {
    const spec = makeSpec(AGENT_0, "printf 'start '");
    mc.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    const file = `${sandboxPath(dataDir, AGENT_0.agentId, spec.taskId)}/stdout`;
    await Deno.writeFile(file, new Uint8Array(3 << 20).fill(0x78), { append: true });
    await Deno.writeFile(file, new Uint8Array([0xc3, 0xa9, 0xff, 0x0a]), { append: true });
    const sizeBytes = (await Deno.stat(file)).size;
    const tail = async (query: string) => {
      const res = await serveSandboxFile(mc, new URL(`http://x/sandbox/${spec.taskId}/stdout?${query}`));
      const body = new Uint8Array(await res.arrayBuffer());
      return {
        status: res.status,
        size: res.headers.get("x-file-size-bytes"),
        offset: res.headers.get("x-file-offset-bytes"),
        body,
      };
    };
    const end = await tail("tailBytes=5&agentId=minicluster-S0");
    assert(end.status === 200, `status ${end.status}`);
    assert(
      end.size === String(sizeBytes) && end.offset === String(sizeBytes - 5),
      `${end.size} ${end.offset}`,
    );
    assert([...end.body].join() === [0x78, 0xc3, 0xa9, 0xff, 0x0a].join(), `body ${end.body}`);
    const whole = await tail("tailBytes=999999999");
    assert(
      whole.offset === "0" && whole.body.length === sizeBytes,
      `whole: ${whole.offset} ${whole.body.length}`,
    );
    assert(new TextDecoder().decode(whole.body.subarray(0, 6)) === "start ", "the file's start");
    const none = await tail("tailBytes=0");
    assert(none.body.length === 0 && none.offset === String(sizeBytes), "tailBytes=0: nothing");
    for (const bad of ["-1", "1e3", "x", ""]) {
      const r = await tail(`tailBytes=${bad}`);
      assert(r.status === 400, `tailBytes=${bad}: status ${r.status}`);
      assert(
        new TextDecoder().decode(r.body).includes(`tailBytes: got "${bad}"`),
        "the error names the value",
      );
    }
  } finally {
    await mc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("a sandbox file a task replaced with a link out of its sandbox is refused, not followed", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbox_http_test_" });
  const mc = new Minicluster({ dataDir, agents: 1 });
  const rec = new Recorder();
  mc.start(rec.sink);
  const outside = `${dataDir}/outside.txt`;
  await Deno.writeTextFile(outside, "SCHEDULER-ONLY\n");
  try {
    const spec = makeSpec(
      AGENT_0,
      `echo out; rm -f stderr; ln -s /etc/passwd stderr; ln ${outside} hard; rm -f stdout; ln hard stdout`,
    );
    mc.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    for (const [file, what] of [["stderr", /symlink/], ["stdout", /hard link/]] as const) {
      const res = await serveSandboxFile(mc, new URL(`http://x/sandbox/${spec.taskId}/${file}`));
      const body = await res.text();
      assert(res.status === 403, `${file}: status ${res.status}: ${body.slice(0, 80)}`);
      assert(!body.includes("root:") && !body.includes("SCHEDULER-ONLY"), `${file}: served ${body}`);
      assert(body.includes(`${file} of task ${spec.taskId}`) && what.test(body), `${file}: ${body}`);
      let thrown = "";
      await mc.logs(spec.taskId, file).catch((e) => thrown = (e as Error).message);
      assert(what.test(thrown), `logs(${file}): ${thrown}`);
    }

    // A sandbox directory that is itself a link leads out too (its files are real files elsewhere).
    const other = makeSpec(AGENT_0, "echo other");
    mc.launch([other]);
    await rec.waitState(other.taskId, "TASK_FINISHED");
    const sandbox = sandboxPath(dataDir, AGENT_0.agentId, other.taskId);
    await Deno.rename(sandbox, `${dataDir}/moved`);
    await Deno.symlink(`${dataDir}/moved`, sandbox);
    const linked = await serveSandboxFile(mc, new URL(`http://x/sandbox/${other.taskId}/stdout`));
    const body = await linked.text();
    assert(linked.status === 403 && /out of its sandbox/.test(body), `${linked.status} ${body}`);
  } finally {
    await mc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("sandbox files are sent as text that a browser neither sniffs, runs, frames nor caches", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbox_http_test_" });
  const mc = new Minicluster({ dataDir, agents: 1 });
  const rec = new Recorder();
  mc.start(rec.sink);
  try {
    const spec = makeSpec(AGENT_0, "echo '<script>alert(1)</script>'");
    mc.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    for (const query of ["", "?tailBytes=10"]) {
      const res = await serveSandboxFile(mc, new URL(`http://x/sandbox/${spec.taskId}/stdout${query}`));
      await res.body?.cancel();
      const h = (name: string) => res.headers.get(name);
      assert(res.status === 200, `status ${res.status}`);
      assert(h("content-type") === "text/plain; charset=utf-8", `content-type ${h("content-type")}`);
      assert(h("x-content-type-options") === "nosniff", `nosniff ${h("x-content-type-options")}`);
      assert(
        h("content-security-policy") === "sandbox; default-src 'none'; frame-ancestors 'none'",
        `csp ${h("content-security-policy")}`,
      );
      assert(h("cache-control") === "no-store", `cache-control ${h("cache-control")}`);
    }
  } finally {
    await mc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
