/** What job and task query specs share: the result of reading one, and Peloton's `pagination.orderBy`. */
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
  if (raw === undefined || raw === null) return { ok: true, value: [] };
  if (!Array.isArray(raw)) {
    return { ok: false, message: `${where}: got ${JSON.stringify(raw)}, expected a list` };
  }
  const out: OrderBy<P>[] = [];
  for (const [i, o] of raw.entries()) {
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
