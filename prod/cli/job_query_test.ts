/** `job query` sends Peloton's pagination: -n limit, -o offset, -q total (maxLimit). */
import assert from "node:assert/strict";
import { cli } from "../testing.ts";

Deno.test("job query -o/--offset and -q/--total page through Query as Peloton's CLI does", async () => {
  const specs: unknown[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    specs.push((await req.json()).spec);
    return Response.json({ results: [], pagination: { offset: 0, limit: 0, total: 0 } });
  });
  try {
    const url = `http://127.0.0.1:${server.addr.port}`;
    for (const argv of [["-n", "5", "-o", "10", "-q", "50"], ["--offset", "3", "--total", "7"], []]) {
      const r = await cli(url, "job", "query", ...argv);
      assert.equal(r.code, 0, r.err);
    }
    assert.deepEqual(specs, [
      { pagination: { limit: 5, offset: 10, maxLimit: 50 } },
      { pagination: { limit: 100, offset: 3, maxLimit: 7 } },
      { pagination: { limit: 100, offset: 0 } },
    ]);
    const bad = await cli(url, "job", "query", "-o", "x");
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--offset: got "x", expected a whole number/);
  } finally {
    await server.shutdown();
  }
});
