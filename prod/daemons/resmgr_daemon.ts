/** `peloton resmgr`: a resource manager process, leader-elected through the store; followers stand by. */
import { seededPrng } from "../../core/ports/prng.ts";
import { DEFAULT_RESMGR_CONFIG, type ResmgrConfig, ResourceManager } from "../../core/resmgr/resmgr.ts";
import { LeaseKeeper } from "../cluster/election.ts";
import type { RunningDaemon } from "./jobmgr_daemon.ts";
import { daemonGauges } from "./gauges.ts";
import { watchDepartures } from "./leaders.ts";
import { type DaemonOptions, DaemonProcess } from "./process.ts";

export interface ResmgrDaemonOptions extends Omit<DaemonOptions, "role"> {
  resmgr?: Partial<ResmgrConfig>;
}

/**
 * The leader rebuilds its pool tree from the store; its queues and task accounting come back as the job
 * managers see the new leader and send their tasks again (Peloton's resource manager read them from the DB).
 */
export async function startResmgr(o: ResmgrDaemonOptions): Promise<RunningDaemon> {
  const p = new DaemonProcess({ ...o, role: "resmgr" });
  await p.open();
  let rm: ResourceManager | undefined;
  let lost!: (why: string) => void;
  const lostPromise = new Promise<string>((r) => (lost = r));
  const keeper = new LeaseKeeper({
    cluster: p.cluster,
    name: "resmgr",
    holder: p.instance,
    url: p.url,
    ttlMs: o.leaseTtlMs,
    onAcquired: async (lease) => {
      p.fences = () => [{ name: lease.name, holder: lease.holder, token: lease.token }];
      const pools = await p.store.respools();
      rm = new ResourceManager({
        clock: p.clock,
        transport: p.transport,
        store: p.store,
        prng: seededPrng(crypto.getRandomValues(new Uint32Array(1))[0]),
        metrics: p.metrics,
        self: "resmgr",
        hostmgr: "hostmgr",
      }, {
        ...DEFAULT_RESMGR_CONFIG,
        // A safety net for an engine's answer lost between processes: tasks it held come back sooner.
        placingTimeoutMs: 120_000,
        ...o.resmgr,
      });
      rm.recover(pools);
      p.transport.register("resmgr", rm);
      rm.start();
      await p.registry.refresh();
      p.log("leading", { role: "resmgr", token: lease.token, pools: pools.length });
    },
    onLost: (why) => {
      p.log.error("lost the resmgr lease; exiting", { reason: why });
      lost(why);
    },
  });
  // A dead engine's tasks and a dead job manager's placements come back without waiting for timeouts.
  watchDepartures(
    p,
    ["placement", "jobmgr"],
    (role, gone) => rm?.receive({ kind: "peer-changed", role, gone }),
  );
  p.hooks = { health: () => ({ leader: keeper.held, tasks: rm?.tasks.size ?? 0 }) };
  p.metrics.collect(() => p.metrics.gauge("peloton_leader").set(keeper.held ? 1 : 0));
  daemonGauges(p.metrics, () => ({ resmgr: rm }));
  keeper.start();
  return {
    process: p,
    lost: lostPromise,
    stop: () =>
      p.close(async () => {
        rm?.stop();
        await p.store.flush();
        await keeper.stop(true);
      }),
  };
}
