import assert from "node:assert/strict";
import { checkCore, checkCoreSource } from "./boundary.ts";

Deno.test("core/ keeps its boundary: no sim/prod imports, clock, randomness, timers, Deno or network", async () => {
  const root = new URL("..", import.meta.url).pathname;
  const found = await checkCore(root);
  assert.deepEqual(found.map((v) => `${v.file}:${v.line}: ${v.rule}: ${v.text}`), []);
});

Deno.test("the checker catches each kind of violation", () => {
  const src = [
    'import { x } from "../../sim/runner.ts";',
    'import { y } from "../../prod/server.ts";',
    'import fs from "node:fs";',
    "const t = Date.now();",
    "const r = Math.random();",
    "setTimeout(() => {}, 1);",
    "const p = performance.now();",
    "await Deno.readTextFile('x');",
    "await fetch('http://x');",
    "const d = new Date();",
  ].join("\n");
  const rules = checkCoreSource("core/jobmgr/bad.ts", src).map((v) => v.line);
  assert.deepEqual(rules, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
});

Deno.test("comments and strings do not count, and core-internal imports are fine", () => {
  const src = [
    'import { a } from "../model/states.ts";',
    "// Date.now() would be wrong here",
    '/* setTimeout */ const s = "Math.random() and Deno.exit";',
    "const update = 1; const mandate = 2; const dated = 3;",
  ].join("\n");
  assert.deepEqual(checkCoreSource("core/jobmgr/ok.ts", src), []);
});
