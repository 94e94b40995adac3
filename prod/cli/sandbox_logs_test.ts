/**
 * `pod logs` and `task logs` against a real `peloton up`: a file's raw bytes whatever they are; with -j, the
 * end of a file larger than LOG_TAIL_BYTES, decoded with nothing split, and said to be cut.
 */
import assert from "node:assert/strict";
import { cli, createJob, waitFor, withUp } from "../testing.ts";
import { batchJobYaml } from "../testing_cluster.ts";
import { runCli } from "./main.ts";
import { LOG_TAIL_BYTES, tailText } from "./sandbox_output.ts";

/** Runs the CLI in-process with a raw writer, as `peloton` has on stdout; everything it printed, as bytes. */
async function rawCli(
  url: string,
  ...argv: string[]
): Promise<{ code: number; bytes: Uint8Array; err: string }> {
  const chunks: Uint8Array[] = [], err: string[] = [];
  const code = await runCli([...argv, "-m", url], {
    out: (line) => chunks.push(new TextEncoder().encode(`${line}\n`)),
    err: (line) => err.push(line),
    write: (bytes) => Promise.resolve(void chunks.push(bytes.slice())),
    env: () => undefined,
  });
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  chunks.reduce((at, c) => (bytes.set(c, at), at + c.length), 0);
  return { code, bytes, err: err.join("\n") };
}

/** Creates a one-task batch job running `command` and waits for it to succeed; its id. */
async function finishedJob(url: string, dir: string, name: string, command: string): Promise<string> {
  await Deno.writeTextFile(`${dir}/${name}.yaml`, batchJobYaml(name, 1, command));
  const job = await createJob(url, `${dir}/${name}.yaml`);
  await waitFor(`job ${name} to succeed`, async () => {
    const r = await cli(url, "task", "get", job, "0", "-j");
    return r.code === 0 && JSON.parse(r.out).result.runtime.state === "SUCCEEDED" || undefined;
  });
  return job;
}

Deno.test({
  name: "sandbox logs through the CLI: raw bytes as they are; with -j, a large file's end, said to be cut",
  sanitizeResources: false,
  async fn(t) {
    await withUp("peloton-sandbox-logs-", async (up, dir) => {
      await t.step("pod logs of a file that is not UTF-8 gives its bytes, byte for byte", async () => {
        const job = await finishedJob(up.url, dir, "not-utf8", 'printf "caf\\351 \\377\\376 \\303 end"');
        const expected = new Uint8Array(
          [..."caf"].map((c) => c.charCodeAt(0)).concat(
            [0xe9, 0x20, 0xff, 0xfe, 0x20, 0xc3, 0x20, 0x65, 0x6e, 0x64],
          ),
        );
        for (const cmd of [["pod", "logs", `${job}-0`], ["task", "logs", job, "0"]]) {
          const r = await rawCli(up.url, ...cmd);
          assert.equal(r.code, 0, r.err);
          assert.deepEqual([...r.bytes], [...expected], `${cmd.join(" ")}: the bytes as on disk`);
        }
        // With -j, text: each byte that is not UTF-8 shows as U+FFFD, and the file is whole.
        const json = await cli(up.url, "pod", "logs", `${job}-0`, "-j");
        assert.equal(json.code, 0, json.err);
        assert.deepEqual(JSON.parse(json.out), {
          podName: `${job}-0`,
          file: "stdout",
          data: "caf\uFFFD \uFFFD\uFFFD \uFFFD end",
          sizeBytes: expected.length,
          truncated: false,
        });
      });

      await t.step("task logs -j of a file larger than the bound: its end, the cut said", async () => {
        // 600,000 "é" (2 bytes each) then a last line: 1,200,005 bytes, cut inside an "é".
        const job = await finishedJob(
          up.url,
          dir,
          "large",
          'yes "$(printf "\\303\\251")" | head -n 600000 | tr -d "\\n"; printf "\\nEND\\n"',
        );
        const sizeBytes = 600_000 * 2 + 5;
        const r = await cli(up.url, "task", "logs", job, "0", "-j");
        assert.equal(r.code, 0, r.err);
        const out = JSON.parse(r.out);
        // The cut fell on the second byte of an "é": that byte is dropped, not shown as U+FFFD.
        const offsetBytes = sizeBytes - LOG_TAIL_BYTES + 1;
        assert.deepEqual(
          { ...out, data: undefined },
          { taskId: `${job}-0-1`, file: "stdout", data: undefined, sizeBytes, truncated: true, offsetBytes },
        );
        assert.equal(out.data, "é".repeat((sizeBytes - offsetBytes - 5) / 2) + "\nEND\n");
        const pod = JSON.parse((await cli(up.url, "pod", "logs", `${job}-0`, "-j")).out);
        assert.deepEqual([pod.podName, pod.truncated, pod.sizeBytes, pod.data], [
          `${job}-0`,
          true,
          sizeBytes,
          out.data,
        ]);
        // The raw output still has the whole file.
        const raw = await rawCli(up.url, "task", "logs", job, "0");
        assert.equal(raw.bytes.length, sizeBytes);
      });
    });
  },
});

Deno.test("a tail's text: a character the cut split is dropped whole; other bad bytes become U+FFFD", () => {
  const bytes = new Uint8Array([0xa9, 0x61, 0xff, 0xe2, 0x82]);
  assert.deepEqual(tailText(bytes, 7), { text: "a\uFFFD\uFFFD", offsetBytes: 8 });
  // Not cut: the first byte is the file's, shown as it is.
  assert.deepEqual(tailText(bytes, 0), { text: "\uFFFDa\uFFFD\uFFFD", offsetBytes: 0 });
  assert.deepEqual(tailText(new Uint8Array([0x80, 0x80, 0x80, 0x80]), 1), { text: "\uFFFD", offsetBytes: 4 });
});
