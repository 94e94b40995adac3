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
