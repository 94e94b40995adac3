/** How a bad request field's value reads in an error message: `got <its JSON>`, or `missing` when absent. */

/**
 * `got "x"`, `got 5`, or `missing` for an absent field (undefined, or JSON's null, which protobuf reads as
 * absent), so that a message never shows JavaScript's `undefined`. The same as the job manager's `gotText`
 * (core/jobmgr/api_json.ts), for the daemons that do not import from the job manager.
 */
export function gotText(raw: unknown): string {
  return raw === undefined || raw === null ? "missing" : `got ${JSON.stringify(raw)}`;
}
