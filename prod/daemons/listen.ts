/** Binding a server's HTTP port, with an error that says which address could not be had. */
import { jsonLogger, type Logger } from "../log.ts";

/** The port could not be bound: taken, privileged, or on an address this machine does not have. */
export class ListenError extends Error {
  override readonly name = "ListenError";

  constructor(readonly host: string, readonly port: number, cause: Error) {
    super(
      cause instanceof Deno.errors.AddrInUse
        ? `port ${port} on ${host} is already in use`
        : `cannot listen on ${host}:${port}: ${cause.message}`,
      { cause },
    );
  }

  get inUse(): boolean {
    return this.cause instanceof Deno.errors.AddrInUse;
  }
}

/** What `listen` logs through: a `Logger`'s warn and error. */
export type ListenLog = Pick<Logger, "warn" | "error">;

/** A server `listen` started: where it listens, and its graceful shutdown. */
export interface HttpListener {
  readonly addr: Deno.NetAddr;
  /** Stops taking connections and waits for those open to finish; safe to call twice. */
  shutdown(): Promise<void>;
}

/** A listener whose accept failed is bound again after this long at first, doubling up to the cap. */
const REBIND_FIRST_MS = 100;
const REBIND_MAX_MS = 2_000;
/** Failures to accept after the first are logged once per this long, with how many there were. */
const ACCEPT_LOG_EVERY_MS = 60_000;

/**
 * `Deno.serve` on `host:port` (0: any free port), throwing `ListenError` when it cannot bind. A handler that
 * throws is logged and answered 500 (not a stack trace on stderr).
 *
 * An error accepting a connection (the process out of file descriptors, EMFILE, under a burst of
 * connections) ends `Deno.serve`'s accept loop: its `finished` rejects, which, unhandled, would end the
 * process and leave its tasks running unsupervised. Here it is logged (once a minute at most, with how many
 * there were), the dead server is shut down (closing the connections it held, whose requests it no longer
 * reads, which frees their descriptors) and the port bound again after a backoff, as Go's `http.Server`
 * backs off on an accept error and goes on serving.
 */
export function listen(
  host: string,
  port: number,
  handler: (req: Request) => Response | Promise<Response>,
  log: ListenLog = jsonLogger({}),
): HttpListener {
  const serve = (at: number) =>
    Deno.serve({
      hostname: host,
      port: at,
      onListen() {},
      onError(e) {
        log.error("HTTP handler failed", { error: describe(e) });
        return new Response(`internal error: ${describe(e)}\n`, { status: 500 });
      },
    }, handler);
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = serve(port);
  } catch (e) {
    // Whatever stops the bind (the port taken, an address not this machine's or no address at all, no
    // permission) is the operator's to fix, and said as such.
    throw new ListenError(host, port, e as Error);
  }
  const addr = server.addr;
  let stopped = false;
  let wake = () => {};
  // Failures since the last line about them; whether the next listen again is to be told of too.
  let failures = 0, loggedMs = -Infinity, told = false;
  const failed = (error: unknown, rebindInMs: number) => {
    failures++;
    const now = performance.now();
    if (now - loggedMs < ACCEPT_LOG_EVERY_MS) return;
    log.error("cannot accept connections; listening again after a pause", {
      address: `${host}:${addr.port}`,
      error: describe(error),
      failures,
      rebindInMs,
      ...(/os error 24\b|Too many open files/.test(describe(error))
        ? { hint: "out of file descriptors: raise the open files limit (ulimit -n, systemd's LimitNOFILE)" }
        : {}),
    });
    loggedMs = now;
    failures = 0;
    told = true;
  };
  const watch = (s: Deno.HttpServer<Deno.NetAddr>) => {
    s.finished.catch(async (e) => {
      if (stopped) return;
      // Its accept loop is over: the requests on its connections will not be read. Shut down, it closes
      // them, which gives their descriptors back; not waited for, as its stop may wait on those requests.
      s.shutdown().catch(() => {});
      for (let delayMs = REBIND_FIRST_MS;; delayMs = Math.min(REBIND_MAX_MS, delayMs * 2)) {
        failed(e, delayMs);
        await new Promise<void>((r) => {
          const timer = setTimeout(r, delayMs);
          wake = () => {
            clearTimeout(timer);
            r();
          };
        });
        if (stopped) return;
        try {
          server = serve(addr.port);
        } catch (again) {
          e = again;
          continue;
        }
        if (told) log.warn("listening again", { address: `${host}:${addr.port}` });
        told = false;
        watch(server);
        return;
      }
    });
  };
  watch(server);
  let shut: Promise<void> | undefined;
  return {
    addr,
    shutdown() {
      stopped = true;
      wake();
      return shut ??= server.shutdown();
    },
  };
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** This process's open files limits (`/proc/self/limits`), or undefined where it cannot be read. */
export function openFilesLimit(): { soft: number; hard: number } | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(
      Deno.readTextFileSync("/proc/self/limits"),
    );
    if (!m) return undefined;
    const n = (v: string) => v === "unlimited" ? Infinity : Number(v);
    return { soft: n(m[1]), hard: n(m[2]) };
  } catch {
    return undefined;
  }
}

