/** `peloton hostmgr`: a host manager process, leader-elected through the store; the leader drives the cluster. */
import { DEFAULT_HOSTMGR_CONFIG, HostManager, type HostmgrConfig } from "../../core/hostmgr/hostmgr.ts";
import {
  addAgent,
  type BackendOptions,
  createBackend,
  type SandboxBackend,
  sandboxFile,
} from "../backends.ts";
import { LeaseKeeper } from "../cluster/election.ts";
import { MesosMaintenance } from "../mesos/maintenance_sync.ts";
import { StoreFrameworkIdStore } from "../mesos/framework_id_store.ts";
import type { Minicluster } from "../minicluster/minicluster.ts";
import { DataDirInUseError } from "../minicluster/data_dir_owner.ts";
import type { RunningDaemon } from "./jobmgr_daemon.ts";
import { JobmgrRouter } from "./jobmgr_router.ts";
import { watchDepartures, watchLeaders } from "./leaders.ts";
import { daemonGauges } from "./gauges.ts";
import { type DaemonOptions, DaemonProcess } from "./process.ts";

export interface HostmgrDaemonOptions
  extends Omit<DaemonOptions, "role">, Omit<BackendOptions, "dataDir" | "log"> {
  hostmgr?: Partial<HostmgrConfig>;
}

/**
 * The leader subscribes to Mesos with the framework id kept in the store (so its tasks survive a change of
 * leader), puts back the maintenance kept in the store, rebuilds hosts from offers, and gets tasks back
 * from the job managers, which send theirs when they see the new leader; the backend then reconciles them.
 */
export async function startHostmgr(o: HostmgrDaemonOptions): Promise<RunningDaemon> {
  const p = new DaemonProcess({ ...o, role: "hostmgr" });
  const router = new JobmgrRouter(
    "hostmgr",
    () => p.registry.membersOf("jobmgr").map((m) => `jobmgr@${m.instanceId}`),
  );
  await p.open(router);
  let hm: HostManager | undefined;
  let backend: SandboxBackend | undefined;
  let minicluster: Minicluster | undefined;
  let maintenance: MesosMaintenance | undefined;
  let lost!: (why: string) => void;
  const lostPromise = new Promise<string>((r) => (lost = r));
  const keeper = new LeaseKeeper({
    cluster: p.cluster,
    name: "hostmgr",
    holder: p.instance,
    url: p.url,
    ttlMs: o.leaseTtlMs,
    onAcquired: async (lease) => {
      p.fences = () => [{ name: lease.name, holder: lease.holder, token: lease.token }];
      let made: ReturnType<typeof createBackend>;
      try {
        made = await backendOnceFree(o, p, lease.token);
      } catch (e) {
        if (!(e instanceof DataDirInUseError)) throw e;
        // Another live process drives the minicluster: leading without it would fight it for its tasks.
        p.log.error("cannot lead: the minicluster's data dir is in use", { reason: e.message });
        await keeper.stop(true);
        lost(e.message);
        return;
      }
      backend = made.backend;
      minicluster = made.minicluster;
      hm = new HostManager({
        clock: p.clock,
        transport: p.transport,
        backend,
        metrics: p.metrics,
        store: p.store,
        self: "hostmgr",
        jobmgr: "jobmgr",
        resmgr: "resmgr",
      }, {
        ...DEFAULT_HOSTMGR_CONFIG,
        trackLeases: true,
        clusterMaintenance: made.mesos !== undefined,
        ...o.hostmgr,
      });
      // Read under the lease: every write of the leader before is committed or fenced off by now.
      hm.recover(await p.store.hostMaintenance());
      hm.recoverHostPools(await p.store.hostPools());
      p.transport.register("hostmgr", hm);
      hm.start();
      if (made.mesos) {
        maintenance = new MesosMaintenance(made.mesos, hm, (msg, f) => p.log(msg, f));
        maintenance.start();
      }
      await p.registry.refresh();
      p.log("leading", { role: "hostmgr", token: lease.token, backend: o.backend ?? "minicluster" });
    },
    onLost: (why) => {
      p.log.error("lost the hostmgr lease; exiting", { reason: why });
      lost(why);
    },
  });
  // New job managers need the host inventory; a new resource manager the cluster capacity.
  const jobmgrs = new Set<string>();
  p.registry.onChange(() => {
    const now = new Set(p.registry.membersOf("jobmgr").map((m) => m.instanceId));
    const fresh = [...now].some((id) => !jobmgrs.has(id));
    jobmgrs.clear();
    for (const id of now) jobmgrs.add(id);
    if (fresh && hm) hm.receive({ kind: "peer-changed", role: "jobmgr" });
  });
  watchDepartures(p, ["placement"], (role, gone) => hm?.receive({ kind: "peer-changed", role, gone }));
  watchLeaders(p, (role) => {
    if (role === "resmgr" && hm) hm.receive({ kind: "peer-changed", role: "resmgr" });
  });
  p.hooks = {
    health: () => ({ leader: keeper.held, hosts: hm?.hosts.length ?? 0 }),
    routes: async (req, url) => {
      if (!hm || !backend) return undefined;
      if (req.method === "GET" && url.pathname.startsWith("/sandbox/")) {
        return await sandboxFile(backend, url);
      }
      if (req.method === "POST" && url.pathname === "/admin/agents") return await addAgent(minicluster, req);
      return undefined;
    },
  };
  p.metrics.collect(() => {
    p.metrics.gauge("peloton_leader").set(keeper.held ? 1 : 0);
    p.metrics.gauge("peloton_hostmgr_status_batches_awaiting_jobmgr").set(router.waiting);
  });
  daemonGauges(p.metrics, () => ({ hostmgr: hm }));
  keeper.start();
  return {
    process: p,
    lost: lostPromise,
    stop: () =>
      p.close(async () => {
        await maintenance?.stop();
        await backend?.stop();
        await keeper.stop(true);
      }),
  };
}

/**
 * The backend, once its data dir is free: a leader that lost its lease a moment ago may still be exiting.
 * Waits a third of the lease's TTL at most, so that the lease is renewed in time; then `DataDirInUseError`.
 */
async function backendOnceFree(
  o: HostmgrDaemonOptions,
  p: DaemonProcess,
  token: number,
): Promise<ReturnType<typeof createBackend>> {
  const deadline = performance.now() + o.leaseTtlMs / 3;
  for (let waited = false;; waited = true) {
    try {
      return createBackend(
        { ...o, dataDir: o.dataDir, log: (line) => p.log(line) },
        new StoreFrameworkIdStore(p.cluster),
      );
    } catch (e) {
      if (!(e instanceof DataDirInUseError) || performance.now() >= deadline) throw e;
      if (!waited) p.log("waiting for the minicluster's data dir", { reason: e.message, token });
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
