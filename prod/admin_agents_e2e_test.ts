/**
 * `POST /admin/agents` against `peloton up` when the new agent's id cannot be recorded (a full disk, here a
 * directory in the way of the file's temporary copy): a YARPC error naming the cause, no stack trace; the
 * refused agent takes no name.
 */
import assert from "node:assert/strict";
import { startUp } from "./testing.ts";

Deno.test("POST /admin/agents that cannot record the agent's id is a YARPC error naming why", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-admin-agents-" });
  const up = await startUp(dir, ["--agents", "1"]);
  const add = (hostname?: string) =>
    fetch(`${up.url}/admin/agents`, { method: "POST", body: JSON.stringify({ hostname }) });
  try {
    const blocker = `${dir}/minicluster/agent_ids.json.tmp`;
    await Deno.mkdir(blocker);
    const refused = await add("extra");
    const text = await refused.text();
    assert.equal(refused.status, 500, text);
    assert.equal(refused.headers.get("rpc-error-code"), "internal");
    assert.equal(refused.headers.get("rpc-status"), "error");
    assert.match(
      text,
      /^cannot add the agent: Cannot record agent id \S+ of host extra in .*agent_ids\.json: /,
    );
    assert.doesNotMatch(up.output(), /Uncaught|^\s+at /m);
    // A refused agent without a name leaves its name, and its id, to the next one.
    const unnamed = await add();
    assert.equal(unnamed.status, 500, await unnamed.text());

    await Deno.remove(blocker);
    const added = await add("extra");
    assert.equal(added.status, 200, await added.clone().text());
    assert.equal((await added.json()).hostname, "extra");
    const next = await add();
    assert.equal(next.status, 200, await next.clone().text());
    assert.deepEqual(await next.json(), { hostname: "agent-2", agentId: "minicluster-S2" });
  } catch (e) {
    console.error(up.output());
    throw e;
  } finally {
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
