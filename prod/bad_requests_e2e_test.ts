/**
 * Requests a client got wrong, against a real `peloton up` over HTTP: each is refused with a message naming
 * what was wrong, and changes nothing.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { cli, ROOT, withUp } from "./testing.ts";

Deno.test({
  name:
    "a bad deadline, a body too large and malformed /admin/agents requests are refused and change nothing",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-bad-requests-", async (up) => {
      const jobs = async () => (await cli(up.url, "-j", "job", "query")).out;
      const before = await jobs();
      const lookup = await fetch(`${up.url}/api/v1`, {
        method: "POST",
        headers: { "rpc-procedure": "peloton.api.respool.ResourceManager::LookupResourcePoolID" },
        body: JSON.stringify({ path: { value: "/DefaultResPool" } }),
      });
      const respoolId = (await lookup.json()).id.value;
      const config = await Deno.readTextFile(`${ROOT}/scenarios/jobs/testjob.yaml`);
      // A deadline already past would answer "timed out" for a job that then is created.
      const late = await fetch(`${up.url}/api/v1`, {
        method: "POST",
        headers: { "rpc-procedure": "peloton.api.v0.job.JobManager::Create", "context-ttl-ms": "-5" },
        body: JSON.stringify({ id: { value: crypto.randomUUID() }, respoolId: { value: respoolId }, config }),
      });
      assert.equal(late.status, 400);
      assert.equal(late.headers.get("rpc-error-code"), "invalid-argument");
      assert.match(await late.text(), /^Context-TTL-Ms: got "-5", expected a whole number/);

      // A body declared far too large is refused before it is read.
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(up.url).port) });
      try {
        await conn.write(new TextEncoder().encode(
          "POST /api/v1 HTTP/1.1\r\nHost: x\r\nRpc-Procedure: peloton.api.v0.job.JobManager::Get\r\n" +
            "Content-Length: 1000000000\r\nConnection: close\r\n\r\n{",
        ));
        // The server answers without reading the body, and may keep the connection for it: read the answer
        // alone, not to the end of the stream.
        let answer = "";
        const buf = new Uint8Array(4096);
        while (!/\r\n\r\n[\s\S]*bytes\n/.test(answer)) {
          const n = await conn.read(buf);
          if (n === null) break;
          answer += new TextDecoder().decode(buf.subarray(0, n));
        }
        assert.match(answer, /^HTTP\/1\.1 413 /, answer);
        assert.match(answer, /\r\nrpc-error-code: invalid-argument\r\n/i, answer);
        assert.match(answer, /the request body is 1000000000 bytes, more than the limit of 67108864 bytes/);
      } finally {
        try {
          conn.close();
        } catch {
          // Closed by the server.
        }
      }

      const agents = async () => (await cli(up.url, "-j", "host", "query")).out;
      const hosts = await agents();
      for (
        const [body, status, message] of [
          ["null", 400, "request body: expected a JSON object"],
          ['{"hostname":"agent-0"}', 409, "hostname: an agent named agent-0 is already registered"],
          ['{"hostname":123}', 400, "hostname: got 123, expected a host name of letters"],
          ['{"hostname":"../x"}', 400, 'hostname: got "../x", expected a host name'],
          ['{"attributes":"x"}', 400, "attributes: expected an object of string values"],
        ] as const
      ) {
        const res = await fetch(`${up.url}/admin/agents`, { method: "POST", body });
        assert.equal(res.status, status, body);
        assert.equal(
          res.headers.get("rpc-error-code"),
          status === 409 ? "already-exists" : "invalid-argument",
        );
        assert.match(await res.text(), new RegExp(`^${message.replace(/[.()]/g, "\\$&")}`), body);
      }
      assert.equal(await agents(), hosts, "no agent added");
      assert.equal(await jobs(), before, "no job created");
    });
  },
});

Deno.test({
  name:
    "a request body that is not UTF-8 is refused, naming the byte offset where it stops being so, and changes nothing",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-not-utf8-", async (up) => {
      const jobs = async () => (await cli(up.url, "-j", "job", "query")).out;
      const before = await jobs();
      const call = (procedure: string, body: BodyInit) =>
        fetch(`${up.url}/api/v1`, { method: "POST", headers: { "rpc-procedure": procedure }, body });
      const bytes = (text: string) => new TextEncoder().encode(text);
      /** `json` with its `@BAD@` replaced by `bad`, and the offset where `bad` starts. */
      const spliced = (json: string, bad: number[]) => {
        const [head, tail] = json.split("@BAD@").map(bytes);
        return { body: new Uint8Array([...head, ...bad, ...tail]), offset: head.length };
      };
      const lookup = await call(
        "peloton.api.respool.ResourceManager::LookupResourcePoolID",
        JSON.stringify({ path: { value: "/DefaultResPool" } }),
      );
      const respoolId = (await lookup.json()).id.value;
      const config = parse(await Deno.readTextFile(`${ROOT}/scenarios/jobs/testjob.yaml`));
      const create = JSON.stringify({
        id: { value: crypto.randomUUID() },
        respoolId: { value: respoolId },
        config: { ...config, name: "t@BAD@", respoolID: { value: respoolId } },
      });
      for (
        const [procedure, { body, offset }] of [
          // Read leniently, these were a job named "t\u{fffd}\u{fffd}" and "job \u{fffd} not found".
          ["peloton.api.v0.job.JobManager::Create", spliced(create, [0xff, 0xfe])],
          ["peloton.api.v0.job.JobManager::Get", spliced('{"id":{"value":"@BAD@"}}', [0xff])],
          // A character cut short (by the body's end, or by a byte that cannot follow), overlong or a surrogate.
          ["peloton.api.v0.job.JobManager::Get", spliced('{"id":{"value":"x"}}@BAD@', [0xe2, 0x82])],
          ["peloton.api.v0.job.JobManager::Get", spliced('{"id":{"value":"@BAD@"}}', [0xc3, 0x41])],
          ["peloton.api.v0.job.JobManager::Get", spliced('{"id":{"value":"@BAD@"}}', [0xc0, 0xaf])],
          ["peloton.api.v0.job.JobManager::Get", spliced('{"id":{"value":"@BAD@"}}', [0xed, 0xa0, 0x80])],
        ] as const
      ) {
        const res = await call(procedure, body);
        assert.deepEqual(
          [res.status, res.headers.get("rpc-error-code"), res.headers.get("rpc-status"), await res.text()],
          [
            400,
            "invalid-argument",
            "success",
            `the request body is not valid UTF-8 at byte offset ${offset}\n`,
          ],
          `${procedure} ${[...body.subarray(offset, offset + 3)]}`,
        );
      }
      assert.equal(await jobs(), before, "no job created");

      // UTF-8 split between the pieces a body comes in is read whole (and the answer names the id as sent).
      const id = "café-☃-😀";
      const whole = bytes(JSON.stringify({ id: { value: id } }));
      const split = whole.indexOf(0xf0) + 2;
      const pieces = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(whole.subarray(0, split));
          c.enqueue(whole.subarray(split));
          c.close();
        },
      });
      const found = await call("peloton.api.v0.job.JobManager::Get", pieces);
      const text = await found.text();
      assert.ok(text.includes(JSON.stringify({ value: id })), text);
    });
  },
});
