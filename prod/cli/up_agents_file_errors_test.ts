/** `--agents-file`'s problems are listed together, each naming its field; a misspelt key with a did-you-mean. */
import assert from "node:assert/strict";
import { UsageError } from "./command.ts";
import { backendFlags } from "./up_command.ts";

async function agentsFileError(text: string): Promise<string> {
  const path = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(path, text);
    const flags = {
      backend: "minicluster",
      "agents-file": path,
      "agent-cpus": "4",
      "agent-mem-mb": "8192",
      "agent-disk-mb": "20480",
    };
    const e = await backendFlags(flags).then(() => undefined, (e) => e);
    assert.ok(e instanceof UsageError, String(e));
    return e.message.replace(path, "FILE");
  } finally {
    await Deno.remove(path);
  }
}

Deno.test("--agents-file with a misspelt top key names it, and the agents missing", async () => {
  assert.equal(
    await agentsFileError("agent:\n  - hostname: a\n"),
    [
      "--agents-file FILE: 2 problems:",
      "  agents: missing, expected a list",
      "  agent: unknown key; did you mean agents? (known keys: agents)",
    ].join("\n"),
  );
});

Deno.test("an empty --agents-file says what it expected", async () => {
  assert.equal(
    await agentsFileError(""),
    "--agents-file FILE: the file is empty; expected a list of agents, or agents: holding one",
  );
});

Deno.test("--agents-file lists every agent's problems, each with its field", async () => {
  assert.equal(
    await agentsFileError("- {hostname: a, cpus: 2}\n- {hostname: b, memoryMb: 0}\n"),
    [
      "--agents-file FILE: 2 problems:",
      "  agents.0.cpus: unknown key; did you mean cpu? (known keys: hostname, cpu, memoryMb, diskMb, gpu, " +
      "attributes, ports)",
      "  agents.1.memoryMb: got 0, expected more than 0",
    ].join("\n"),
  );
  // Rules that read sound fields: every one that fails.
  assert.equal(
    await agentsFileError("- {hostname: a, ports: [5, 3]}\n- {hostname: a}\n"),
    [
      "--agents-file FILE: 2 problems:",
      '  agents.1.hostname: got "a", expected a hostname no other agent has (agents.0 has it)',
      "  agents.0.ports: got [5,3], expected [low, high] ports, 1 <= low <= high <= 65535",
    ].join("\n"),
  );
});
