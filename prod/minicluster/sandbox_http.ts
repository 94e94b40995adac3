/** `GET /sandbox/<taskId>/<stdout|stderr>[?tailBytes=N]` served from the minicluster's sandboxes: raw bytes, streamed. */
import type { Minicluster } from "./minicluster.ts";

/** Response headers of a tail read: the file's size when it was opened, and where the bytes sent start. */
export const FILE_SIZE_HEADER = "x-file-size-bytes";
export const FILE_OFFSET_HEADER = "x-file-offset-bytes";

/**
 * A task's output file as it is on disk, streamed (as Mesos's `/files/download`): no size limit, no copy of
 * the file in memory, its bytes unchanged (no decoding as UTF-8). A file still being written is sent as far
 * as it reached while it is read. `?agentId=` says where an earlier run was. `?tailBytes=N` sends only the
 * file's last N bytes (as it was when opened; the rest is never read), for a caller that shows text and so
 * must bound it; the size and offset headers say what was left out.
 */
export async function serveSandboxFile(mc: Minicluster, url: URL): Promise<Response> {
  const path = sandboxPath(url);
  if (path instanceof Response) return path;
  const { taskId, file } = path;
  const tail = url.searchParams.get("tailBytes");
  if (tail !== null && !/^\d{1,15}$/.test(tail)) {
    return new Response(`tailBytes: got "${tail}", expected a whole number of bytes\n`, { status: 400 });
  }
  const opened = await mc.openLog(taskId, file, url.searchParams.get("agentId") ?? undefined);
  if (!opened) return new Response(`no sandbox for task ${taskId}\n`, { status: 404 });
  // Plain text with no charset claimed (a browser shows it; the bytes need not be UTF-8).
  const headers: Record<string, string> = { "content-type": "text/plain" };
  if (tail === null) return new Response(opened.readable, { headers });
  let sizeBytes: number, offsetBytes: number;
  try {
    sizeBytes = (await opened.stat()).size;
    offsetBytes = Math.max(0, sizeBytes - Number(tail));
    await opened.seek(offsetBytes, Deno.SeekMode.Start);
  } catch (e) {
    opened.close();
    throw e;
  }
  headers[FILE_SIZE_HEADER] = String(sizeBytes);
  headers[FILE_OFFSET_HEADER] = String(offsetBytes);
  return new Response(firstBytes(opened.readable, sizeBytes - offsetBytes), { headers });
}

/** The first `lengthBytes` of `source`, which is cancelled (the file closed) once they are sent. */
function firstBytes(source: ReadableStream<Uint8Array>, lengthBytes: number): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let leftBytes = lengthBytes;
  return new ReadableStream<Uint8Array>({
    async pull(ctl) {
      const next = leftBytes > 0 ? await reader.read() : { done: true as const, value: undefined };
      if (next.done) {
        if (leftBytes <= 0) await reader.cancel();
        ctl.close();
        return;
      }
      const piece = next.value.subarray(0, leftBytes);
      leftBytes -= piece.length;
      ctl.enqueue(piece);
    },
    cancel: (why) => reader.cancel(why),
  });
}

/**
 * The task id and file a `/sandbox/<taskId>/<stdout|stderr>` URL names, or the 400 response saying what is
 * wrong with it.
 */
export function sandboxPath(url: URL): { taskId: string; file: "stdout" | "stderr" } | Response {
  let taskId: string, file: string;
  try {
    [taskId, file] = url.pathname.split("/").slice(2).map(decodeURIComponent);
  } catch {
    // `%E0%A4%A`: an escape that is not UTF-8 names no task.
    return new Response("the sandbox path is not valid percent-encoded UTF-8\n", { status: 400 });
  }
  if (file !== "stdout" && file !== "stderr") {
    return new Response("file must be stdout or stderr\n", { status: 400 });
  }
  return { taskId, file };
}
