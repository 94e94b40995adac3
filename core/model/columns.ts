/** Typed-array columns that grow: the daemons' and the simulator's tables of hosts and tasks. */

export type Column = Float64Array | Int32Array | Int8Array | Uint8Array;

/**
 * A column of `length` (twice the old one's by default) holding the old contents first; the new rows are
 * zero, or `fill`.
 */
export function grownColumn<T extends Column>(a: T, length = a.length * 2, fill?: number): T {
  const b = new (a.constructor as new (n: number) => T)(length);
  if (fill !== undefined && fill !== 0) b.fill(fill, a.length);
  b.set(a);
  return b;
}
