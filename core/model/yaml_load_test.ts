/** The YAML source tree: positions, YAML 1.1 quirks, anchors and merge keys, syntax errors. */
import assert from "node:assert/strict";
import { parseYamlSource, plainToSource, type SourceNode, sourceToPlain } from "./yaml_load.ts";

function root(text: string): SourceNode {
  const r = parseYamlSource(text);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.root;
}

Deno.test("entries carry the key's line and column; scalars keep their spelling", () => {
  const r = root("a: 1\nb:\n  c: 2.0\n  d: [x, 3]\n0: zero\n");
  assert.equal(r.kind, "map");
  if (r.kind !== "map") return;
  assert.deepEqual(r.entries.map((e) => [e.key, e.line, e.column]), [["a", 1, 1], ["b", 2, 1], ["0", 5, 1]]);
  const b = r.entries[1].value;
  assert.ok(b.kind === "map");
  assert.deepEqual([b.entries[0].line, b.entries[0].column], [3, 3]);
  const c = b.entries[0].value;
  assert.ok(c.kind === "scalar");
  assert.deepEqual([c.value, c.text], [2, "2.0"]);
  assert.deepEqual(sourceToPlain(r), { a: 1, b: { c: 2, d: ["x", 3] }, "0": "zero" });
});

Deno.test("YAML 1.1 as Peloton's parsers read it: yes/no booleans, keys as written, dates as text", () => {
  assert.deepEqual(sourceToPlain(root("shell: yes\ny: 1\nwhen: 2019-10-01\n")), {
    shell: true,
    y: 1,
    when: "2019-10-01",
  });
});

Deno.test("anchors, aliases and merge keys; duplicate keys are left to the normalizer", () => {
  const text = "base: &b\n  cpu: 1\n  mem: 2\njob:\n  <<: *b\n  mem: 4\ndup: 1\ndup: 2\n";
  const r = root(text);
  assert.deepEqual(sourceToPlain(r), { base: { cpu: 1, mem: 2 }, job: { cpu: 1, mem: 4 }, dup: 2 });
  assert.ok(r.kind === "map");
  const job = r.entries[1].value;
  assert.ok(job.kind === "map");
  assert.deepEqual(job.entries.map((e) => [e.key, e.merged === true]), [["cpu", true], ["mem", true], [
    "mem",
    false,
  ]]);
});

Deno.test("syntax errors come with a line and column", () => {
  const r = parseYamlSource("a: 1\nb: [1, 2\nc: d: e\n");
  assert.ok(!r.ok);
  assert.ok(r.errors.length > 0);
  assert.equal(typeof r.errors[0].line, "number");
  assert.ok(!r.errors[0].message.includes("\n"), "messages are one line");
  const multi = parseYamlSource("a: 1\n---\nb: 2\n");
  assert.ok(!multi.ok);
  assert.equal(multi.errors[0].line, 2);
});

Deno.test("plain values wrap without positions", () => {
  const node = plainToSource({ a: [1, { b: null }] });
  assert.deepEqual(sourceToPlain(node), { a: [1, { b: null }] });
  assert.ok(node.kind === "map" && node.entries[0].line === undefined);
});
