/**
 * Run through `deno task peloton` (the README's alias), which starts it in the folder of deno.json, the CLI
 * reads relative paths from the folder `deno task` was run in, as a command run there would.
 */
import assert from "node:assert/strict";
import { ROOT } from "../testing.ts";
import { callerDir } from "./main.ts";

/**
 * `deno task -q [--config CONFIG] peloton ARGV` run in `cwd` (`config`: true for this project's deno.json, or
 * another's path), with no $INIT_CWD of its own to pass on unless `initCwd` gives one.
 */
async function denoTask(cwd: string, config: boolean | string, argv: string[], initCwd?: string) {
  const env = Deno.env.toObject();
  delete env.INIT_CWD;
  if (initCwd !== undefined) env.INIT_CWD = initCwd;
  const path = config === true ? `${ROOT}/deno.json` : config;
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", ...(path ? ["--config", path] : []), "peloton", ...argv],
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
  const inside = await denoTask(`${ROOT}/scenarios/jobs`, false, ["job", "validate", "testjob.yaml"]);
  assert.deepEqual([inside.code, inside.err], [0, ""]);
  assert.match(inside.out, /^testjob\.yaml: valid BATCH job /);
  // Outside it, with --config: files of the caller's folder, and of folders under it.
  const dir = await Deno.makeTempDir({ prefix: "fixcli-deno-task-" });
  try {
    await Deno.mkdir(`${dir}/sub`);
    await Deno.copyFile(`${ROOT}/scenarios/jobs/testjob.yaml`, `${dir}/mine.yaml`);
    await Deno.copyFile(`${ROOT}/scenarios/jobs/default_respool.yaml`, `${dir}/sub/pool.yaml`);
    const job = await denoTask(dir, true, ["job", "validate", "mine.yaml"]);
    assert.deepEqual([job.code, job.err], [0, ""]);
    const pool = await denoTask(dir, true, ["respool", "validate", "sub/pool.yaml"]);
    assert.deepEqual([pool.code, pool.err], [0, ""]);
    assert.match(pool.out, /^sub\/pool\.yaml: /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the caller's folder is deno task's own, and only when the CLI starts in the project's root under deno", () => {
  const root = "/p/peloton";
  const task = (cwd: string) => ({ exe: "/root/.npm/_npx/x/node_modules/deno/deno", cwd });
  assert.equal(callerDir(root, task("/home/me/jobs"), root), "/home/me/jobs");
  assert.equal(callerDir(`${root}/`, task("/home/me/jobs"), root), "/home/me/jobs");
  // Run some other way: `deno run` in another folder, or from a shell (its $INIT_CWD perhaps left over).
  assert.equal(callerDir("/home/me/elsewhere", task("/home/me/jobs"), root), undefined);
  assert.equal(callerDir(root, { exe: "/usr/bin/bash", cwd: "/home/me/jobs" }, root), undefined);
  assert.equal(callerDir(root, undefined, root), undefined);
  assert.equal(callerDir(root, task(""), root), undefined);
  assert.equal(callerDir(root, task(root), root), undefined);
});

Deno.test("an $INIT_CWD left over from an outer npm script is not taken for the caller's folder", async () => {
  // `cd ROOT && deno task peloton ...` inside an npm script run elsewhere: deno task keeps npm's $INIT_CWD.
  const dir = await Deno.makeTempDir({ prefix: "fixcli-init-cwd-" });
  try {
    const r = await denoTask(ROOT, false, ["job", "validate", "scenarios/jobs/testjob.yaml"], dir);
    assert.deepEqual([r.code, r.err], [0, ""]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a project folder whose path has a space or non-ASCII letters is still known for the root", async () => {
  const base = await Deno.makeTempDir({ prefix: "fixcli-root-" });
  const copy = `${base}/pel ü`;
  try {
    await Deno.mkdir(copy);
    // The project's folders linked in: the CLI's import.meta.url is the copy's, percent-encoded.
    for await (const e of Deno.readDir(ROOT)) {
      if (e.name === ".git") continue;
      if (e.name === "deno.json" || e.name === "deno.lock") {
        await Deno.copyFile(`${ROOT}/${e.name}`, `${copy}/${e.name}`);
      } else await Deno.symlink(`${ROOT}/${e.name}`, `${copy}/${e.name}`);
    }
    await Deno.copyFile(`${ROOT}/scenarios/jobs/testjob.yaml`, `${base}/mine.yaml`);
    const r = await denoTask(base, `${copy}/deno.json`, ["job", "validate", "mine.yaml"]);
    assert.deepEqual([r.code, r.err], [0, ""]);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
