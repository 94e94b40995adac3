/** `GET /sandbox/<taskId>/<stdout|stderr>[?tailBytes=N]` served from the minicluster's sandboxes: raw bytes, streamed. */
import type { Minicluster } from "./minicluster.ts";
import { SandboxFileRefused } from "./sandbox_file.ts";

/** Response headers of a tail read: the file's size when it was opened, and where the bytes sent start. */
export const FILE_SIZE_HEADER = "x-file-size-bytes";
export const FILE_OFFSET_HEADER = "x-file-offset-bytes";

/**
 * Headers of every sandbox answer. The file is the task's output, anyone's to write, served from the UI's
 * origin: a browser must show it as text (no sniffing it into HTML), run nothing in it, frame it nowhere, and
 * keep no copy. UTF-8 is claimed as the UI reads it; the bytes sent are the file's own all the same.
 */
export const SANDBOX_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/plain; charset=utf-8",
  "x-content-type-options": "nosniff",
  "content-security-policy": "sandbox; default-src 'none'; frame-ancestors 'none'",
  "cache-control": "no-store",
};

/**
 * A task's output file as it is on disk, streamed (as Mesos's `/files/download`): no size limit, no copy of
 * the file in memory, its bytes unchanged (no decoding as UTF-8). A file still being written is sent as far
 * as it reached while it is read. `?agentId=` says where an earlier run was. `?tailBytes=N` sends only the
 * file's last N bytes (as it was when opened; the rest is never read), for a caller that shows text and so
 * must bound it; the size and offset headers say what was left out.
 */
export async function serveSandboxFile(mc: Minicluster, url: URL): Promise<Response> {
  const path = sandboxPath(url);
  if (path instanceof Response) {
    return new Response(path.body, { status: path.status, headers: SANDBOX_HEADERS });
  }
  const { taskId, file } = path;
  const tail = url.searchParams.get("tailBytes");
  if (tail !== null && !/^\d{1,15}$/.test(tail)) {
    return refusal(400, `tailBytes: got "${tail}", expected a whole number of bytes`);
  }
  let opened: Deno.FsFile | undefined;
  try {
    opened = await mc.openLog(taskId, file, url.searchParams.get("agentId") ?? undefined);
  } catch (e) {
    if (e instanceof SandboxFileRefused) return refusal(403, e.message);
    throw e;
  }
  if (!opened) return refusal(404, `no sandbox for task ${taskId}`);
  const headers: Record<string, string> = { ...SANDBOX_HEADERS };
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

function refusal(status: number, message: string): Response {
  return new Response(`${message}\n`, { status, headers: SANDBOX_HEADERS });
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
