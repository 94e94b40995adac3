/** Test helper: a minicluster on a fresh data dir, started with a status recorder, stopped and removed after. */
import { Recorder } from "../backend_testing.ts";
import { Minicluster, type MiniclusterOptions } from "./minicluster.ts";

/**
 * Runs `body` on a started minicluster of `options` whose data dir is a fresh temporary directory (named from
 * `prefix`; `asGiven` turns its path into the one the minicluster is given, a relative one say); stops it and
 * removes the directory after.
 */
export async function withMinicluster(
  prefix: string,
  options: Omit<MiniclusterOptions, "dataDir">,
  body: (mc: Minicluster, rec: Recorder, dataDir: string) => Promise<void>,
  asGiven = (dir: string) => dir,
): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix });
  const mc = new Minicluster({ ...options, dataDir: asGiven(dataDir) });
  const rec = new Recorder();
  mc.start(rec.sink);
  try {
    await body(mc, rec, dataDir);
  } finally {
    await mc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
}
