/** `peloton placement`: a placement engine process; several run at once, each leasing hosts of its own. */
import {
  DEFAULT_PLACEMENT_CONFIG,
  type PlacementConfig,
  PlacementEngine,
} from "../../core/placement/engine.ts";
import { InProcessExecutor } from "../../core/placement/in_process_executor.ts";
import { PRODUCTION_ROUND_TIMEOUT_MS, WorkerExecutor } from "../placement/worker_executor.ts";
import type { RunningDaemon } from "./jobmgr_daemon.ts";
import { daemonGauges } from "./gauges.ts";
import { watchLeaders } from "./leaders.ts";
import { type DaemonOptions, DaemonProcess } from "./process.ts";

export interface PlacementDaemonOptions extends Omit<DaemonOptions, "role"> {
  placement?: Partial<PlacementConfig>;
  /** Deno workers over host partitions (0: in process). */
  workers?: number;
}

/**
 * Engines never double-book: the host manager leases a host to one engine at a time. When the resource or
 * host manager gets a new leader, requests waiting on the old one are sent to the new one (`watchLeaders`).
 */
export async function startPlacement(o: PlacementDaemonOptions): Promise<RunningDaemon> {
  const p = new DaemonProcess({ ...o, role: "placement" });
  await p.open();
  const self = `placement@${p.instance}`;
  const workers = o.workers
    ? new WorkerExecutor(o.workers, { roundTimeoutMs: PRODUCTION_ROUND_TIMEOUT_MS })
    : undefined;
  const engine = new PlacementEngine({
    executor: workers ?? new InProcessExecutor(),
    clock: p.clock,
    transport: p.transport,
    metrics: p.metrics,
    self,
    resmgr: "resmgr",
    hostmgr: "hostmgr",
  }, { ...DEFAULT_PLACEMENT_CONFIG, ...o.placement });
  p.transport.register(self, engine);
  watchLeaders(p, () => {});
  p.hooks = { health: () => ({ holding: engine.holding }) };
  daemonGauges(p.metrics, { placement: engine });
  engine.start();
  return {
    process: p,
    lost: new Promise(() => {}),
    stop: () =>
      p.close(async () => {
        engine.stop();
        await workers?.close();
      }),
  };
}
