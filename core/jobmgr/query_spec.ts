/**
 * Reading a request's fields: the result of reading one, whole numbers, messages and lists, and the
 * `pagination.orderBy` job and task queries share.
 */
import type { Body } from "./api_json.ts";

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** One key of an order: a property, ascending or descending. */
export interface OrderBy<P extends string> {
  property: P;
  desc: boolean;
}

/**
 * `pagination.orderBy`: a list of `{order: ASC|DESC, property: {value}}` (the order also as its number, 1
 * or 2, or v1alpha's `ORDER_BY_ASC`/`ORDER_BY_DESC`; absent is ascending), each property one of
 * `properties`. Absent is an empty list. A bad entry is named, `where` being the field's path.
 */
export function parseOrderBy<P extends string>(
  raw: unknown,
  where: string,
  properties: readonly P[],
): Parsed<OrderBy<P>[]> {
  const list = listOf(raw, where);
  if (!list.ok) return list;
  const out: OrderBy<P>[] = [];
  for (const [i, o] of list.value.entries()) {
    const entry = (o ?? {}) as Body;
    const property = (entry.property as Body | undefined)?.value;
    if (!properties.includes(property as P)) {
      return {
        ok: false,
        message: `${where}[${i}].property.value: got ${JSON.stringify(property ?? null)}, expected one of ` +
          properties.join(", "),
      };
    }
    const order = entry.order;
    const name = typeof order === "string" ? order.toUpperCase().replace(/^ORDER_BY_/, "") : order;
    const desc = name === "DESC" || name === 2;
    if (!desc && !(name === undefined || name === null || name === "ASC" || name === 1)) {
      return {
        ok: false,
        message: `${where}[${i}].order: got ${JSON.stringify(order)}, expected ASC or DESC`,
      };
    }
    out.push({ property: property as P, desc });
  }
  return { ok: true, value: out };
}

/**
 * A whole number as a number or a string of digits (proto3 JSON writes 64-bit ones as strings); absent is 0;
 * anything else undefined.
 */
export function wholeNumber(v: unknown): number | undefined {
  if (v === undefined || v === null) return 0;
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d+$/.test(v) ? Number(v) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/**
 * A request's message field (a spec, its pagination, a time range) at `where`: absent is empty; anything but
 * an object is refused, naming it.
 */
export function messageOf(raw: unknown, where: string): Parsed<Body> {
  if (raw === undefined || raw === null) return { ok: true, value: {} };
  if (typeof raw !== "object" || Array.isArray(raw)) {
    return { ok: false, message: `${where}: got ${JSON.stringify(raw)}, expected an object` };
  }
  return { ok: true, value: raw as Body };
}

/** A request's list field at `where`: absent is empty; anything but a list is refused, naming it. */
export function listOf(raw: unknown, where: string): Parsed<unknown[]> {
  if (raw === undefined || raw === null) return { ok: true, value: [] };
  if (!Array.isArray(raw)) {
    return { ok: false, message: `${where}: got ${JSON.stringify(raw)}, expected a list` };
  }
  return { ok: true, value: raw };
}

/**
 * A request's bool field at `where` (`summaryOnly`, `statusOnly`): absent is false; anything but true or false is refused,
 * naming it, rather than read as false (`"true"` would get whole jobs where a summary was asked for).
 */
export function flagOf(raw: unknown, where: string): Parsed<boolean> {
  if (raw === undefined || raw === null) return { ok: true, value: false };
  if (typeof raw !== "boolean") {
    return { ok: false, message: `${where}: got ${JSON.stringify(raw)}, expected true or false` };
  }
  return { ok: true, value: raw };
}
