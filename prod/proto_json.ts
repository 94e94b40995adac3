/**
 * Request bodies as protobuf's JSON parser reads them: a field may be named by its JSON name (`hostStates`)
 * or by its proto name (`host_states`); handlers read the JSON names, so proto names are renamed first.
 */

/** `host_states` → `hostStates`, protobuf's JSON name of a proto field name; other keys as they are. */
export function jsonName(key: string): string {
  if (!key.includes("_")) return key;
  return key.replace(/_+([a-zA-Z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * The body with every key in snake_case renamed to its JSON name, at any depth (values are left alone).
 * A key given both ways keeps the JSON name's value, as the last of two for one field would be ambiguous.
 * Peloton's requests have no map keyed by free text that the renaming could change: their maps are keyed by
 * instance ids, and labels, environments and parameters are lists of key/value pairs.
 */
export function withJsonNames(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(withJsonNames);
  if (body === null || typeof body !== "object") return body;
  const out: Record<string, unknown> = {};
  const entries = Object.entries(body as Record<string, unknown>);
  for (const [k, v] of entries) if (!k.includes("_")) out[k] = withJsonNames(v);
  for (const [k, v] of entries) {
    if (!k.includes("_")) continue;
    const name = jsonName(k);
    if (!(name in out)) out[name] = withJsonNames(v);
  }
  return out;
}
