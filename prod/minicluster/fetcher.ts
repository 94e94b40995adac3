/**
 * The minicluster's Mesos fetcher: a task's `command.uris` (Peloton's `CommandInfo.URI`) are downloaded into
 * its sandbox before it starts. http(s) and file URIs and absolute paths; an `executable` file is made
 * executable and not extracted; otherwise an archive (tar with any compression tar reads, zip, or a single
 * gzipped file) is extracted into the sandbox unless `extract` is false, as Mesos's fetcher does. A
 * download that sends nothing for `FETCH_STALL_MS` fails (Mesos's `--fetcher_stall_timeout`). `cache` is not
 * modelled: every run fetches again.
 */
import type { FetchUri } from "../../core/ports/host_backend.ts";

/** Mesos's default `--fetcher_stall_timeout`. */
export const FETCH_STALL_MS = 60_000;

const TAR = /\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz)$/;

/**
 * Fetches every URI into `sandbox`; throws naming the first URI that failed and why (without its
 * credentials or query string, which may hold secrets). `signal` aborts it (the task was killed).
 */
export async function fetchUris(
  uris: readonly FetchUri[],
  sandbox: string,
  signal?: AbortSignal,
): Promise<void> {
  for (const uri of uris) {
    try {
      await fetchOne(uri, sandbox, signal);
    } catch (e) {
      throw new Error(
        `Failed to fetch ${redacted(uri.value)}: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }
}

async function fetchOne(uri: FetchUri, sandbox: string, signal?: AbortSignal): Promise<void> {
  const isUrl = /^[a-z][a-z0-9+.-]*:\/\//i.test(uri.value);
  const name = uri.outputFile ??
    (isUrl ? urlName(uri.value) : uri.value.slice(uri.value.lastIndexOf("/") + 1));
  if (
    !name || name.startsWith("/") || name.split("/").some((seg) => seg === "" || seg === "." || seg === "..")
  ) {
    throw new Error(
      `cannot place "${name}" in the sandbox: ${uri.outputFile === undefined ? "give outputFile, " : ""}` +
        "a relative path without . or .. segments",
    );
  }
  const path = `${sandbox}/${name}`;
  if (name.includes("/")) await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  if (/^https?:\/\//i.test(uri.value)) await download(uri.value, path, signal);
  else if (uri.value.startsWith("file://")) await Deno.copyFile(new URL(uri.value), path);
  else if (uri.value.startsWith("/")) await Deno.copyFile(uri.value, path);
  else throw new Error("only http, https and file URIs and absolute paths can be fetched here");
  if (uri.executable) {
    await Deno.chmod(path, 0o755);
    return;
  }
  if (uri.extract === false) return;
  const dir = path.slice(0, path.lastIndexOf("/"));
  const file = `./${name.slice(name.lastIndexOf("/") + 1)}`;
  if (TAR.test(name)) await run("tar", ["-xf", file], dir);
  else if (name.endsWith(".zip")) await run("unzip", ["-oq", file], dir);
  else if (name.endsWith(".gz")) await run("gzip", ["-df", file], dir);
}

/** Downloads to `path`; fails on an HTTP error, on `signal`, or when no data comes for `FETCH_STALL_MS`. */
async function download(url: string, path: string, signal?: AbortSignal): Promise<void> {
  const stall = new AbortController();
  const stalled = () => stall.abort(new Error(`no data for ${FETCH_STALL_MS / 1000} s`));
  let timer = setTimeout(stalled, FETCH_STALL_MS);
  const abort = signal ? AbortSignal.any([signal, stall.signal]) : stall.signal;
  try {
    const res = await fetch(url, { signal: abort });
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new Error(`HTTP ${res.status} ${res.statusText}`.trim());
    }
    const file = await Deno.open(path, { write: true, create: true, truncate: true });
    const progress = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        clearTimeout(timer);
        timer = setTimeout(stalled, FETCH_STALL_MS);
        out.enqueue(chunk);
      },
    });
    await res.body.pipeThrough(progress).pipeTo(file.writable, { signal: abort });
  } catch (e) {
    throw abort.aborted && abort.reason instanceof Error ? abort.reason : e;
  } finally {
    clearTimeout(timer);
  }
}

/** A URL's last path segment, decoded, without its query or fragment. */
function urlName(url: string): string {
  const path = new URL(url).pathname;
  return decodeURIComponent(path.slice(path.lastIndexOf("/") + 1));
}

/** A URI as error messages show it: no user info, query or fragment. */
function redacted(uri: string): string {
  return uri.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, "$1").replace(/[?#].*$/, "");
}

async function run(program: string, args: string[], cwd: string): Promise<void> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(program, { args, cwd, stdin: "null", stdout: "null", stderr: "piped" })
      .output();
  } catch (e) {
    throw new Error(`cannot extract it: ${program} did not start (${e instanceof Error ? e.message : e})`);
  }
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim().split("\n")[0];
    throw new Error(`cannot extract it: ${program} exited with ${out.code}${why ? `: ${why}` : ""}`);
  }
}
