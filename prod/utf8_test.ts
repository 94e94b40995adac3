/** Finding where bytes stop being UTF-8. */
import assert from "node:assert/strict";
import { seededPrng } from "../core/ports/prng.ts";
import { invalidUtf8At, readUtf8File, Utf8Check } from "./utf8.ts";
import { BasicAuth } from "./auth/basic_auth.ts";

Deno.test("Utf8Check finds the first byte that is not UTF-8, whole or in pieces, as a fatal TextDecoder judges", () => {
  const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const valid = (b: Uint8Array) => {
    try {
      fatal.decode(b);
      return true;
    } catch {
      return false;
    }
  };
  const cases = [
    [[0x74, 0xff, 0xfe], 1],
    [[0x61, 0xc3, 0xa9, 0xe2, 0x98, 0x83, 0xf0, 0x9f, 0x98, 0x80], -1],
    [[0x61, 0xe2, 0x82], 1], // cut short by the end
    [[0xc3, 0x41], 0], // cut short by a byte that cannot follow
    [[0xc0, 0xaf], 0], // overlong
    [[0xe0, 0x80, 0xaf], 0], // overlong
    [[0xed, 0xa0, 0x80], 0], // a surrogate
    [[0xf4, 0x90, 0x80, 0x80], 0], // past U+10FFFF
    [[0x80], 0], // a continuation byte alone
  ] as const;
  for (const [bytes, at] of cases) assert.equal(invalidUtf8At(new Uint8Array(bytes)), at, `${bytes}`);
  // Random text, mostly well-formed, against the decoder; and split anywhere, the same answer.
  const random = seededPrng(7);
  const pick = (n: number) => Math.floor(random() * n);
  const chars = ["a", "é", "☃", "😀", "\u{10ffff}", "\u{fffd}"];
  for (let i = 0; i < 2_000; i++) {
    const text = Array.from({ length: pick(8) }, () => chars[pick(chars.length)]).join("");
    const bytes = new TextEncoder().encode(text);
    if (bytes.length && pick(2)) bytes[pick(bytes.length)] = pick(256);
    const at = invalidUtf8At(bytes);
    assert.equal(at === -1, valid(bytes), `${bytes}`);
    if (at >= 0) assert.ok(valid(bytes.subarray(0, at)), `all before ${at} is UTF-8: ${bytes}`);
    const cut = pick(bytes.length + 1);
    const check = new Utf8Check();
    const first = check.push(bytes.subarray(0, cut));
    const second = first >= 0 ? first : check.push(bytes.subarray(cut));
    assert.equal(second >= 0 ? second : check.end(), at, `${bytes} cut at ${cut}`);
  }
});

Deno.test("a file that is not UTF-8 is refused with its byte offset and line, auth configs too", async () => {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeFile(file, new Uint8Array([0x61, 0x0a, 0x62, 0xff, 0x0a]));
    await assert.rejects(readUtf8File(file), {
      message: "not valid UTF-8 at byte offset 3 (line 2, byte 0xff); expected UTF-8 text",
    });
    await assert.rejects(BasicAuth.load(file), {
      message: `Cannot read auth config ${file}: not valid UTF-8 at byte offset 3 (line 2, byte 0xff); ` +
        "expected UTF-8 text",
    });
    await Deno.writeTextFile(file, "naïve: ☃\n");
    assert.equal(await readUtf8File(file), "naïve: ☃\n");
  } finally {
    await Deno.remove(file);
  }
});
