/** `peloton up --agents-file`: two agents of one hostname are refused before anything starts. */
import assert from "node:assert/strict";
import { UsageError } from "./command.ts";
import { backendFlags } from "./up_command.ts";

Deno.test("--agents-file refuses a hostname two agents have, a default one included", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-agents-file-" });
  try {
    const flags = (path: string) => ({
      backend: "minicluster",
      "agents-file": path,
      "agent-cpus": "4",
      "agent-mem-mb": "8192",
      "agent-disk-mb": "20480",
    });
    const file = async (text: string) => {
      const path = `${dir}/agents-${crypto.randomUUID()}.yaml`;
      await Deno.writeTextFile(path, text);
      return path;
    };
    await assert.rejects(
      backendFlags(flags(await file("- {hostname: a}\n- {hostname: a}\n"))),
      (e) =>
        e instanceof UsageError &&
        /agents\.1\.hostname: got "a", expected a hostname no other agent has \(agents\.0 has it\)/.test(
          e.message,
        ),
    );
    await assert.rejects(
      backendFlags(flags(await file("- {}\n- {hostname: agent-0}\n"))),
      (e) => e instanceof UsageError && /agents\.1\.hostname: got "agent-0"/.test(e.message),
    );
    const ok = await backendFlags(flags(await file("- {hostname: a}\n- {hostname: b}\n- {}\n")));
    assert.deepEqual(ok.agentOptions.map((a) => a.hostname), ["a", "b", undefined]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--agents-file refuses agents whose port ranges overlap, naming both and the shared ports", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-agents-file-" });
  try {
    const path = `${dir}/agents.yaml`;
    const flags = {
      backend: "minicluster",
      "agents-file": path,
      "agent-cpus": "4",
      "agent-mem-mb": "8192",
      "agent-disk-mb": "20480",
    };
    await Deno.writeTextFile(
      path,
      "agents:\n- {hostname: a, ports: [33000, 33004]}\n- {hostname: b, ports: [33000, 33004]}\n",
    );
    await assert.rejects(
      backendFlags(flags),
      (e) =>
        e instanceof UsageError &&
        e.message.includes("agents a and b both offer ports 33000-33004 (a: 33000-33004, b: 33000-33004)"),
    );
    await Deno.writeTextFile(path, "- {hostname: a, ports: [33004, 33000]}\n");
    await assert.rejects(
      backendFlags(flags),
      (e) =>
        e instanceof UsageError &&
        /agents\.0\.ports: got \[33004,33000\], expected \[low, high\]/.test(e.message),
    );
    await Deno.writeTextFile(
      path,
      "- {hostname: a, ports: [33000, 33004]}\n- {hostname: b, ports: [33005, 33009]}\n",
    );
    const ok = await backendFlags(flags);
    assert.deepEqual(ok.agentOptions.map((a) => a.portRanges), [[[33000, 33004]], [[33005, 33009]]]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--sandbox-gc-delay-ms takes a whole number of milliseconds, and is left out when not given", async () => {
  const flags = (gc?: string) => ({
    backend: "minicluster",
    agents: "1",
    "agent-cpus": "4",
    "agent-mem-mb": "8192",
    "agent-disk-mb": "20480",
    ...(gc === undefined ? {} : { "sandbox-gc-delay-ms": gc }),
  });
  assert.equal((await backendFlags(flags())).sandboxGcDelayMs, undefined);
  assert.equal((await backendFlags(flags("86400000"))).sandboxGcDelayMs, 86_400_000);
  assert.equal((await backendFlags(flags("0"))).sandboxGcDelayMs, 0);
  for (const bad of ["-1", "1.5", "a week", ""]) {
    await assert.rejects(
      backendFlags(flags(bad)),
      (e) =>
        e instanceof UsageError &&
        e.message.startsWith(`--sandbox-gc-delay-ms: got "${bad}", expected a whole`),
      bad,
    );
  }
});
