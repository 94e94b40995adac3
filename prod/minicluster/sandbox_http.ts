/** `GET /sandbox/<taskId>/<stdout|stderr>` served from the minicluster's sandboxes: raw bytes, streamed. */
import type { Minicluster } from "./minicluster.ts";

/**
 * A task's output file as it is on disk, streamed (as Mesos's `/files/download`): no size limit, no copy of
 * the file in memory, its bytes unchanged (no decoding as UTF-8). A file still being written is sent as far
 * as it reached while it is read. `?agentId=` says where an earlier run was.
 */
export async function serveSandboxFile(mc: Minicluster, url: URL): Promise<Response> {
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
  const opened = await mc.openLog(taskId, file, url.searchParams.get("agentId") ?? undefined);
  if (!opened) return new Response(`no sandbox for task ${taskId}\n`, { status: 404 });
  // Plain text with no charset claimed (a browser shows it; the bytes need not be UTF-8).
  return new Response(opened.readable, { headers: { "content-type": "text/plain" } });
}
