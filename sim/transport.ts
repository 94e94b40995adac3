/** In-process transport for the simulator: each message arrives after a modelled latency. */
import type { Message } from "../core/messages.ts";
import type { Address, Receiver, Transport } from "../core/ports/transport.ts";
import type { EventQueue } from "./event_queue.ts";

export class SimTransport implements Transport {
  readonly #endpoints = new Map<Address, Receiver>();
  /** Messages sent to an address nobody serves. */
  dropped = 0;
  #sent = 0;
  /** Optional tap that sees every message as it is sent (the simulator's statistics use it). */
  tap?: (to: Address, msg: Message) => void;

  constructor(private readonly queue: EventQueue, private readonly latencyMs = 1) {}

  /** Messages sent but not yet delivered. */
  get inFlight(): number {
    return this.#sent - this.queue.delivered;
  }

  register(address: Address, receiver: Receiver): void {
    this.#endpoints.set(address, receiver);
  }

  send(to: Address, msg: Message): void {
    const target = this.#endpoints.get(to);
    if (!target) {
      this.dropped++;
      return;
    }
    this.tap?.(to, msg);
    this.#sent++;
    // Constant latency with FIFO ties keeps each (sender, destination) stream in order.
    this.queue.deliver(this.queue.now + this.latencyMs, target, msg);
  }
}
