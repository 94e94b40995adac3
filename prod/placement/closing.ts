/**
 * The notice a placement worker posts as it closes itself: a Deno Worker fires no event when its own
 * worker calls `close()`, so without it the executor would wait for that worker's rounds for ever.
 */
export const CLOSING = "placement-worker-closing";

export function isClosingNotice(data: unknown): boolean {
  return typeof data === "object" && data !== null && (data as { kind?: unknown }).kind === CLOSING;
}
