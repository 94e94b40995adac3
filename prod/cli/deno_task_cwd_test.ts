/**
 * Run through `deno task peloton` (the README's alias), which starts it in the folder of deno.json, the CLI
 * reads relative paths from the caller's folder ($INIT_CWD), as a command run there would.
 */
import assert from "node:assert/strict";
import { ROOT } from "../testing.ts";
import { callerDir } from "./main.ts";

/** `deno task -q [--config deno.json] peloton ARGV` run in `cwd`, with no $INIT_CWD of its own to pass on. */
async function denoTask(cwd: string, config: boolean, ...argv: string[]) {
  const env = Deno.env.toObject();
  delete env.INIT_CWD;
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", ...(config ? ["--config", `${ROOT}/deno.json`] : []), "peloton", ...argv],
    cwd,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b).trimEnd();
  return { code: r.code, out: text(r.stdout), err: text(r.stderr) };
}

Deno.test("deno task peloton reads a relative file argument from the caller's folder", async () => {
  // Within the project, where deno finds deno.json itself (the README's example files).
  const inside = await denoTask(`${ROOT}/scenarios/jobs`, false, "job", "validate", "testjob.yaml");
  assert.deepEqual([inside.code, inside.err], [0, ""]);
  assert.match(inside.out, /^testjob\.yaml: valid BATCH job /);
  // Outside it, with --config: files of the caller's folder, and of folders under it.
  const dir = await Deno.makeTempDir({ prefix: "fixcli-deno-task-" });
  try {
    await Deno.mkdir(`${dir}/sub`);
    await Deno.copyFile(`${ROOT}/scenarios/jobs/testjob.yaml`, `${dir}/mine.yaml`);
    await Deno.copyFile(`${ROOT}/scenarios/jobs/default_respool.yaml`, `${dir}/sub/pool.yaml`);
    const job = await denoTask(dir, true, "job", "validate", "mine.yaml");
    assert.deepEqual([job.code, job.err], [0, ""]);
    const pool = await denoTask(dir, true, "respool", "validate", "sub/pool.yaml");
    assert.deepEqual([pool.code, pool.err], [0, ""]);
    assert.match(pool.out, /^sub\/pool\.yaml: /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the caller's folder is $INIT_CWD only when the CLI starts in the project's root, as deno task starts it", () => {
  const root = ROOT.replace(/\/$/, "");
  assert.equal(callerDir(root, "/home/me/jobs"), "/home/me/jobs");
  assert.equal(callerDir(`${root}/`, "/home/me/jobs"), "/home/me/jobs");
  // Run some other way (`deno run` in another folder, $INIT_CWD left over from an outer npm or deno task).
  assert.equal(callerDir("/home/me/elsewhere", "/home/me/jobs"), undefined);
  assert.equal(callerDir(root, undefined), undefined);
  assert.equal(callerDir(root, ""), undefined);
  assert.equal(callerDir(root, root), undefined);
});
