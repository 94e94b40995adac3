/** Test harness for production mode: `peloton up` as a real process, and the CLI against it. */
import assert from "node:assert/strict";
import { runCli } from "./cli/main.ts";
import { settlesWithin as settled } from "./settle.ts";
import { EXTENSIONS_HEADER } from "./proto_extensions.ts";

export const ROOT = new URL("..", import.meta.url).pathname;

export interface UpProcess {
  url: string;
  child: Deno.ChildProcess;
  /** Everything the server printed so far. */
  output: () => string;
  /** Stops with SIGINT (graceful) and waits for the exit. */
  stop(): Promise<Deno.CommandStatus>;
}

/** How long a test waits for a process to exit once asked to, before it kills it and fails. */
const STOP_WITHIN_MS = 30_000;

/** Starts a `peloton` subcommand as a real process and waits until it prints a URL matching `ready`. */
export async function startPeloton(args: string[], ready: RegExp): Promise<UpProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}/prod/cli/main.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) out += decoder.decode(chunk, { stream: true });
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const deadline = Date.now() + 30_000;
  let url: string | undefined;
  while (!url) {
    const m = ready.exec(out);
    if (m) url = m[1];
    else if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await child.status;
      await pumps;
      throw new Error(`peloton ${args[0]} did not start:\n${out}`);
    } else await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    child,
    output: () => out,
    async stop() {
      try {
        child.kill("SIGINT");
      } catch { /* already exited */ }
      // A graceful stop that never ends is a failure to report, not a test run that hangs.
      const stopped = await settled(child.status, STOP_WITHIN_MS);
      if (!stopped) child.kill("SIGKILL");
      const status = await child.status;
      await pumps;
      if (!stopped) {
        throw new Error(
          `peloton ${args[0]} did not stop within ${STOP_WITHIN_MS} ms of SIGINT; killed:\n${out}`,
        );
      }
      return status;
    },
  };
}

