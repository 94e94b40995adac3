/** Streams a daemon passes on from another process (a watch asked of a process that does not own the job). */

/**
 * The stream to serve for `body`, read from another process with `abort`'s fetch. While it lasts, `live`
 * holds its cut, which the daemon calls when it stops; a client that leaves cancels it, and it leaves `live`
 * when it ends. The cut ends the served stream at once, whatever the one read from does (aborting the fetch
 * alone did not always end a read already waiting on it, and the HTTP server's shutdown then waited for the
 * stream for good). The client sees the stream end without the watch's last line, so it knows it was cut.
 */
export function passOn(
  body: ReadableStream<Uint8Array>,
  abort: AbortController,
  live: Set<() => void>,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let out: ReadableStreamDefaultController<Uint8Array> | undefined;
  const forget = () => void live.delete(cut);
  const cut = () => {
    forget();
    abort.abort();
    reader.cancel().catch(() => {});
    try {
      out?.close();
    } catch {
      // Already closed or errored.
    }
  };
  live.add(cut);
  return new ReadableStream<Uint8Array>({
    start(c) {
      out = c;
    },
    async pull(c) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          forget();
          c.close();
        } else c.enqueue(value);
      } catch (e) {
        forget();
        c.error(e);
      }
    },
    cancel(reason) {
      forget();
      return reader.cancel(reason);
    },
  });
}
