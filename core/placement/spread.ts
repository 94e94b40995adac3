/** Failure-domain spreading: a group's tasks go round-robin over the values of a host attribute (rack, zone). */
import type { RoundGroup, RoundHosts } from "./round.ts";

/** What spreading needs of a placer: stage checks and scores for one host row. */
export interface HostJudge {
  readonly stamp: number;
  feasible(row: number, g: RoundGroup): number;
  score(row: number, g: RoundGroup): number;
}

interface Domains {
  /** Distinct values in ascending id order (-1: hosts without the attribute). */
  values: number[];
  rows: Map<number, number[]>;
}

interface GroupState {
  counts: Map<number, number>;
  /** Tasks per domain this pass aims for; raised when every open domain has reached it. */
  level: number;
  cursor: number;
  /** Domains with no room left during the current fill (by the placer's stamp). */
  full: Map<number, number>;
}

export class DomainSpread {
  readonly #byCol = new Map<number, Domains>();
  readonly #groups = new Map<number, GroupState>();

  constructor(private readonly h: RoundHosts) {}

  /** A host in the least used domain that has room, best by the group's score within it; -1 if none. */
  choose(gi: number, g: RoundGroup, judge: HostJudge): number {
    const d = this.#domains(g.domain), st = this.#state(gi);
    const n = d.values.length;
    for (;;) {
      let nextLevel = Infinity;
      for (let tried = 0; tried < n; tried++) {
        const v = d.values[st.cursor];
        st.cursor = (st.cursor + 1) % n;
        if (st.full.get(v) === judge.stamp) continue;
        const c = st.counts.get(v) ?? 0;
        if (c > st.level) {
          nextLevel = Math.min(nextLevel, c);
          continue;
        }
        let best = -1, bestScore = Infinity;
        for (const r of d.rows.get(v)!) {
          if (judge.feasible(r, g) >= 0) continue;
          const s = judge.score(r, g);
          if (s < bestScore || (s === bestScore && this.h.ids[r] < this.h.ids[best])) {
            best = r;
            bestScore = s;
          }
        }
        if (best >= 0) return best;
        st.full.set(v, judge.stamp);
      }
      if (nextLevel === Infinity) return -1;
      st.level = nextLevel;
    }
  }

  /** Records a task placed on (or taken back from) a host. */
  count(gi: number, g: RoundGroup, row: number, delta: number): void {
    const v = this.h.attrs[g.domain][row], st = this.#state(gi);
    st.counts.set(v, (st.counts.get(v) ?? 0) + delta);
  }

  #state(gi: number): GroupState {
    let st = this.#groups.get(gi);
    if (!st) this.#groups.set(gi, st = { counts: new Map(), level: 0, cursor: 0, full: new Map() });
    return st;
  }

  #domains(col: number): Domains {
    let d = this.#byCol.get(col);
    if (d) return d;
    const rows = new Map<number, number[]>();
    const column = this.h.attrs[col];
    for (let r = 0; r < this.h.count; r++) {
      const list = rows.get(column[r]);
      if (list) list.push(r);
      else rows.set(column[r], [r]);
    }
    d = { values: [...rows.keys()].sort((a, b) => a - b), rows };
    this.#byCol.set(col, d);
    return d;
  }
}
