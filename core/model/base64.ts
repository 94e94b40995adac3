/**
 * Protobuf JSON's `bytes`: "either standard or URL-safe base64 encoding with/without paddings are accepted"
 * (the proto3 JSON mapping). Values are kept in the standard, padded form that every reader takes.
 */

const ANY_BASE64 = /^[A-Za-z0-9+/\-_]*={0,2}$/;

/** `text` in standard, padded base64; undefined when it is no base64 the mapping accepts. */
export function canonicalBase64(text: string): string | undefined {
  if (!ANY_BASE64.test(text)) return undefined;
  const bare = text.replace(/=+$/, "");
  // A lone character past a whole group encodes no byte; padding may only complete the last group.
  if (bare.length % 4 === 1 || (text.length !== bare.length && text.length % 4 !== 0)) return undefined;
  if (/[+/]/.test(bare) && /[-_]/.test(bare)) return undefined;
  const standard = bare.replaceAll("-", "+").replaceAll("_", "/");
  return standard.padEnd(Math.ceil(standard.length / 4) * 4, "=");
}
