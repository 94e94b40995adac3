/** Sandbox reads through an agent's `/files/download`: an agent that stops sending does not hold a read for good. */
import assert from "node:assert/strict";
import { AgentDirectory } from "./mesos_agents.ts";
import { OPERATOR_PATH, type OperatorAgent } from "./protocol.ts";

/**
 * One server as both master (GET_AGENTS names one agent, itself) and agent: `stdout` answers at once and
 * sends one chunk, then nothing, never ending; `stderr` never answers; `done` answers whole.
 */
function masterAndAgent() {
  const pending: ReadableStreamDefaultController<Uint8Array>[] = [];
  const never = Promise.withResolvers<Response>();
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req): Response | Promise<Response> => {
      const url = new URL(req.url);
      if (url.pathname === OPERATOR_PATH) {
        const agent: OperatorAgent = {
          agent_info: { id: { value: "a1" }, hostname: "127.0.0.1", port: server.addr.port },
          pid: `slave(1)@127.0.0.1:${server.addr.port}`,
        };
        return Response.json({ type: "GET_AGENTS", get_agents: { agents: [agent] } });
      }
      const path = url.searchParams.get("path") ?? "";
      if (path.endsWith("/stdout")) {
        return new Response(
          new ReadableStream({
            start(c) {
              pending.push(c);
              c.enqueue(new TextEncoder().encode("first line\n"));
            },
          }),
        );
      }
      if (path.endsWith("/stderr")) return never.promise;
      return new Response("all of it\n");
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    async close() {
      never.resolve(new Response("late"));
      for (const c of pending) c.close();
      await server.shutdown();
    },
  };
}

Deno.test("a sandbox read fails once the agent is slower than the timeout to answer, or the body to arrive", async () => {
  const m = masterAndAgent();
  const warned: string[] = [];
  const dir = new AgentDirectory({
    masterUrl: () => m.url,
    role: "peloton",
    warn: (what) => warned.push(what),
    refused: (e) => warned.push(e.message),
    timeoutMs: 200,
    bodyTimeoutMs: 400,
  });
  try {
    await dir.refresh();
    assert.equal(dir.available, true, warned.join());
    assert.equal(await dir.readSandbox("a1", "fw", "task-1", "done"), "all of it\n");
    const outcome = (p: Promise<unknown>) =>
      p.then(() => "answered", (e: Error) => `${e.name}: ${e.message}`);
    assert.match(
      await outcome(dir.readSandbox("a1", "fw", "task-1", "stderr")),
      /^TimeoutError: .* took over 200 ms$/,
    );
    // Answered at once, then the body stops coming: its own, longer bound ends it.
    assert.match(
      await outcome(dir.readSandbox("a1", "fw", "task-1", "stdout")),
      /^TimeoutError: .* took over 400 ms$/,
    );
  } finally {
    await m.close();
  }
});