/** Below this many open files a scheduler under load runs out (each connection, task and file takes one). */
export const FEW_OPEN_FILES = 1024;

/**
 * Raises this process's soft open files limit to its hard limit (`prlimit`, where there is one), as a Go
 * server's runtime does at start: each API connection, task and store connection takes descriptors, and the
 * soft limit is often 1024 while the hard one is far higher. Tasks started after inherit it. Anything in the
 * way (no `prlimit`, no `/proc`) leaves the limit as it was. A limit still below `FEW_OPEN_FILES` is warned
 * of. The limits after, or undefined.
 */
export async function raiseOpenFilesLimit(
  log?: Pick<Logger, "warn">,
): Promise<{ soft: number; hard: number } | undefined> {
  const before = openFilesLimit();
  if (before && before.soft < before.hard && Number.isFinite(before.hard)) {
    try {
      await new Deno.Command("prlimit", {
        args: ["--pid", String(Deno.pid), `--nofile=${before.hard}:`],
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).output();
    } catch { /* no prlimit: the limit stays */ }
  }
  const after = openFilesLimit();
  if (after && after.soft < FEW_OPEN_FILES) {
    log?.warn("few open files allowed: a burst of connections or many tasks may run out", {
      openFilesLimit: after.soft,
      hardLimit: after.hard,
      hint: `raise it to ${FEW_OPEN_FILES} or more (ulimit -n, systemd's LimitNOFILE)`,
    });
  }
  return after;
}

/**
 * Ports the Fetch standard's "bad port" list blocks: a browser, and Deno's `fetch` (which the CLI and the
 * daemons call each other with), refuse to connect to them, so a server there could not be used.
 */
const BLOCKED_PORTS = new Set([
  1,
  7,
  9,
  11,
  13,
  15,
  17,
  19,
  20,
  21,
  22,
  23,
  25,
  37,
  42,
  43,
  53,
  69,
  77,
  79,
  87,
  95,
  101,
  102,
  103,
  104,
  109,
  110,
  111,
  113,
  115,
  117,
  119,
  123,
  135,
  137,
  139,
  143,
  161,
  179,
  389,
  427,
  465,
  512,
  513,
  514,
  515,
  526,
  530,
  531,
  532,
  540,
  548,
  554,
  556,
  563,
  587,
  601,
  636,
  989,
  990,
  993,
  995,
  1719,
  1720,
  1723,
  2049,
  3659,
  4045,
  4190,
  5060,
  5061,
  6000,
  6566,
  6665,
  6666,
  6667,
  6668,
  6669,
  6679,
  6697,
  10080,
]);

/** Why `--port` cannot be listened on, or undefined: a whole number 0-65535 (0: any free port), not blocked. */
export function portProblem(raw: unknown): string | undefined {
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return `--port: got "${raw}", expected 0-65535`;
  if (BLOCKED_PORTS.has(port)) {
    return `--port: got ${port}, a port browsers and fetch refuse to connect to (the Fetch standard's bad ` +
      "ports): the CLI, the web UI and the other daemons could not reach it; pick another";
  }
  return undefined;
}
