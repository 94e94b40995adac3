/** Constraints compiled against a round's columns (attribute value ids, label counts), evaluated per host row. */
import type { Constraint } from "../model/config_types.ts";
import { COND_EQUAL, COND_GREATER, COND_LESS, type Program, type RoundHosts } from "./round.ts";

export const MISMATCH = 0;
export const MATCH = 1;
export const NOT_APPLICABLE = 2;

/** Interns attribute keys and values and task labels into column numbers and value ids. */
export class Dictionary {
  readonly attrKeys: string[] = [];
  readonly #attrCol = new Map<string, number>();
  readonly #values: Map<string, number>[] = [];
  readonly labelKeys: string[] = [];
  readonly #labelCol = new Map<string, number>();
  /** Round id by hostname, for `hostname` labels. */
  readonly hostIds = new Map<string, number>();

  attrCol(key: string): number {
    let c = this.#attrCol.get(key);
    if (c === undefined) {
      c = this.attrKeys.length;
      this.attrKeys.push(key);
      this.#attrCol.set(key, c);
      this.#values.push(new Map());
    }
    return c;
  }

  hasAttr(key: string): boolean {
    return this.#attrCol.has(key);
  }

  valueId(col: number, value: string): number {
    const m = this.#values[col];
    let v = m.get(value);
    if (v === undefined) m.set(value, v = m.size);
    return v;
  }

  labelCol(label: string): number {
    let c = this.#labelCol.get(label);
    if (c === undefined) {
      c = this.labelKeys.length;
      this.labelKeys.push(label);
      this.#labelCol.set(label, c);
    }
    return c;
  }

  /** The column of a TASK label if a constraint of the round counts it. */
  labelColIfUsed(label: string): number {
    return this.#labelCol.get(label) ?? -1;
  }
}

const COND = { LESS_THAN: COND_LESS, EQUAL: COND_EQUAL, GREATER_THAN: COND_GREATER } as const;

/** Compiles a constraint; attribute columns and label columns are added to the dictionary as needed. */
export function compile(c: Constraint, dict: Dictionary): Program {
  switch (c.type) {
    case "LABEL_CONSTRAINT": {
      const l = c.labelConstraint;
      const cond = COND[l.condition], req = l.requirement;
      if (l.kind === "TASK") {
        return { op: "label", col: dict.labelCol(`${l.label.key}=${l.label.value}`), cond, req };
      }
      if (l.label.key === "hostname") {
        return { op: "host", id: dict.hostIds.get(l.label.value) ?? -1, cond, req };
      }
      const col = dict.attrCol(l.label.key);
      return { op: "attr", col, value: dict.valueId(col, l.label.value), cond, req };
    }
    case "AND_CONSTRAINT":
      return { op: "and", subs: c.andConstraint.constraints.map((s) => compile(s, dict)) };
    case "OR_CONSTRAINT":
      return { op: "or", subs: c.orConstraint.constraints.map((s) => compile(s, dict)) };
  }
}

/** Whether more placements in the round could turn a mismatch into a match (TASK counts only grow). */
export function growing(p: Program): boolean {
  if (p.op === "label") return p.cond !== COND_LESS;
  if (p.op === "and" || p.op === "or") return p.subs.some(growing);
  return false;
}

function test(cond: number, n: number, req: number): boolean {
  return cond === COND_EQUAL ? n === req : cond === COND_LESS ? n < req : n > req;
}

/** Evaluates a program on one host row: MATCH, MISMATCH or NOT_APPLICABLE (Peloton's AND/OR rules). */
export function run(p: Program, h: RoundHosts, row: number): number {
  switch (p.op) {
    case "attr":
      return test(p.cond, h.attrs[p.col][row] === p.value ? 1 : 0, p.req) ? MATCH : MISMATCH;
    case "host":
      return test(p.cond, h.ids[row] === p.id ? 1 : 0, p.req) ? MATCH : MISMATCH;
    case "label":
      return test(p.cond, h.labels[p.col][row], p.req) ? MATCH : MISMATCH;
    case "and": {
      let applicable = false;
      for (const s of p.subs) {
        const v = run(s, h, row);
        if (v === MISMATCH) return MISMATCH;
        if (v === MATCH) applicable = true;
      }
      return applicable ? MATCH : NOT_APPLICABLE;
    }
    case "or": {
      let applicable = false;
      for (const s of p.subs) {
        const v = run(s, h, row);
        if (v === MATCH) return MATCH;
        if (v === MISMATCH) applicable = true;
      }
      return applicable ? MISMATCH : NOT_APPLICABLE;
    }
  }
}
