/** The sandbox file endpoint's answers to paths it cannot use: 400, not an exception. */
import assert from "node:assert/strict";
import { type SandboxBackend, sandboxFile } from "./backends.ts";

/** A backend with one task's stdout; only `logs` is used by the endpoint. */
const backend = {
  logs: (taskId: string, file: string) =>
    Promise.resolve(taskId === "t-0-1" && file === "stdout" ? "hello\n" : undefined),
} as unknown as SandboxBackend;

const get = async (path: string) => {
  const res = await sandboxFile(backend, new URL(`http://x${path}`));
  return [res.status, await res.text()];
};

Deno.test("sandbox files: a path that is not percent-encoded UTF-8 is 400, naming the problem", async () => {
  assert.deepEqual(await get("/sandbox/%E0%A4%A/stdout"), [
    400,
    "the sandbox path is not valid percent-encoded UTF-8\n",
  ]);
  assert.deepEqual(await get("/sandbox/t-0-1/%FF"), [
    400,
    "the sandbox path is not valid percent-encoded UTF-8\n",
  ]);
  assert.deepEqual(await get("/sandbox/t-0-1/stdout"), [200, "hello\n"]);
  assert.deepEqual(await get("/sandbox/t%2D0%2D1/stdout"), [200, "hello\n"], "escapes are decoded");
  assert.deepEqual(await get("/sandbox/t-0-2/stdout"), [404, "no sandbox for task t-0-2\n"]);
  assert.deepEqual(await get("/sandbox/t-0-1/other"), [400, "file must be stdout or stderr\n"]);
});
