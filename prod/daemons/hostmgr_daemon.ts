/** `peloton hostmgr`: a host manager process, leader-elected through the store; the leader drives the cluster. */
import { DEFAULT_HOSTMGR_CONFIG, HostManager, type HostmgrConfig } from "../../core/hostmgr/hostmgr.ts";
import type { Lease } from "../cluster/cluster_store.ts";
import {
  addAgent,
  type BackendOptions,
  createBackend,
  type SandboxBackend,
  sandboxFile,
} from "../backends.ts";
import { MesosMaintenance } from "../mesos/maintenance_sync.ts";
import type { MesosBackend } from "../mesos/mesos_backend.ts";
import { StoreFrameworkIdStore } from "../mesos/framework_id_store.ts";
import { DataDirInUseError } from "../minicluster/data_dir_owner.ts";
import { serveSandboxFile } from "../minicluster/sandbox_http.ts";
import type { RunningDaemon } from "./jobmgr_daemon.ts";
import { JobmgrRouter } from "./jobmgr_router.ts";
import { watchDepartures, watchLeaders } from "./leaders.ts";
import { daemonGauges } from "./gauges.ts";
import { HOSTS_REGISTERING, type HostsGate, HostsRegistration, KeptMinicluster } from "./hostmgr_backend.ts";
import { type DaemonOptions, DaemonProcess } from "./process.ts";
import { LeaderRole } from "./leader_role.ts";
import type { Term } from "./term.ts";

export interface HostmgrDaemonOptions
  extends Omit<DaemonOptions, "role">, Omit<BackendOptions, "dataDir" | "log"> {
  hostmgr?: Partial<HostmgrConfig>;
}

