/** `peloton resmgr`: a resource manager process, leader-elected through the store; followers stand by. */
import { seededPrng } from "../../core/ports/prng.ts";
import { DEFAULT_RESMGR_CONFIG, type ResmgrConfig, ResourceManager } from "../../core/resmgr/resmgr.ts";
import type { RunningDaemon } from "./jobmgr_daemon.ts";
import { daemonGauges } from "./gauges.ts";
import { watchDepartures } from "./leaders.ts";
import { type DaemonOptions, DaemonProcess } from "./process.ts";
import { LeaderRole } from "./leader_role.ts";

export interface ResmgrDaemonOptions extends Omit<DaemonOptions, "role"> {
  resmgr?: Partial<ResmgrConfig>;
}

/**
 * The leader rebuilds its pool tree from the store; its queues and task accounting come back as the job
 * managers see the new leader and send their tasks again (Peloton's resource manager read them from the DB).
 * A leader that loses its lease (its store out of reach past the lease's TTL, or the lease taken over) steps
 * down: its resource manager is thrown away once its last writes are stored or fenced off, and the process
 * campaigns again; a term it wins starts from the store as a fresh start does.
 */
export async function startResmgr(o: ResmgrDaemonOptions): Promise<RunningDaemon> {
  const p = new DaemonProcess({ ...o, role: "resmgr" });
  await p.open();
  let rm: ResourceManager | undefined;
  const role = new LeaderRole(p, "resmgr", o.leaseTtlMs, {
    lead: async (t, lease, leading) => {
      const pools = await p.store.respools();
      if (t.ended) return;
      const r = new ResourceManager({
        clock: t.clock,
        transport: t.transport,
        store: t.store,
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
      r.recover(pools);
      rm = r;
      p.transport.register("resmgr", r);
      r.start();
      leading();
      await p.registry.refresh();
      p.log("leading", { role: "resmgr", token: lease.token, pools: pools.length });
    },
    drop: () => {
      if (rm) p.transport.unregister("resmgr");
      rm?.stop();
      rm = undefined;
    },
    steppedDownAnswer: "the resource manager stepped down before it answered (it lost its lease); try again",
  });

  // A dead engine's tasks and a dead job manager's placements come back without waiting for timeouts.
  watchDepartures(
    p,
    ["placement", "jobmgr"],
    (role, gone) => rm?.receive({ kind: "peer-changed", role, gone }),
  );
  p.hooks = {
    health: () => ({
      ...role.health(),
      tasks: rm?.tasks.size ?? 0,
    }),
    notServing: () =>
      role.steppedDown
        ? `this resource manager stepped down (${role.steppedDown}) and is campaigning again; try again`
        : "the resource manager is taking the lead up; try again",
  };
  p.metrics.collect(() => p.metrics.gauge("peloton_leader").set(role.keeper.held ? 1 : 0));
  daemonGauges(p.metrics, () => ({ resmgr: rm }));
  role.campaign();
  return {
    process: p,
    lost: new Promise(() => {}),
    stop: () =>
      p.close(async () => {
        role.stopping = true;
        rm?.stop();
        await p.store.flush();
        await role.keeper.stop(true);
      }),
  };
}
