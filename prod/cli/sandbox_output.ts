/** How `task logs` and `pod logs` print a sandbox file: its raw bytes, or with -j its end as text. */
import type { CommandContext } from "./command.ts";

/**
 * How much of a file -j shows: JSON holds text, all of it in memory, so only the file's last 1 MiB is read
 * (`truncated` and `sizeBytes` say what was left out; the raw output has the whole file).
 */
export const LOG_TAIL_BYTES = 1 << 20;

/** A run whose sandbox `BrowseSandbox` pointed to. */
export interface SandboxRun {
  taskId: string;
  agentId?: string;
}

/**
 * Prints `file` of `run`: its bytes as they are, streamed, through the raw writer (any size, any encoding);
 * with -j, `{...head, file, data, sizeBytes, truncated}`, `data` the file's end (at most LOG_TAIL_BYTES) as
 * text. With no raw writer (the CLI run in-process), the whole file as text.
 */
export async function printSandboxFile(
  ctx: CommandContext,
  run: SandboxRun,
  file: string,
  head: Record<string, unknown>,
): Promise<void> {
  if (ctx.json) {
    const tail = await ctx.client.sandboxTail(run.taskId, file, run.agentId, LOG_TAIL_BYTES);
    const { text, offsetBytes } = tailText(tail.bytes, tail.offsetBytes);
    const truncated = offsetBytes > 0;
    ctx.out(JSON.stringify({
      ...head,
      file,
      data: text,
      sizeBytes: tail.sizeBytes,
      truncated,
      ...(truncated ? { offsetBytes } : {}),
    }));
    return;
  }
  const stream = await ctx.client.sandboxStream(run.taskId, file, run.agentId);
  if (ctx.write) {
    for await (const chunk of stream) await ctx.write(chunk);
    return;
  }
  let text = "";
  for await (const piece of stream.pipeThrough(new TextDecoderStream())) text += piece;
  ctx.out(text.replace(/\n$/, ""));
}

/**
 * `bytes`, read from `offsetBytes` of a file, as text: a character the cut split is dropped whole (its
 * continuation bytes, at most 3) rather than shown as U+FFFD, and any other invalid byte becomes U+FFFD.
 * `offsetBytes` is then where the text starts.
 */
export function tailText(bytes: Uint8Array, offsetBytes: number): { text: string; offsetBytes: number } {
  let skip = 0;
  if (offsetBytes > 0) {
    while (skip < 3 && skip < bytes.length && (bytes[skip] & 0xc0) === 0x80) skip++;
  }
  return { text: new TextDecoder().decode(bytes.subarray(skip)), offsetBytes: offsetBytes + skip };
}
