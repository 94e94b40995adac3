/** Binding a server's HTTP port, with an error that says which address could not be had. */

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

/** `Deno.serve` on `host:port` (0: any free port), throwing `ListenError` when it cannot bind. */
export function listen(
  host: string,
  port: number,
  handler: (req: Request) => Response | Promise<Response>,
): Deno.HttpServer<Deno.NetAddr> {
  try {
    return Deno.serve({ hostname: host, port, onListen() {} }, handler);
  } catch (e) {
    // Whatever stops the bind (the port taken, an address not this machine's or no address at all, no
    // permission) is the operator's to fix, and said as such.
    throw new ListenError(host, port, e as Error);
  }
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
