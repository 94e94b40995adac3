import assert from "node:assert/strict";
import { cli } from "../testing.ts";
import { displayWidth } from "./display_width.ts";
import { table } from "./format.ts";

/** Terminal columns at which each `|` of a rendered line falls. */
function barColumns(line: string): number[] {
  const bars: number[] = [];
  let column = 0;
  for (const part of line.split("|").slice(0, -1)) {
    column += displayWidth(part);
    bars.push(column++);
  }
  return bars;
}

Deno.test("table keeps plain ASCII rows as Peloton prints them", () => {
  assert.equal(
    table(["ID", "Name"], [["j1", "web"], ["j22", undefined]]),
    " ID|  Name|\n" +
      " j1|   web|\n" +
      "j22|      |",
  );
});

Deno.test("table lines up columns by terminal width with CJK, emoji, combining and zero-width names", () => {
  const names = ["漢字ジョブ", "🇯🇵👨‍👩‍👧‍👦", "cafe\u0301", "a\u200bb", "web"];
  const out = table(["Name", "ID"], names.map((n, i) => [n, `j${i}`]));
  assert.equal(
    out,
    [
      "      Name|  ID|",
      "漢字ジョブ|  j0|",
      "      🇯🇵👨‍👩‍👧‍👦|  j1|",
      "      cafe\u0301|  j2|",
      "        a\u200bb|  j3|",
      "       web|  j4|",
    ].join("\n"),
  );
  const lines = out.split("\n");
  for (const line of lines) assert.deepEqual(barColumns(line), barColumns(lines[0]), line);
});

Deno.test("table shows newlines, tabs and terminal escapes in a cell escaped, on one aligned row", () => {
  const out = table(["Name", "State"], [["bad\nname\t\u001b[31mred\u001b[0m", "RUNNING"], ["ok", "KILLED"]]);
  assert.equal(
    out,
    [
      "                             Name|    State|",
      "bad\\nname\\t\\u001b[31mred\\u001b[0m|  RUNNING|",
      "                               ok|   KILLED|",
    ].join("\n"),
  );
  assert.deepEqual(
    [...out].filter((c) => c < " " && c !== "\n"),
    [],
    "no control character but the row breaks",
  );
});

Deno.test("jobmgr query-job-cache escapes and aligns names in its table, and -j prints them raw", async () => {
  const result = [
    { jobId: { value: "j-1" }, name: "漢字\u001b[2J" },
    { jobId: { value: "j-22" }, name: "🇯🇵\nx" },
  ];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => Response.json({ result }, { headers: { "rpc-status": "success" } }),
  );
  try {
    const url = `http://127.0.0.1:${server.addr.port}`;
    const shown = await cli(url, "jobmgr", "query-job-cache");
    assert.equal(shown.code, 0, shown.err);
    assert.equal(
      shown.out,
      [
        " Job|           Name|",
        " j-1|  漢字\\u001b[2J|",
        "j-22|          🇯🇵\\nx|",
      ].join("\n"),
    );
    const raw = await cli(url, "jobmgr", "query-job-cache", "-j");
    assert.equal(raw.out, JSON.stringify({ result }, null, 2));
  } finally {
    await server.shutdown();
  }
});
