/**
 * The minicluster's Mesos fetcher: a task's `command.uris` (Peloton's `CommandInfo.URI`) are downloaded into
 * its sandbox before it starts. http(s) and file URIs and absolute paths; an `executable` file is made
 * executable and not extracted; otherwise an archive (tar with any compression tar reads, zip) is
 * extracted into the sandbox unless `extract` is false, as Mesos's fetcher does. `cache` is not modelled:
 * every run fetches again.
 */
import type { FetchUri } from "../../core/ports/host_backend.ts";

const TAR = /\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz)$/;

/** Fetches every URI into `sandbox`; throws naming the first URI that failed and why. */
export async function fetchUris(uris: readonly FetchUri[], sandbox: string): Promise<void> {
  for (const uri of uris) {
    try {
      await fetchOne(uri, sandbox);
    } catch (e) {
      throw new Error(`Failed to fetch ${uri.value}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}

async function fetchOne(uri: FetchUri, sandbox: string): Promise<void> {
  const name = uri.outputFile ?? basename(uri.value);
  if (!name || name.includes("/") || name === "." || name === "..") {
    throw new Error(`cannot name the file in the sandbox ("${name}"): give outputFile`);
  }
  const path = `${sandbox}/${name}`;
  if (/^https?:\/\//.test(uri.value)) {
    const res = await fetch(uri.value);
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new Error(`HTTP ${res.status} ${res.statusText}`.trim());
    }
    const file = await Deno.open(path, { write: true, create: true, truncate: true });
    await res.body.pipeTo(file.writable);
  } else if (uri.value.startsWith("file://") || uri.value.startsWith("/")) {
    await Deno.copyFile(uri.value.startsWith("file://") ? new URL(uri.value) : uri.value, path);
  } else {
    throw new Error("only http, https and file URIs and absolute paths can be fetched here");
  }
  if (uri.executable) {
    await Deno.chmod(path, 0o755);
    return;
  }
  if (uri.extract === false) return;
  if (TAR.test(name)) await run("tar", ["-xf", name], sandbox);
  else if (name.endsWith(".zip")) await run("unzip", ["-oq", name], sandbox);
}

function basename(value: string): string {
  const path = value.replace(/[?#].*$/, "");
  return decodeURIComponent(path.slice(path.lastIndexOf("/") + 1));
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
