/**
 * Which of a scenario's hosts are up, down, removed or in maintenance as its events run: what a later event
 * can still act on. It follows the simulator (`sim/events.ts`): failHosts, loseRack and drain pick among the
 * hosts whose agent is up, removeHosts among all hosts not removed yet (down ones too, which then never come
 * back), each in host order; a failure's hosts come back `recoverAfterSec` later, after the events of that
 * same millisecond, unless a lost rack holds them longer (a host comes back with the last loss holding it); a drain leaves the hosts it picks that are in maintenance already to the drain that put
 * them there, and its own stay in maintenance at least `durationSec`, then until drained.
 */
import { criteria, type HostClass, type HostCriteria, unlike } from "./scenario_hosts.ts";

/** The events that act on hosts, by their field. */
export type HostAction = "failHosts" | "loseRack" | "drain" | "removeHosts";

/** A selector as the simulator applies it: the criteria, then a seeded fraction, then the first `count`. */
export interface Selection extends HostCriteria {
  count?: number;
  fraction?: number;
}

/** The event that took a host down or put it into maintenance, as a reason names it. */
export interface Cause {
  /** Its index in `events`. */
  event: number;
  atSec: number;
  action: HostAction;
  /** When its hosts are back (recoverAfterSec) or its maintenance ends at the earliest (durationSec); none: never. */
  untilSec?: number;
  /** loseRack's rack. */
  rack?: string;
}

/**
 * One way a host may be when an event runs. A host a seeded fraction may or may not have taken is kept in
 * both ways, so no event is refused for what only the seed decides.
 */
interface Situation {
  /** Down since `cause` (a failure, a lost rack or a removal) until `backMs` (Infinity: for good). */
  down?: { cause: Cause; backMs: number };
  /**
   * In maintenance since `cause`, at least until `untilMs` (Infinity: for good); after that, until drained,
   * which may be at any time: the host is then kept both in maintenance and out of it.
   */
  maintenance?: { cause: Cause; untilMs: number };
}

/** The ways one host may be. Hosts that may be the same ways share one, so an event on 50,000 hosts is cheap. */
interface State {
  situations: Situation[];
}

/** What an event's selector finds. */
export interface Found {
  /** Hosts there are that meet the criteria, whether the event can act on them or not. */
  matched: number;
  /**
   * How many of those the simulator may pick from: hosts whose agent may be up, or for removeHosts hosts that
   * may not be removed yet.
   */
  up: number;
  /** How many of those the event may pick and act on, at most. */
  atMost: number;
  /** Each matched host the event surely cannot act on, in host order, with why ("gone, removed by event 0 at 100 s"). */
  unavailable: Map<string, string>;
}

type Can = "sure" | "maybe" | "never";
type Pick = "yes" | "maybe" | "no";

/**
 * The hosts of a scenario over its events' time. Only hosts an event touched have a state of their own, so a
 * 50,000-host scenario without events costs nothing.
 */
export class HostStates {
  readonly #classes = new Map<string, HostClass>();
  /** Hosts in the order the simulator registers them: the scenario's classes, then each event's. */
  readonly #blocks: { c: HostClass; first: number; count: number; offset: number }[] = [];
  readonly #next = new Map<string, number>();
  #hosts = 0;
  /** By host position; none: up and out of maintenance. */
  readonly #stateOf: (State | undefined)[] = [];
  /** Every state there has been, by its situations. */
  readonly #interned = new Map<string, State>();
  readonly #up = this.#intern([{}]);

  constructor(classes: HostClass[]) {
    for (const c of classes) this.addClass(c);
  }

