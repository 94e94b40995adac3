import assert from "node:assert/strict";
import { displayWidth, escapeControls } from "./display_width.ts";

Deno.test("displayWidth counts ASCII one column a character", () => {
  assert.equal(displayWidth(""), 0);
  assert.equal(displayWidth("job-42 web"), 10);
});

Deno.test("displayWidth counts CJK, kana, Hangul and fullwidth forms two columns", () => {
  assert.equal(displayWidth("漢字"), 4);
  assert.equal(displayWidth("ジョブ"), 6);
  assert.equal(displayWidth("한국어"), 6);
  assert.equal(displayWidth("ＡＢ"), 4);
  assert.equal(displayWidth("\u{20000}"), 2); // CJK Extension B, outside the BMP
  assert.equal(displayWidth("ｱｲ"), 2); // halfwidth katakana stays narrow
  assert.equal(displayWidth("\u1100\u1161\u11a8"), 2); // conjoining jamo make one syllable
});

Deno.test("displayWidth counts an emoji two columns, however many code points it has", () => {
  assert.equal(displayWidth("👍"), 2);
  assert.equal(displayWidth("👍🏽"), 2); // skin tone
  assert.equal(displayWidth("🇯🇵"), 2); // flag: two regional indicators
  assert.equal(displayWidth("🇺🇸🇬🇧"), 4);
  assert.equal(displayWidth("🏴󠁧󠁢󠁳󠁣󠁴󠁿"), 2); // tag-sequence flag
  assert.equal(displayWidth("👨‍👩‍👧‍👦"), 2); // ZWJ family
  assert.equal(displayWidth("🏳️‍🌈"), 2);
  assert.equal(displayWidth("1️⃣"), 2); // keycap
});

Deno.test("displayWidth follows VS16: a text-default symbol is narrow unless asked for as an emoji", () => {
  assert.equal(displayWidth("❤"), 1);
  assert.equal(displayWidth("❤️"), 2);
  assert.equal(displayWidth("©"), 1);
  assert.equal(displayWidth("✈️"), 2);
});

Deno.test("displayWidth gives combining marks and zero-width characters no column", () => {
  assert.equal(displayWidth("e\u0301"), 1);
  assert.equal(displayWidth("\u0301"), 0);
  assert.equal(displayWidth("a\u200bb"), 2); // zero-width space
  assert.equal(displayWidth("\ufeffx"), 1); // BOM
  assert.equal(displayWidth("a\u200db"), 2); // a ZWJ between letters joins nothing
  assert.equal(displayWidth("漢\ufe00"), 2); // variation selector
  assert.equal(displayWidth("co\u00adop"), 5); // terminals draw a soft hyphen
  assert.equal(displayWidth("नमस्ते"), 4); // virama and vowel marks combine, spacing signs do not
});

Deno.test("displayWidth gives control characters no column, and their escapes their length", () => {
  assert.equal(displayWidth("a\nb"), 2);
  assert.equal(displayWidth("\t"), 0);
  assert.equal(displayWidth("\u001b[31mred"), 7);
  assert.equal(displayWidth(escapeControls("\u001b[31mred")), 13);
});

Deno.test("escapeControls writes control, separator and bidi characters as escapes and keeps the rest", () => {
  assert.equal(escapeControls("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  assert.equal(escapeControls("\u001b[31mred\u001b[0m"), "\\u001b[31mred\\u001b[0m");
  assert.equal(escapeControls("\u0000\u007f\u0085\u009b"), "\\u0000\\u007f\\u0085\\u009b");
  assert.equal(escapeControls("a\u2028b\u202ec\u2066d"), "a\\u2028b\\u202ec\\u2066d");
  assert.equal(escapeControls("x\ud800y"), "x\\ud800y"); // lone surrogate
  const kept = "漢字 👨‍👩‍👧 🇯🇵 e\u0301 a\u200bb \\n";
  assert.equal(escapeControls(kept), kept);
});
