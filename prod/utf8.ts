/** UTF-8 that is not well-formed, found where it starts (request bodies, files the CLI is given). */

/**
 * Where UTF-8 text stops being well-formed, checked whole or a piece at a time: the offset of the first byte of the first sequence that is not UTF-8 (a byte no character
 * starts with, or a character cut short, overlong, a surrogate or past U+10FFFF), as Unicode's table of
 * well-formed byte sequences has them. `TextDecoder`'s fatal mode says that the text is bad, but not where.
 */
export class Utf8Check {
  #seen = 0;
  /** Continuation bytes the current character still needs, and the range its next one must be in. */
  #need = 0;
  #low = 0x80;
  #high = 0xbf;
  /** The offset of the current character's first byte. */
  #start = 0;

  /** Checks the next bytes: the offset of the first bad one so far, or -1 while all are UTF-8. */
  push(bytes: Uint8Array): number {
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      if (this.#need > 0) {
        if (b < this.#low || b > this.#high) return this.#start;
        this.#need--;
        this.#low = 0x80;
        this.#high = 0xbf;
      } else if (b >= 0x80) {
        this.#start = this.#seen + i;
        if (b >= 0xc2 && b <= 0xdf) this.#need = 1;
        else if (b >= 0xe0 && b <= 0xef) {
          this.#need = 2;
          if (b === 0xe0) this.#low = 0xa0; // overlong
          if (b === 0xed) this.#high = 0x9f; // a surrogate
        } else if (b >= 0xf0 && b <= 0xf4) {
          this.#need = 3;
          if (b === 0xf0) this.#low = 0x90; // overlong
          if (b === 0xf4) this.#high = 0x8f; // past U+10FFFF
        } else return this.#start;
      }
    }
    this.#seen += bytes.length;
    return -1;
  }

  /** At the end of the text: the offset of a last character cut short, or -1. */
  end(): number {
    return this.#need > 0 ? this.#start : -1;
  }
}

/** The offset of the first byte of `bytes` that is not well-formed UTF-8, or -1 when all are. */
export function invalidUtf8At(bytes: Uint8Array): number {
  const check = new Utf8Check();
  const at = check.push(bytes);
  return at >= 0 ? at : check.end();
}

const FATAL = new TextDecoder("utf-8", { fatal: true });

/**
 * `bytes` as text, or where they stop being UTF-8: text with U+FFFD in place of bad bytes would name a job
 * or a pool no one wrote.
 */
export function decodeUtf8(bytes: Uint8Array): string | { invalidAt: number } {
  try {
    return FATAL.decode(bytes);
  } catch {
    return { invalidAt: invalidUtf8At(bytes) };
  }
}

/**
 * A file's text, which must be UTF-8: a file that is not is refused (thrown), naming the byte offset and
 * line of its first byte that is not, rather than read with U+FFFD in its place (which would then be a job's
 * name no one wrote).
 */
export async function readUtf8File(path: string): Promise<string> {
  const bytes = await Deno.readFile(path);
  const text = decodeUtf8(bytes);
  if (typeof text === "string") return text;
  const at = text.invalidAt;
  let line = 1;
  for (let i = 0; i < at; i++) if (bytes[i] === 0x0a) line++;
  const byte = bytes[at].toString(16).padStart(2, "0");
  throw new Error(`not valid UTF-8 at byte offset ${at} (line ${line}, byte 0x${byte}); expected UTF-8 text`);
}
