/**
 * A placement worker that dies in one round, for the executor's failure tests; otherwise the real worker.
 * The module URL's query says how: `?worker=I&round=N&how=H` makes worker I die as its partition of round N
 * starts, by H: `error` (an uncaught error), `close` (it closes itself), `reject` (the call fails) or
 * `hang` (it loops for ever, answering nothing); `slow` makes it take `&ms=M` more over every round from N on.
 */
import { LocalPartitions } from "../partitions.ts";
import "../worker.ts";

const query = new URL(import.meta.url).searchParams;
const round = Number(query.get("round"));
const how = query.get("how");
const name = (globalThis as unknown as { name: string }).name;

if (name === `placement-${query.get("worker")}`) {
  const start = LocalPartitions.prototype.start;
  LocalPartitions.prototype.start = function (this: LocalPartitions, ...args: Parameters<typeof start>) {
    if (how === "slow" && args[0] >= round) {
      const until = performance.now() + Number(query.get("ms"));
      while (performance.now() < until) { /* busy */ }
    } else if (args[0] === round) {
      if (how === "reject") throw new Error(`test worker rejects round ${round}`);
      if (how === "hang") { for (;;) { /* busy for ever, until terminated */ } }
      if (how === "close") close();
      else reportError(new Error(`test worker dies in round ${round}`));
      // Nothing this worker sends from here on arrives.
    }
    return start.apply(this, args);
  };
}
