/** A database that goes away and comes back, for tests of the store and daemons through an outage. */

function closeQuietly(c: Deno.Conn): void {
  try {
    c.close();
  } catch {
    // closed already (by the pipe that ended)
  }
}

/** A TCP forwarder to the real server that can go down (refusing connections, closing its own) and up. */
export class Outage {
  #listener?: Deno.TcpListener;
  readonly #conns = new Set<Deno.Conn>();
  port = 0;

  constructor(readonly target: { host: string; port: number }) {
    this.up();
  }

  up(): void {
    if (this.#listener) return;
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: this.port });
    this.port = this.#listener.addr.port;
    this.#accept(this.#listener);
  }

  down(): void {
    this.#listener?.close();
    this.#listener = undefined;
    for (const c of this.#conns) closeQuietly(c);
    this.#conns.clear();
  }

  async #accept(listener: Deno.TcpListener): Promise<void> {
    try {
      for await (const client of listener) {
        const server = await Deno.connect({ hostname: this.target.host, port: this.target.port });
        this.#conns.add(client).add(server);
        const pipe = (from: Deno.Conn, to: Deno.Conn) =>
          from.readable.pipeTo(to.writable).catch(() => {}).finally(() => {
            for (const c of [from, to]) {
              if (this.#conns.delete(c)) closeQuietly(c);
            }
          });
        pipe(client, server);
        pipe(server, client);
      }
    } catch {
      // closed
    }
  }
}
