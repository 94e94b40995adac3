/** A binary min-heap of numbers in a plain array: the distinct times the event queue and statuses wait for. */

export function pushNumber(heap: number[], x: number): void {
  heap.push(x);
  let i = heap.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (heap[p] <= x) break;
    heap[i] = heap[p];
    i = p;
  }
  heap[i] = x;
}

/** Removes and returns the smallest number (the heap is not empty). */
export function popNumber(heap: number[]): number {
  const top = heap[0];
  const last = heap.pop()!;
  const n = heap.length;
  if (n) {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const c = l + 1 < n && heap[l + 1] < heap[l] ? l + 1 : l;
      if (last <= heap[c]) break;
      heap[i] = heap[c];
      i = c;
    }
    heap[i] = last;
  }
  return top;
}
