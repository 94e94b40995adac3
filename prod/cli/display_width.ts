/** How text shows in a terminal: its width in columns, and control characters made visible and harmless. */

/**
 * East Asian Wide and Fullwidth code points (EastAsianWidth-17.0.0, as wcwidth 0.7 reads it) that are not
 * already Emoji_Presentation, which the regex below covers; inclusive [first, last] pairs, ascending.
 */
// deno-fmt-ignore
const WIDE: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f], [0x2329, 0x232a], [0x2630, 0x2637], [0x268a, 0x268f], [0x2e80, 0x2e99], [0x2e9b, 0x2ef3],
  [0x2f00, 0x2fd5], [0x2ff0, 0x3029], [0x3030, 0x303e], [0x3041, 0x3096], [0x309b, 0x30ff], [0x3105, 0x312f],
  [0x3131, 0x3163], [0x3165, 0x318e], [0x3190, 0x31e5], [0x31ef, 0x321e], [0x3220, 0x3247], [0x3250, 0xa48c],
  [0xa490, 0xa4c6], [0xa960, 0xa97c], [0xac00, 0xd7a3], [0xf900, 0xfaff], [0xfe10, 0xfe19], [0xfe30, 0xfe52],
  [0xfe54, 0xfe66], [0xfe68, 0xfe6b], [0xff01, 0xff60], [0xffe0, 0xffe6], [0x16fe0, 0x16fe3],
  [0x16ff2, 0x16ff6], [0x17000, 0x18cd5], [0x18cff, 0x18d1e], [0x18d80, 0x18df2], [0x1aff0, 0x1aff3],
  [0x1aff5, 0x1affb], [0x1affd, 0x1affe], [0x1b000, 0x1b122], [0x1b132, 0x1b132], [0x1b150, 0x1b152],
  [0x1b155, 0x1b155], [0x1b164, 0x1b167], [0x1b170, 0x1b2fb], [0x1d300, 0x1d356], [0x1d360, 0x1d376],
  [0x1f200, 0x1f200], [0x1f202, 0x1f202], [0x1f210, 0x1f219], [0x1f21b, 0x1f22e], [0x1f230, 0x1f231],
  [0x1f237, 0x1f237], [0x1f23b, 0x1f23b], [0x1f240, 0x1f248], [0x1f260, 0x1f265], [0x1f6d8, 0x1f6d8],
  [0x1fa8a, 0x1fa8a], [0x1fa8e, 0x1fa8e], [0x1fac8, 0x1fac8], [0x1facd, 0x1facd], [0x1faea, 0x1faea],
  [0x1faef, 0x1faef], [0x20000, 0x2fffd], [0x30000, 0x3fffd],
];

/**
 * Marks, format characters (ZWJ, zero-width space, tags, bidi marks), variation selectors, Hangul vowel and
 * final jamo and fillers take no column; the soft hyphen and the Arabic-script number signs (Unicode's
 * Prepended_Concatenation_Mark, which the regex engine does not name) are drawn, so they do.
 */
const ZERO_WIDTH =
  /^(?![\u00ad\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u{110bd}\u{110cd}])[\p{Mn}\p{Me}\p{Cf}\p{Cc}\p{Zl}\p{Zp}\u1160-\u11ff\u3164\uffa0\ud7b0-\ud7ff]/u;
const EMOJI_PRESENTATION = /^\p{Emoji_Presentation}/u;
/** A text-default emoji (❤, ☺, a keycap digit) that VS16 (U+FE0F) asks to draw as a two-column emoji. */
const EMOJI = /^\p{Emoji}/u;
/** A pictograph joined to more (ZWJ) or given a skin tone is drawn as an emoji even without VS16. */
const PICTOGRAPH = /^\p{Extended_Pictographic}/u;
const JOINED_OR_TONED = /[\u200d\u{1f3fb}-\u{1f3ff}]/u;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/**
 * Columns `text` takes in a monospace terminal: 2 for wide/fullwidth characters and emoji (flags and ZWJ
 * sequences count once), 0 for combining marks, zero-width and control characters, 1 for the rest.
 * East Asian Ambiguous characters count 1, as they do in terminals outside CJK locales.
 */
export function displayWidth(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length;
  let columns = 0;
  for (const { segment } of graphemes.segment(text)) columns += clusterWidth(segment);
  return columns;
}

/**
 * An emoji cluster (a flag, a ZWJ sequence, a skin-toned or VS16 pictograph) is drawn as one two-column
 * glyph; any other cluster takes what terminals advance for each of its code points, so a spacing vowel
 * sign counts and a combining accent does not.
 */
function clusterWidth(cluster: string): number {
  if (
    EMOJI.test(cluster) &&
    (EMOJI_PRESENTATION.test(cluster) || cluster.includes("\ufe0f") ||
      (PICTOGRAPH.test(cluster) && JOINED_OR_TONED.test(cluster)))
  ) return 2;
  let columns = 0;
  for (const char of cluster) columns += codePointWidth(char);
  return columns;
}

function codePointWidth(char: string): number {
  if (ZERO_WIDTH.test(char)) return 0;
  return EMOJI_PRESENTATION.test(char) || isWide(char.codePointAt(0)!) ? 2 : 1;
}

function isWide(codePoint: number): boolean {
  let lo = 0;
  let hi = WIDE.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (codePoint < WIDE[mid][0]) hi = mid - 1;
    else if (codePoint > WIDE[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}

/**
 * Control characters (C0, DEL, C1), lone surrogates, line/paragraph separators and bidi overrides, which
 * would break a line, move the cursor, start a terminal escape or reorder the text around them.
 */
const UNSAFE = /[\p{Cc}\p{Cs}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;
const SHORT: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** `text` with each unsafe character written as an escape (`\n`, `\t`, `\u001b`), safe to print in a line. */
export function escapeControls(text: string): string {
  return text.replace(
    UNSAFE,
    (c) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