/** Runs a `peloton` subcommand as a real process to its exit (one that should fail fast, or end by itself). */
export async function runPeloton(args: string[]): Promise<CliResult> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}/prod/cli/main.ts`, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b).trimEnd();
  return { code: r.code, out: text(r.stdout), err: text(r.stderr) };
}

/** Starts `peloton up --port 0` on a data dir and waits for its API URL. */
export function startUp(dataDir: string, extra: string[] = []): Promise<UpProcess> {
  return startPeloton(
    ["up", "--port", "0", "--data-dir", dataDir, ...extra],
    /API at (http:\/\/[^\s]+)\/api\/v1/,
  );
}

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

/** Runs a CLI command in this process against `url`, capturing its output. */
export async function cli(url: string, ...argv: string[]): Promise<CliResult> {
  const out: string[] = [], err: string[] = [];
  const code = await runCli([...argv, "-m", url], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env: () => undefined,
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/**
 * Headers of an API call as this project's CLI and web UI send them: with `Peloton-Extensions: true`, so the
 * reply keeps the fields Peloton's protos do not define (prod/proto_extensions.ts). `extra` may override.
 */
export function apiHeaders(procedure: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    "content-type": "application/json",
    "rpc-procedure": procedure,
    [EXTENSIONS_HEADER]: "true",
    ...extra,
  };
}

/**
 * `POST url/api/v1` of `procedure` with `body` (JSON-encoded unless text): with the extension fields unless
 * `extensions` is false, when the reply is what a plain Peloton client gets.
 */
export function apiCall(
  url: string,
  procedure: string,
  body: unknown,
  opts: { extensions?: boolean; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers = apiHeaders(procedure, opts.headers);
  if (opts.extensions === false) delete headers[EXTENSIONS_HEADER];
  return fetch(`${url}/api/v1`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** Creates Peloton's default pool, /DefaultResPool, through the CLI against `url`; fails if it cannot. */
export async function createDefaultPool(url: string, ...extra: string[]): Promise<void> {
  const pool = await cli(
    url,
    "respool",
    "create",
    "/DefaultResPool",
    `${ROOT}/scenarios/jobs/default_respool.yaml`,
    ...extra,
  );
  assert.equal(pool.code, 0, pool.err);
}

/** Creates a job from `file` in `pool` (`job create`), which must succeed; its id. */
export async function createJob(url: string, file: string, pool = "/DefaultResPool"): Promise<string> {
  const r = await cli(url, "job", "create", pool, file);
  if (r.code !== 0) throw new Error(`job create ${file} exited ${r.code}: ${r.err}`);
  const id = /^Job (\S+) created$/m.exec(r.out);
  if (!id) throw new Error(`job create ${file} said no job id: ${r.out}`);
  return id[1];
}

/**
 * Runs `fn` against a `peloton up` (with `extra` arguments) on a fresh data dir, with /DefaultResPool created:
 * the server's output is printed if `fn` fails, and the server is stopped and the dir removed either way.
 */
export async function withUp(
  prefix: string,
  fn: (up: UpProcess, dataDir: string) => Promise<void>,
  extra: string[] = [],
): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix });
  try {
    await upSession(dataDir, extra, async (up) => {
      await createDefaultPool(up.url);
      await fn(up, dataDir);
    });
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
}

/**
 * `peloton up ...extra` on `dataDir` through `fn`, then stopped (the data dir kept, for a restart on it); its
 * output is printed if `fn` fails.
 */
export async function upSession(
  dataDir: string,
  extra: string[],
  fn: (up: UpProcess) => Promise<void>,
): Promise<void> {
  const up = await startUp(dataDir, extra);
  try {
    await fn(up);
  } catch (err) {
    console.error(up.output());
    throw err;
  } finally {
    await up.stop();
  }
}

/** Peloton's integration-test spec files (stateless jobs and their updates). */
export const STATELESS_SPECS = `${ROOT}/core/model/testdata/peloton/tests/integration/test_configs`;

/**
 * Creates a stateless job in /DefaultResPool from one of `STATELESS_SPECS`, its pods starting `batch` at a
 * time (0: all at once); its id and entity version, or a failed assertion.
 */
export async function createStatelessJob(
  url: string,
  spec = "test_stateless_job_spec.yaml",
  batch = "0",
): Promise<{ job: string; version: string }> {
  const r = await cli(
    url,
    "job",
    "stateless",
    "create",
    "/DefaultResPool",
    `${STATELESS_SPECS}/${spec}`,
    batch,
  );
  assert.equal(r.code, 0, r.err);
  const [, job, version] = /^Job (\S+) created, version (\S+)$/.exec(r.out)!;
  return { job, version };
}

/** A CLI command left running in its own process (one that streams, such as `peloton watch`). */
export interface CliProcess {
  child: Deno.ChildProcess;
  /** The stdout lines so far, blank ones left out. */
  lines(): string[];
  /** Everything on stderr so far. */
  err(): string;
  /** The first whole stdout line matching `re` (its first group, if it has one), once it comes. */
  waitLine(re: RegExp, timeoutMs?: number): Promise<string>;
  /** Waits for the exit (and the last output); the exit code. Killed, and an error, after 30 s. */
  exit(): Promise<number>;
  /** Kills it if it still runs (SIGKILL) and waits for the exit. */
  stop(): Promise<void>;
}

/** Reads a spawned process's piped stdout and stderr as text as they come; `pumps` ends with both streams. */
export function pumpOutput(child: Deno.ChildProcess): { out(): string; err(): string; pumps: Promise<void> } {
  let out = "", err = "";
  const read = async (s: ReadableStream<Uint8Array>, add: (t: string) => void) => {
    for await (const t of s.pipeThrough(new TextDecoderStream())) add(t);
  };
  const pumps = Promise.all([read(child.stdout, (t) => out += t), read(child.stderr, (t) => err += t)]);
  return { out: () => out, err: () => err, pumps: pumps.then(() => {}) };
}

/** Starts `peloton ...argv -m url` as a real process, reading its output as it comes. */
export function spawnCli(url: string, ...argv: string[]): CliProcess {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}/prod/cli/main.ts`, ...argv, "-m", url],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const { out: outText, err: errText, pumps } = pumpOutput(child);
  const exit = async () => {
    if (!await settled(child.status, STOP_WITHIN_MS)) {
      child.kill("SIGKILL");
      await child.status;
      await pumps;
      throw new Error(
        `peloton ${argv.join(" ")} did not exit within ${STOP_WITHIN_MS} ms; killed. ` +
          `stdout: ${outText()}; stderr: ${errText()}`,
      );
    }
    const { code } = await child.status;
    await pumps;
    return code;
  };
  return {
    child,
    lines: () => outText().split("\n").filter(Boolean),
    err: errText,
    waitLine: (re, timeoutMs = 20_000) =>
      waitFor(`a line matching ${re}`, () => {
        const m = outText().split("\n").slice(0, -1).map((l) => re.exec(l)).find((m) => m);
        return Promise.resolve(m ? m[1] ?? m[0] : undefined);
      }, timeoutMs).catch((e) => {
        throw new Error(`${(e as Error).message}; stdout: ${outText()}; stderr: ${errText()}`);
      }),
    exit,
    async stop() {
      try {
        child.kill("SIGKILL");
      } catch { /* already exited */ }
      await exit();
    },
  };
}

/** Polls `check` until it returns a value or the timeout passes. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until `job status` reports one of the given states; returns the final state. */
export function waitForJobState(
  url: string,
  jobId: string,
  states: string[],
  timeoutMs = 30_000,
): Promise<string> {
  return waitFor(`job ${jobId} to reach ${states.join("/")}`, async () => {
    const r = await cli(url, "job", "status", jobId, "-j");
    const state = r.code === 0 ? JSON.parse(r.out).state : undefined;
    return states.includes(state) ? state : undefined;
  }, timeoutMs);
}
