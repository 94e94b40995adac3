/** Test helper for full-disk cases: fills a (small, mounted) file system. */

/** Writes `path` until the file system has no room left (ENOSPC). */
export async function fillFileSystem(path: string): Promise<void> {
  const file = await Deno.open(path, { write: true, create: true });
  try {
    for (let chunk = 1 << 20; chunk >= 1; chunk >>= 4) {
      const bytes = new Uint8Array(chunk);
      try {
        for (;;) await file.write(bytes);
      } catch (err) {
        if ((err as { code?: string }).code !== "ENOSPC") throw err;
      }
    }
  } finally {
    file.close();
  }
}
