/** In-process transport for daemons sharing one process: asynchronous, ordered, batched delivery. */
import type { Message } from "../core/messages.ts";
import type { Address, Receiver, Transport } from "../core/ports/transport.ts";

/** Deliveries per drain before yielding to I/O, so a busy exchange cannot starve the HTTP server. */
const DRAIN_LIMIT = 1000;

export class LocalTransport implements Transport {
  readonly #endpoints = new Map<Address, Receiver>();
  #queue: { target: Receiver; msg: Message }[] = [];
  #head = 0;
  #scheduled = false;
  #closed = false;
  dropped = 0;
  /** Called with any error a receiver throws (the daemons never should). */
  onError: (err: unknown, msg: Message) => void = (err) => console.error("message handler failed:", err);

  register(address: Address, receiver: Receiver): void {
    this.#endpoints.set(address, receiver);
  }

  unregister(address: Address): void {
    this.#endpoints.delete(address);
  }

  send(to: Address, msg: Message): void {
    const target = this.#endpoints.get(to);
    if (!target || this.#closed) {
      this.dropped++;
      return;
    }
    this.#queue.push({ target, msg });
    this.#schedule();
  }

  close(): void {
    this.#closed = true;
    this.#queue = [];
    this.#head = 0;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setTimeout(() => this.#drain(), 0);
  }

  #drain(): void {
    this.#scheduled = false;
    let n = 0;
    while (this.#head < this.#queue.length && n++ < DRAIN_LIMIT) {
      const { target, msg } = this.#queue[this.#head++];
      try {
        target.receive(msg);
      } catch (err) {
        this.onError(err, msg);
      }
    }
    if (this.#head >= this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else {
      this.#schedule();
    }
  }
}
