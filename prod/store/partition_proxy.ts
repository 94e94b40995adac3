/** A TCP proxy for tests that can cut its connections off as a network partition does. */

/**
 * Passes bytes between clients and a server until `partition()`: from then on every connection open
 * at that moment is a black hole for good (what either side sends is read and dropped), and so is every
 * connection made until `heal()`. Connections made after `heal()` pass bytes again.
 */
export class PartitionProxy {
  readonly #listener: Deno.TcpListener;
  #partitioned = false;
  readonly #links: { conns: Deno.Conn[]; dead: boolean }[] = [];
  readonly #done: Promise<void>;

  constructor(readonly target: { host: string; port: number }) {
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.#done = this.#accept();
  }

  get port(): number {
    return this.#listener.addr.port;
  }

  partition(): void {
    this.#partitioned = true;
    for (const link of this.#links) link.dead = true;
  }

  heal(): void {
    this.#partitioned = false;
  }

  /** Closes the listener and every connection; safe to call twice. */
  async close(): Promise<void> {
    try {
      this.#listener.close();
    } catch { /* closed before */ }
    for (const link of this.#links) {
      for (const c of link.conns) {
        try {
          c.close();
        } catch { /* already closed */ }
      }
    }
    await this.#done;
  }

  async #accept(): Promise<void> {
    const pumps: Promise<void>[] = [];
    try {
      for await (const client of this.#listener) {
        const link = { conns: [client], dead: this.#partitioned };
        this.#links.push(link);
        if (link.dead) {
          pumps.push(pump(client, undefined, link));
          continue;
        }
        const server = await Deno.connect({ hostname: this.target.host, port: this.target.port });
        link.conns.push(server);
        pumps.push(pump(client, server, link), pump(server, client, link));
      }
    } catch { /* the listener closed */ }
    await Promise.all(pumps);
  }
}

async function pump(from: Deno.Conn, to: Deno.Conn | undefined, link: { dead: boolean }): Promise<void> {
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      if (link.dead || !to) continue;
      let off = 0;
      while (off < n) off += await to.write(buf.subarray(off, n));
    }
  } catch { /* closed */ }
  if (!link.dead) await to?.closeWrite().catch(() => {});
}
