/** Transport port: named, one-way messages between the daemons. */
import type { Message } from "../messages.ts";

/**
 * A daemon's address: `jobmgr`, `resmgr`, `placement`, `hostmgr`, or a client endpoint such as
 * `api/1`. Requests that need an answer carry `replyTo` and a `reqId` the answer echoes.
 */
export type Address = string;

/** Something that handles messages; daemons never block or await inside `receive`. */
export interface Receiver {
  receive(msg: Message): void;
}

/**
 * Delivery is asynchronous (never inside `send`), in order per (sender, destination) pair, and
 * at most once: a message to an address nobody serves is dropped and counted.
 */
export interface Transport {
  send(to: Address, msg: Message): void;
}
