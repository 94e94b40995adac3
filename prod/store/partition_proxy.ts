/** A TCP proxy for tests that cuts its connections off as a network partition does, with no reset to notice. */

interface Link {
  conns: Deno.Conn[];
  /** Bytes no longer pass, for good: what either side sends is read and dropped. */
  dead: boolean;
}

/**
 * Passes bytes between clients and a server until `partition()`: from then on every connection open at that
 * moment is a black hole for good, and so is every connection made until `heal()`. Connections made after
 * `heal()` pass bytes again. `cutAfter` cuts one connection off just after a given statement reaches the
 * server, so that the statement runs but its answer never comes back.
 */
export class PartitionProxy {
  readonly #listener: Deno.TcpListener;
  #partitioned = false;
  #closed = false;
  readonly #links: Link[] = [];
  readonly #pumps: Promise<void>[] = [];
  readonly #accepting: Promise<void>;
  #cut?: { pattern: Uint8Array; done: () => void };

  constructor(readonly target: { host: string; port: number }) {
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.#accepting = this.#accept();
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

  /**
   * The next chunk a client sends that contains `text` (matched byte for byte) reaches the server, and then
   * that connection is cut off. Resolves once it was.
   */
  cutAfter(text: string): Promise<void> {
    const cut = Promise.withResolvers<void>();
    this.#cut = { pattern: new TextEncoder().encode(text), done: cut.resolve };
    return cut.promise;
  }

  /** Closes the listener and every connection; safe to call twice. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#listener.close();
    }
    await this.#accepting;
    for (const link of this.#links) for (const c of link.conns) closeQuietly(c);
    await Promise.all(this.#pumps);
  }

  async #accept(): Promise<void> {
    try {
      for await (const client of this.#listener) {
        const link: Link = { conns: [client], dead: this.#partitioned };
        this.#links.push(link);
        this.#pumps.push(this.#join(link, client));
      }
    } catch {
      // The listener was closed.
    }
  }

  async #join(link: Link, client: Deno.Conn): Promise<void> {
    if (link.dead) return await this.#pump(client, undefined, link, false);
    let server: Deno.Conn;
    try {
      server = await Deno.connect({ hostname: this.target.host, port: this.target.port });
    } catch {
      // The server cannot be reached: the client sees its connection closed.
      closeQuietly(client);
      return;
    }
    link.conns.push(server);
    if (this.#closed) closeQuietly(server);
    await Promise.all([this.#pump(client, server, link, true), this.#pump(server, client, link, false)]);
  }

  async #pump(from: Deno.Conn, to: Deno.Conn | undefined, link: Link, fromClient: boolean): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        if (link.dead || !to) continue;
        const chunk = buf.subarray(0, n);
        let off = 0;
        while (off < n) off += await to.write(chunk.subarray(off));
        const cut = this.#cut;
        if (fromClient && cut && contains(chunk, cut.pattern)) {
          this.#cut = undefined;
          link.dead = true;
          cut.done();
        }
      }
    } catch {
      // Closed.
    }
    if (!link.dead) await to?.closeWrite().catch(() => {});
  }
}

function closeQuietly(c: Deno.Conn): void {
  try {
    c.close();
  } catch {
    // Already closed.
  }
}

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}
