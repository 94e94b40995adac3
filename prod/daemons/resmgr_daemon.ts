/** `peloton resmgr`: a resource manager process, leader-elected through the store; followers stand by. */
import { seededPrng } from "../../core/ports/prng.ts";
import { DEFAULT_RESMGR_CONFIG, type ResmgrConfig, ResourceManager } from "../../core/resmgr/resmgr.ts";
import { LeaseKeeper } from "../cluster/election.ts";
import type { RunningDaemon } from "./jobmgr_daemon.ts";
import { daemonGauges } from "./gauges.ts";
import { watchDepartures } from "./leaders.ts";
import { type DaemonOptions, DaemonProcess } from "./process.ts";
import { Term } from "./term.ts";

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
  let term: Term | undefined;
  let terms = 0;
  let lastToken: number | undefined;
  let steppedDown: string | undefined;
  let stopping = false;
  let keeper!: LeaseKeeper;

  const campaign = () => {
    keeper = new LeaseKeeper({
      cluster: p.cluster,
      name: "resmgr",
      holder: p.instance,
      url: p.url,
      ttlMs: o.leaseTtlMs,
      after: lastToken,
      onAcquired: async (lease) => {
        const t = term = new Term(p, "resmgr", terms++);
        lastToken = lease.token;
        p.fences = () => [{ name: lease.name, holder: lease.holder, token: lease.token }];
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
        steppedDown = undefined;
        await p.registry.refresh();
        p.log("leading", { role: "resmgr", token: lease.token, pools: pools.length });
      },
      onLost: (why) => void stepDown(why),
    });
    keeper.start();
  };

  /** Stops acting as the leader, waits until its writes are stored or refused, then campaigns again. */
  const stepDown = async (why: string) => {
    // A stop under way ends the term itself.
    if (stopping) return;
    p.log.error("lost the resmgr lease; stepping down", { reason: why });
    steppedDown = why;
    term?.end();
    term = undefined;
    if (rm) p.transport.unregister("resmgr");
    rm?.stop();
    rm = undefined;
    // The fence stays the lost lease's until the next term sets its own: what is still being written is
    // applied only if no one took the lease meanwhile.
    await p.store.flush();
    p.failCalls(
      "resmgr",
      "the resource manager stepped down before it answered (it lost its lease); try again",
    );
    if (stopping) return;
    p.log("campaigning for the resmgr lease again", { after: lastToken });
    campaign();
  };

  // A dead engine's tasks and a dead job manager's placements come back without waiting for timeouts.
  watchDepartures(
    p,
    ["placement", "jobmgr"],
    (role, gone) => rm?.receive({ kind: "peer-changed", role, gone }),
  );
  p.hooks = {
    health: () => ({
      leader: keeper.held,
      tasks: rm?.tasks.size ?? 0,
      ...(steppedDown ? { steppedDown } : {}),
    }),
    notServing: () =>
      steppedDown
        ? `this resource manager stepped down (${steppedDown}) and is campaigning again; try again`
        : "the resource manager is taking the lead up; try again",
  };
  p.metrics.collect(() => p.metrics.gauge("peloton_leader").set(keeper.held ? 1 : 0));
  daemonGauges(p.metrics, () => ({ resmgr: rm }));
  campaign();
  return {
    process: p,
    lost: new Promise(() => {}),
    stop: () =>
      p.close(async () => {
        stopping = true;
        rm?.stop();
        await p.store.flush();
        await keeper.stop(true);
      }),
  };
}