/**
 * The leader subscribes to Mesos with the framework id kept in the store (so its tasks survive a change of
 * leader), puts back the maintenance kept in the store, rebuilds hosts from offers, and gets tasks back
 * from the job managers, which send theirs when they see the new leader; the backend then reconciles them.
 * Until the backend has reported its hosts, the host API answers unavailable and requests for hosts wait.
 *
 * A leader that loses its lease steps down: its host manager is thrown away and the process campaigns again.
 * A Mesos subscription is closed (Mesos keeps the tasks; the next leader subscribes with the same framework
 * id), while the minicluster, whose agents live in this process, runs on: it is taken up again by the next
 * term here, or stopped (its tasks ending as a dead leader's do) as soon as another process leads.
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
  let mesos: MesosBackend | undefined;
  let kept: KeptMinicluster | undefined;
  let maintenance: MesosMaintenance | undefined;
  let gate: HostsGate | undefined;
  /** A stop began: a term that starts now launches nothing either. */
  let launchesStopped = false;
  let lost!: (why: string) => void;
  const lostPromise = new Promise<string>((r) => (lost = r));

  const lead = async (t: Term, lease: Lease, leading: () => void) => {
    let made: { backend: SandboxBackend; mesos?: MesosBackend };
    if (kept) made = { backend: kept.view() };
    else {
      let fresh: ReturnType<typeof createBackend>;
      try {
        fresh = await backendOnceFree(o, p, lease.token);
      } catch (e) {
        if (!(e instanceof DataDirInUseError)) throw e;
        // Another live process drives the minicluster: leading without it would fight it for its tasks.
        p.log.error("cannot lead: the minicluster's data dir is in use", { reason: e.message });
        await role.keeper.stop(true);
        lost(e.message);
        return;
      }
      if (fresh.minicluster) kept = new KeptMinicluster(fresh.minicluster);
      made = kept ? { backend: kept.view() } : { backend: fresh.backend, mesos: fresh.mesos };
    }
    if (t.ended) return void await made.mesos?.stop();
    mesos = made.mesos;
    // Host requests and the host API wait for the backend's hosts: Mesos's first offers once subscribed, the
    // minicluster's agents at once; a backend connected without a host for a while has none to report.
    const registration = new HostsRegistration(made.backend, {
      clock: t.clock,
      connected: made.mesos ? () => made.mesos!.client.subscribed : () => true,
      ended: () => t.ended,
      log: (msg, fields) => p.log(msg, fields),
    });
    const watched = registration.backend;
    const h = new HostManager({
      clock: t.clock,
      transport: t.transport,
      backend: watched,
      metrics: p.metrics,
      store: t.store,
      self: "hostmgr",
      jobmgr: "jobmgr",
      resmgr: "resmgr",
    }, {
      ...DEFAULT_HOSTMGR_CONFIG,
      trackLeases: true,
      // Its hosts register after it starts: the job manager hears the full list once they have.
      holdInventory: true,
      clusterMaintenance: made.mesos !== undefined,
      ...o.hostmgr,
    });
    // Read under the lease: every write of the leader before is committed or fenced off by now.
    const [stored, pools] = await Promise.all([p.store.hostMaintenance(), p.store.hostPools()]);
    if (t.ended) return;
    h.recover(stored);
    h.recoverHostPools(pools);
    const g = gate = registration.hold(h);
    if (launchesStopped) h.stopLaunching();
    hm = h;
    backend = watched;
    p.transport.register("hostmgr", g);
    h.start();
    if (made.mesos) {
      maintenance = new MesosMaintenance(made.mesos, h, (msg, f) => p.log(msg, f));
      maintenance.start();
    }
    leading();
    registration.watch();
    await p.registry.refresh();
    p.log("leading", { role: "hostmgr", token: lease.token, backend: o.backend ?? "minicluster" });
  };

  const role = new LeaderRole(p, "hostmgr", o.leaseTtlMs, {
    lead,
    drop: async () => {
      if (gate) p.transport.unregister("hostmgr");
      gate = undefined;
      hm = undefined;
      backend = undefined;
      const m = maintenance, mb = mesos;
      maintenance = mesos = undefined;
      kept?.detach();
      await m?.stop();
      await mb?.stop();
    },
    steppedDownAnswer: "the host manager stepped down before it answered (it lost its lease); try again",
  });

  // New job managers need the host inventory; a new resource manager the cluster capacity.
  const jobmgrs = new Set<string>();
  p.registry.onChange(() => {
    const now = new Set(p.registry.membersOf("jobmgr").map((m) => m.instanceId));
    const fresh = [...now].some((id) => !jobmgrs.has(id));
    jobmgrs.clear();
    for (const id of now) jobmgrs.add(id);
    if (fresh && hm) hm.receive({ kind: "peer-changed", role: "jobmgr" });
    // Another process leads now: the minicluster kept since this one stepped down is its to take over.
    const leader = p.registry.holder("hostmgr");
    if (kept && !role.term && !role.stopping && leader && leader.holder !== p.instance) {
      const k = kept;
      kept = undefined;
      p.log("another host manager leads; stopping the minicluster for it", { leader: leader.holder });
      void k.stop();
    }
  });
  watchDepartures(p, ["placement"], (role, gone) => hm?.receive({ kind: "peer-changed", role, gone }));
  watchLeaders(p, (role) => {
    if (role === "resmgr" && hm) hm.receive({ kind: "peer-changed", role: "resmgr" });
  });
  p.hooks = {
    health: () => ({
      ...role.health(),
      hosts: hm?.hosts.length ?? 0,
      ...(gate && !gate.open ? { hostsRegistering: true } : {}),
    }),
    unhealthy: () => mesos?.fatalError(),
    unready: (role) => role === "hostmgr" && gate && !gate.open ? HOSTS_REGISTERING : undefined,
    notServing: () =>
      role.steppedDown
        ? `this host manager stepped down (${role.steppedDown}) and is campaigning again; try again`
        : HOSTS_REGISTERING,
    routes: async (req, url) => {
      if (!hm || !backend) return undefined;
      if (req.method === "GET" && url.pathname.startsWith("/sandbox/")) {
        // The minicluster's files are streamed as they are on disk; Mesos's come through its agents.
        return kept ? await serveSandboxFile(kept.minicluster, url) : await sandboxFile(backend, url);
      }
      if (req.method === "POST" && url.pathname === "/admin/agents") {
        return await addAgent(kept?.minicluster, req);
      }
      return undefined;
    },
  };
  p.metrics.collect(() => {
    p.metrics.gauge("peloton_leader").set(role.keeper.held ? 1 : 0);
    p.metrics.gauge("peloton_hostmgr_status_batches_awaiting_jobmgr").set(router.waiting);
  });
  daemonGauges(p.metrics, () => ({ hostmgr: hm }));
  role.campaign();
  return {
    process: p,
    lost: lostPromise,
    stop: () => {
      // First of all, before any step that waits: nothing more is leased or launched here (a task launched now
      // would only be ended by the stop); its job manager runs it again elsewhere, or on the next leader.
      launchesStopped = true;
      hm?.stopLaunching();
      return p.close(async () => {
        role.stopping = true;
        await maintenance?.stop();
        await mesos?.stop();
        await kept?.stop();
        await role.keeper.stop(true);
      });
    },
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