  /** A class and its hosts; a class already known is left as it is (the checker refuses the event). */
  addClass(c: HostClass): void {
    if (this.#classes.has(c.name)) return;
    this.#classes.set(c.name, c);
    this.addHosts(c.name, c.count);
  }

  /** More hosts of a class: they continue its numbering, as the simulator names them. */
  addHosts(name: string, count: number): void {
    const c = this.#classes.get(name);
    if (!c) return;
    const first = this.#next.get(name) ?? 0;
    this.#next.set(name, first + count);
    if (count > 0) this.#blocks.push({ c, first, count, offset: this.#hosts });
    this.#hosts += count;
  }

  /**
   * Moves to an event at `ms`: hosts due back before it are up, maintenances due to end before it may be
   * over. Those due at `ms` itself are not: the simulator schedules them after the scenario's events of that
   * time. A drain's hosts stay in maintenance after its end until drained and completed, a time no event
   * knows: from then on each is both in maintenance and out of it.
   */
  advance(ms: number): void {
    const moved = new Map<State, State>();
    for (const st of this.#interned.values()) {
      const next = this.#intern(st.situations.flatMap((x) => {
        const y: Situation = {};
        if (x.down && x.down.backMs >= ms) y.down = x.down;
        if (!x.maintenance) return [y];
        if (x.maintenance.untilMs >= ms) return [{ ...y, maintenance: x.maintenance }];
        return [{ ...y, maintenance: x.maintenance }, y];
      }));
      if (next !== st) moved.set(st, next);
    }
    if (!moved.size) return;
    this.#stateOf.forEach((st, pos) => {
      const next = st && moved.get(st);
      if (next) this.#stateOf[pos] = next === this.#up ? undefined : next;
    });
  }

  /** Runs an event's action on the hosts its selector picks, and says what it found. */
  act(action: HostAction, s: Selection, cause: Cause): Found {
    const positions = this.#matching(s);
    const states = positions.map((pos) => this.#stateOf[pos] ?? this.#up);
    // The simulator's `select` looks only at whether a host's agent is up (a drain picks hosts in
    // maintenance, and leaves them be), or for a removal whether it is removed already.
    const pickable = (x: Situation) => action === "removeHosts" ? !removed(x) : !x.down;
    const canOf = new Map<State, Can>();
    const can = states.map((st) => {
      let c = canOf.get(st);
      if (c === undefined) {
        const n = st.situations.filter(pickable).length;
        canOf.set(st, c = n === 0 ? "never" : n === st.situations.length ? "sure" : "maybe");
      }
      return c;
    });
    const picks = picked(s, can);
    const end = cause.untilSec === undefined ? Infinity : Math.ceil(cause.untilSec * 1000);
    // One new state per state and pick: the states are few, the hosts many.
    const after = { yes: new Map<State, State>(), maybe: new Map<State, State>() };
    const reasons = new Map<State, string>();
    const unavailable = new Map<string, string>();
    let atMost = 0;
    for (let k = 0; k < positions.length; k++) {
      const st = states[k];
      if (!st.situations.some((x) => useful(action, x))) {
        let reason = reasons.get(st);
        if (reason === undefined) {
          reasons.set(st, reason = [...new Set(st.situations.map((x) => why(x, cause.atSec)))].join(" or "));
        }
        unavailable.set(this.#nameAt(positions[k]), reason);
      } else if (picks[k] !== "no") atMost++;
      const pick = picks[k];
      if (pick === "no") continue;
      let next = after[pick].get(st);
      if (!next) {
        next = this.#intern(st.situations.flatMap((x) => {
          if (!pickable(x)) return [x];
          // A removal ends a failure's way back; a drain leaves a host in maintenance to its own drain.
          const taken = action !== "drain"
            ? { ...x, down: { cause, backMs: end } }
            : x.maintenance
            ? x
            : { ...x, maintenance: { cause, untilMs: end } };
          return pick === "yes" ? [taken] : [taken, x];
        }));
        after[pick].set(st, next);
      }
      this.#stateOf[positions[k]] = next === this.#up ? undefined : next;
    }
    // A lost rack also holds its hosts already down for a failure, until the later of the two ends, as the
    // simulator keeps a host down until the last loss holding it recovers. (A loss refused for finding no
    // host up changes nothing: the scenario is refused.)
    if (action === "loseRack" && atMost > 0) {
      const held = new Map<State, State>();
      for (const pos of positions) {
        const st = this.#stateOf[pos] ?? this.#up;
        let next = held.get(st);
        if (!next) {
          next = this.#intern(
            st.situations.map((x) =>
              x.down && !removed(x) && x.down.backMs < end ? { ...x, down: { cause, backMs: end } } : x
            ),
          );
          held.set(st, next);
        }
        this.#stateOf[pos] = next === this.#up ? undefined : next;
      }
    }
    return { matched: positions.length, up: can.filter((c) => c !== "never").length, atMost, unavailable };
  }

  /**
   * Positions of the hosts there are that meet the criteria (and are named, when the selector names hosts),
   * in host order.
   */
  #matching(s: Selection): number[] {
    const out: number[] = [];
    const place = s.rack !== undefined || s.zone !== undefined;
    for (const { c, first, count, offset } of this.#blocks) {
      if (s.class !== undefined && c.name !== s.class) continue;
      if (!s.hosts) {
        for (let i = first; i < first + count; i++) {
          if (!place || !unlike(s, c, i).length) out.push(offset + i - first);
        }
        continue;
      }
      const prefix = `${c.name}-`;
      for (const h of new Set(s.hosts)) {
        const rest = h.startsWith(prefix) ? h.slice(prefix.length) : "";
        if (!/^(0|[1-9]\d*)$/.test(rest)) continue;
        const i = Number(rest);
        if (i >= first && i < first + count && (!place || !unlike(s, c, i).length)) {
          out.push(offset + i - first);
        }
      }
    }
    return s.hosts ? out.sort((a, b) => a - b) : out;
  }

  /** The name of the host at a position: `std-3`. */
  #nameAt(pos: number): string {
    const b = this.#blocks.findLast((b) => b.offset <= pos)!;
    return `${b.c.name}-${b.first + pos - b.offset}`;
  }

  #keyOf(situations: Situation[]): string {
    return situations.map((x) => `${x.down?.cause.event ?? ""}/${x.maintenance?.cause.event ?? ""}`).sort()
      .join(",");
  }

  /** The one state of these situations, the same ones counted once. */
  #intern(situations: Situation[]): State {
    const unique = [...new Map(situations.map((x) => [this.#keyOf([x]), x])).values()];
    const key = this.#keyOf(unique);
    let st = this.#interned.get(key);
    if (!st) this.#interned.set(key, st = { situations: unique });
    return st;
  }
}

/**
 * Whether the event does something to a host it picks: a removal to any host not removed yet; the others
 * never pick one whose agent is down, and a drain leaves one in maintenance already to the drain that put it
 * there.
 */
function useful(action: HostAction, x: Situation): boolean {
  if (action === "removeHosts") return !removed(x);
  return !x.down && (action !== "drain" || !x.maintenance);
}

/** Whether a removal took the host: it never comes back. */
function removed(x: Situation): boolean {
  return x.down?.cause.action === "removeHosts";
}

/**
 * Whether the simulator's `select` takes each host, given whether it is one it picks from (agent up; for a
 * removal, not removed): "yes" in every way it may be one, "maybe" when that is the seed's to say (a fraction
 * below all) or rests on the hosts before it, "no".
 */
function picked(s: Selection, can: Can[]): Pick[] {
  let least = 0;
  let most = 0;
  for (const c of can) {
    if (c === "sure") least++;
    if (c !== "never") most++;
  }
  if (s.fraction !== undefined) {
    const f = s.fraction;
    if (Math.round(most * f) === 0) return can.map(() => "no");
    // A fraction takes all it finds only when it rounds up to all of every number of hosts there may be.
    for (let n = least; n <= most; n++) {
      if (Math.round(n * f) !== n) return can.map((c) => c === "never" ? "no" : "maybe");
    }
  }
  const count = s.count ?? Infinity;
  let sureBefore = 0;
  let mayBefore = 0;
  return can.map((c) => {
    if (c === "never") return "no";
    const pick = sureBefore + mayBefore < count ? "yes" : sureBefore < count ? "maybe" : "no";
    if (c === "sure") sureBefore++;
    else mayBefore++;
    return pick;
  });
}

/**
 * Why a host cannot be acted on in one of the ways it may be, at `nowSec`: "down, failed by event 2 at 50 s
 * until 150 s".
 */
function why(x: Situation, nowSec: number): string {
  const cause = (x.down ?? x.maintenance)!.cause;
  const by = `by event ${cause.event} at ${cause.atSec} s`;
  const until = cause.untilSec === undefined ? undefined : Math.round(cause.untilSec * 1000) / 1000;
  // Hosts due back now come back after the scenario's events of this time.
  const after = until === nowSec ? " (after this event)" : "";
  if (!x.down) {
    return until === undefined
      ? `in maintenance for good, drained ${by} with no durationSec`
      : `in maintenance, drained ${by} until at least ${until} s${after}`;
  }
  if (cause.action === "removeHosts") return `gone, removed ${by}`;
  const what = cause.action === "loseRack" ? `lost with rack ${cause.rack} ${by}` : `failed ${by}`;
  return until === undefined
    ? `down for good, ${what} with no recoverAfterSec`
    : `down, ${what} until ${until} s${after}`;
}

/**
 * What keeps an event off the matched hosts it cannot act on, grouped by reason: "the 4 hosts of class a
 * are gone, removed by event 0 at 100 s; std-0 is down, …".
 */
export function whyNot(found: Found, s: Selection): string {
  const groups = new Map<string, string[]>();
  for (const [host, reason] of found.unavailable) {
    const group = groups.get(reason);
    if (group) group.push(host);
    else groups.set(reason, [host]);
  }
  return [...groups].map(([reason, hosts]) =>
    `${subject(hosts, found.matched, s)} ${hosts.length === 1 ? "is" : "are"} ${reason}`
  ).join("; ");
}

/** The hosts of a group: all a selector's criteria match ("the 4 hosts of class a"), or their names. */
function subject(hosts: string[], matched: number, s: Selection): string {
  if (hosts.length === matched && matched > 1 && !s.hosts) {
    return ["the", String(matched), "hosts", ...criteria(s)].join(" ");
  }
  if (hosts.length === 1) return hosts[0];
  if (hosts.length <= 3) return `${hosts.slice(0, -1).join(", ")} and ${hosts[hosts.length - 1]}`;
  return `${hosts.slice(0, 3).join(", ")} and ${hosts.length - 3} more`;
}
