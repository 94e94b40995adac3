/**
 * Both HTTP fronts, `peloton up`'s (prod/server.ts) and a separately started daemon's (prod/daemons/process.ts),
 * in this process over real HTTP: a body that is JSON but not an object is refused before any handler, and a
 * watch given `Context-TTL-Ms` ends at that deadline while one without runs on. The servers listen on free
 * ports, or on PELOTON_TEST_PORT_BASE and the next port when it is set.
 */
import assert from "node:assert/strict";
import { startJobmgr } from "./daemons/jobmgr_daemon.ts";
import { jsonLogger } from "./log.ts";
import { startPeloton } from "./server.ts";
import { CANCEL_PROCEDURE, WATCH_PROCEDURE } from "./watch_stream.ts";

const portBase = Number(Deno.env.get("PELOTON_TEST_PORT_BASE") ?? 0);
const port = (i: number) => portBase ? portBase + i : 0;

/** Runs `f` against the API URL of `peloton up` and of a job manager daemon, each on a fresh data dir. */
async function withFronts(f: (name: string, api: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "peloton-fronts-" });
  try {
    const up = await startPeloton({ port: port(0), dataDir: `${dir}/up`, agents: 0 });
    try {
      await f("peloton up", `${up.url}/api/v1`);
    } finally {
      await up.stop();
    }
    await Deno.mkdir(`${dir}/jobmgr`);
    const jm = await startJobmgr({
      host: "127.0.0.1",
      port: port(1),
      store: `sqlite:${dir}/jobmgr/peloton.sqlite`,
      dataDir: `${dir}/jobmgr`,
      leaseTtlMs: 2_000,
      log: jsonLogger({ daemon: "jobmgr" }, () => {}),
    });
    try {
      await f("jobmgr daemon", `${jm.process.url}/api/v1`);
    } finally {
      await jm.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const post = (api: string, procedure: string, body: string, headers: Record<string, string> = {}) =>
  fetch(api, { method: "POST", headers: { "rpc-procedure": procedure, ...headers }, body });

/**
 * Reads a stream's lines as they come; a line not come within `waitMs` (far past any it waits for) fails,
 * so that a stream left open fails the test rather than hangs it.
 */
function lineReader(body: ReadableStream<Uint8Array>, waitMs = 30_000): () => Promise<unknown> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = "";
  const next = async () => {
    for (;;) {
      const nl = rest.indexOf("\n");
      if (nl >= 0) {
        const text = rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        return JSON.parse(text);
      }
      const chunk = await reader.read();
      if (chunk.done) return undefined;
      rest += chunk.value;
    }
  };
  return async () => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reader.cancel().catch(() => {});
        reject(new Error(`no line within ${waitMs} ms`));
      }, waitMs);
    });
    try {
      return await Promise.race([next(), late]);
    } finally {
      clearTimeout(timer);
    }
  };
}

Deno.test({
  name: "both fronts refuse a body that is not a JSON object, and end a watch at its Context-TTL-Ms only",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withFronts(async (name, api) => {
      // A job's Get without the job would say "jobId: missing": the body is refused before that.
      for (const body of ["[1,2]", '"abc"', "3", "null"]) {
        const res = await post(api, "peloton.api.v1alpha.job.stateless.svc.JobService::GetJob", body);
        const text = await res.text();
        assert.deepEqual(
          [res.status, res.headers.get("rpc-error-code"), text],
          [400, "invalid-argument", "the request body must be a JSON object\n"],
          `${name}: ${body}`,
        );
      }

      // Given a deadline, the stream ends at it with deadline-exceeded, as a gRPC deadline ends a stream.
      const bounded = await post(api, WATCH_PROCEDURE, '{"podFilter":{}}', { "context-ttl-ms": "1500" });
      if (bounded.status !== 200) assert.fail(`${name}: ${bounded.status} ${await bounded.text()}`);
      const boundedLines = lineReader(bounded.body!);
      const first = await boundedLines() as { watchId: string };
      assert.match(first.watchId, /^pod-\d+@jobmgr/, name);
      // Passed on from the front, the stream gets what is left of the 1500 ms (Context-TTL-Ms shrinks at a hop).
      const ended = await boundedLines() as { error: { code: string; message: string } };
      assert.equal(ended.error.code, "deadline-exceeded", name);
      const ran = /^deadline exceeded: (\S+) ran for its (\d+) ms \(Context-TTL-Ms\)$/.exec(
        ended.error.message,
      );
      assert.ok(ran && ran[1] === first.watchId, `${name}: ${ended.error.message}`);
      assert.ok(Number(ran[2]) > 1000 && Number(ran[2]) <= 1500, `${name}: ${ended.error.message}`);
      assert.equal(await boundedLines(), undefined, `${name}: the stream ended`);

      // Without one, the stream is still open well past that: ended only by the cancel here.
      const open = await post(api, WATCH_PROCEDURE, '{"podFilter":{}}');
      assert.equal(open.status, 200, name);
      const openLines = lineReader(open.body!);
      const { watchId } = await openLines() as { watchId: string };
      await new Promise((r) => setTimeout(r, 3_000));
      const cancel = await post(api, CANCEL_PROCEDURE, JSON.stringify({ watchId }));
      assert.equal(cancel.status, 200, `${name}: ${await cancel.text()}`);
      assert.deepEqual(await openLines(), {
        error: { code: "cancelled", message: `watch cancelled: ${watchId}` },
      }, name);
    }),
});
