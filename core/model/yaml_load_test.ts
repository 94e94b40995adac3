/** The YAML source tree: positions, YAML 1.1 quirks, anchors and merge keys, syntax errors. */
import assert from "node:assert/strict";
import {
  MAX_ALIASED_VALUES,
  MAX_DEPTH,
  parseDocumentBounded,
  parseYamlSource,
  parseYamlValue,
  plainToSource,
  type SourceNode,
  sourceToPlain,
} from "./yaml_load.ts";
import { loadJobConfig, loadRespoolConfig, loadStatelessSpec, loadUpdateConfig } from "./load.ts";

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

/** A "billion laughs" file: `levels` anchors, each a list of ten aliases of the one before. */
function aliasBomb(levels: number): string {
  const lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'];
  for (let i = 1; i <= levels; i++) lines.push(`l${i}: &l${i} [${Array(10).fill(`*l${i - 1}`).join(", ")}]`);
  return lines.join("\n") + "\n";
}

Deno.test("nested aliases that would expand past the limit are refused at once, at the alias", () => {
  const r = parseYamlSource(aliasBomb(6));
  assert.ok(!r.ok);
  assert.deepEqual(r.errors, [
    {
      line: 5,
      column: 45,
      message: `aliases expand to more than ${MAX_ALIASED_VALUES} values (nested aliases multiply)`,
    },
  ]);
  const expected = `bomb.yaml:5: invalid YAML: aliases expand to more than ${MAX_ALIASED_VALUES} values ` +
    "(nested aliases multiply)";
  for (const load of [loadJobConfig, loadRespoolConfig]) {
    const loaded = load(aliasBomb(9), "bomb.yaml");
    assert.ok(!loaded.ok);
    assert.deepEqual(loaded.errors.map((e) => e.message), [expected]);
  }
});

Deno.test("a config repeated by aliases many times is read whole", () => {
  const base = Array.from({ length: 20 }, (_, i) => `  k${i}: ${i}`).join("\n");
  const uses = Array.from({ length: 1000 }, (_, i) => `  ${i}: {<<: *base, own: ${i}}`).join("\n");
  const r = root(`base: &base\n${base}\nall:\n${uses}\n`);
  const all = (sourceToPlain(r) as { all: Record<string, Record<string, number>> }).all;
  assert.equal(Object.keys(all).length, 1000);
  assert.deepEqual([all[999].k19, all[999].own], [19, 999]);
  // An alias takes the last anchor of its name before it.
  assert.deepEqual(sourceToPlain(root("a: &x 1\nb: *x\nc: &x 2\nd: *x\n")), { a: 1, b: 1, c: 2, d: 2 });
});

Deno.test("an alias with no anchor before it is an error, not a null", () => {
  const r = parseYamlSource("a: &early [*late]\nb: *early\nc: &late 1\n");
  assert.ok(!r.ok);
  assert.deepEqual(r.errors, [{ line: 1, column: 12, message: "alias *late has no anchor &late before it" }]);
});

/**
 * `levels` lists or mappings one inside another: in flow style (`[[...]]`, `{a: {a: ...}}`), or block lists
 * in compact style (`- - - x`, each `- ` a list in a list), on a line of their own.
 */
function nested(levels: number, style: "lists" | "maps" | "block"): string {
  if (style === "lists") return "[".repeat(levels) + "]".repeat(levels);
  if (style === "maps") return "{a: ".repeat(levels) + "1" + "}".repeat(levels);
  return "\n" + "- ".repeat(levels) + "x";
}

Deno.test("YAML nested past the depth limit is refused in one line, before the schema, however deep", () => {
  const tooDeep = `lists and mappings nested more than ${MAX_DEPTH} levels deep`;
  const loads = [
    [loadJobConfig, "labels"],
    [loadRespoolConfig, "parent"],
    [loadUpdateConfig, "batchSize"],
    [loadStatelessSpec, "labels"],
  ] as const;
  for (const levels of [MAX_DEPTH + 1, 1_000, 10_000]) {
    for (const style of ["lists", "maps", "block"] as const) {
      for (const [load, key] of loads) {
        const text = `name: x\n${key}: ${nested(levels, style)}\n`;
        const r = load(text, "deep.yaml");
        assert.ok(!r.ok);
        // The collection past the limit: the top mapping is level 1, the value's first collection level 2.
        const line = style === "block" ? 3 : 2;
        assert.deepEqual(
          r.errors.map((e) => e.message),
          [`deep.yaml:${line}: invalid YAML: ${tooDeep}`],
          `${levels} ${style}`,
        );
      }
    }
  }
  // At the limit the text is read; the schema has its say.
  for (const style of ["lists", "maps", "block"] as const) {
    const r = parseYamlSource(`a: ${nested(MAX_DEPTH - 1, style)}\n`);
    assert.ok(r.ok, `${style}: ${JSON.stringify(!r.ok && r.errors)}`);
  }
  const fine = loadRespoolConfig(`name: x\nparent: ${nested(MAX_DEPTH - 1, "maps")}\n`, "p.yaml");
  assert.ok(!fine.ok);
  assert.deepEqual(fine.errors.map((e) => e.message), [
    "p.yaml:1: resources: missing, expected a list of cpu, memory, disk and gpu entries",
    "p.yaml:2: parent: got a mapping, expected an id, as text or as {value: <id>}",
  ]);
});

Deno.test("parseYamlValue and parseDocumentBounded: the depth limit for readers outside the config loader", () => {
  const tooDeep = `lists and mappings nested more than ${MAX_DEPTH} levels deep`;
  for (const style of ["lists", "maps", "block"] as const) {
    const text = `a: 1\nb: ${nested(10_000, style)}\n`;
    assert.throws(() => parseYamlValue(text), { message: `line ${style === "block" ? 3 : 2}: ${tooDeep}` });
    const doc = parseDocumentBounded(text);
    assert.deepEqual(doc.errors.map((e) => e.message), [tooDeep]);
    assert.equal(doc.contents, null);
  }
  assert.deepEqual(parseYamlValue(`a: ${nested(MAX_DEPTH - 1, "lists")}\nb: [1, "2"]\n`), {
    a: JSON.parse(nested(MAX_DEPTH - 1, "lists")),
    b: [1, "2"],
  });
  assert.throws(() => parseYamlValue("a: 1\nb: [1\n"), /^Error: line 3: Flow sequence/);
  assert.throws(() => parseYamlValue("a: 1\n---\nb: 2\n"), {
    message: /^line 2: Source contains multiple documents/,
  });
});
