/** Bounded waits. */

/** What `p` resolves to, or `late` if it has not settled within `ms`; the timer does not outlive the wait. */
export async function orWithin<T, L>(p: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const after = new Promise<L>((resolve) => timer = setTimeout(() => resolve(late), ms));
  try {
    return await Promise.race([p, after]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `p` settles (resolves or rejects) within `ms`; the timer does not outlive the wait. */
export function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  return orWithin(p.then(() => true, () => true), ms, false);
}
