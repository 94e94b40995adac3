/** What every daemon's API checks requests with: how a bad value reads in a message, and the job id form. */

/**
 * `got "x"`, `got 5`, or `missing` for an absent field (undefined, or JSON's null, which protobuf reads as
 * absent), so that a message never shows JavaScript's `undefined`. Every daemon's API uses it (the job
 * manager's through `api_json.ts`).
 */
export function gotText(raw: unknown): string {
  return raw === undefined || raw === null ? "missing" : `got ${JSON.stringify(raw)}`;
}

/** A job id: a UUID, as the job manager makes and takes them. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
