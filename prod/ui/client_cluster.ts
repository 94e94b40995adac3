/**
 * Browser code of the web UI, part 4: the cluster views (summary header, resource-pool tree, hosts with
 * their host pools) and the host actions (maintenance, moving a host to another host pool, moving a number of
 * hosts the host manager picks from one host pool to another). Runs in the browser (see client_dom.ts for the
 * rules).
 */
import type {
  HostInfoJson,
  HostPoolJson,
  ResourceLimits,
  RespoolInfoJson,
  RespoolUsage,
  RowToggle,
  Snapshot,
  UiAction,
} from "./api_types.ts";
import {
  badge,
  count,
  h,
  num,
  resourceUnit,
  scrolling,
  statsLine,
  table,
  type UiChild,
  type UiElement,
} from "./client_dom.ts";
import { hasQueuedDemand, isLeafPool, poolQueueRow, queueToggle } from "./client_pool_queue.ts";
import { type Act, actionButton, isTerminalJob, matches, Rpc } from "./client_views.ts";

function sumHosts(
  hosts: HostInfoJson[],
  pick: (h: HostInfoJson) => ResourceLimits | undefined,
  key: keyof ResourceLimits,
) {
  return hosts.reduce((s, x) => s + (pick(x)?.[key] ?? 0), 0);
}

/** Counts of `keys` as "A 3 · B 1", largest first. */
function countBy(keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}

export function summaryView(snap: Snapshot): UiElement {
  const card = (label: string, id: string, ...value: UiChild[]) =>
    h(
      "div",
      { class: "card", id: `summary-${id}` },
      h("div", { class: "k" }, label),
      h("div", { class: "v" }, ...value),
    );
  const hosts = snap.hosts, counts = snap.jobCounts, active = snap.activeJobs, pools = snap.pools;
  const cards: UiElement[] = [];
  if (hosts) {
    cards.push(
      card(
        "Hosts",
        "hosts",
        String(hosts.length),
        " ",
        statsLine(countBy(hosts.map((x) => x.state.replace(/^HOST_STATE_/, "")))),
      ),
    );
    // Capacity is what takes work: UP hosts. The others' resources are shown apart, not as room.
    const up = hosts.filter((x) => x.state === "HOST_STATE_UP");
    const out = hosts.filter((x) => x.state !== "HOST_STATE_UP");
    const total = (k: keyof ResourceLimits, of = up) => sumHosts(of, (x) => x.resources?.total, k);
    const free = (k: keyof ResourceLimits) => sumHosts(up, (x) => x.resources?.free, k);
    const aside = (k: keyof ResourceLimits, unit: string) => {
      const maintenance = out.filter((x) => /DRAIN|DOWN/.test(x.state));
      const other = out.filter((x) => !/DRAIN|DOWN/.test(x.state));
      return [
        maintenance.length ? `${num(total(k, maintenance))}${unit} in maintenance` : "",
        other.length ? `${num(total(k, other))}${unit} on hosts not answering` : "",
      ].filter((t) => t).map((t) => h("span", { class: "aside" }, t));
    };
    const used = (
      k: keyof ResourceLimits,
      unit: string,
    ) => [`${num(total(k) - free(k))} / ${num(total(k))}${unit}`, ...aside(k, unit)];
    const upNote = out.length ? `Hosts UP (${up.length} of ${hosts.length}): the hosts that take work` : "";
    const resource = (label: string, id: string, k: keyof ResourceLimits, unit: string) => {
      const c = card(label, id, ...used(k, unit));
      if (upNote) c.setAttribute("title", upNote);
      return c;
    };
    cards.push(resource("CPU used", "cpu", "cpuLimit", " cores"));
    cards.push(resource("Memory used", "memory", "memLimitMb", " MB"));
    if (total("gpuLimit", hosts) > 0) cards.push(resource("GPU used", "gpu", "gpuLimit", " GPUs"));
  } else cards.push(card("Hosts", "hosts", "—"));
  if (counts) {
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    cards.push(card("Jobs", "jobs", String(total), " ", statsLine(counts)));
  } else cards.push(card("Jobs", "jobs", "—"));
  if (active) {
    const tasks: Record<string, number> = {};
    for (const j of active.records) {
      if (isTerminalJob(j.runtime.state)) continue;
      for (const [s, n] of Object.entries(j.runtime.taskStats ?? {})) tasks[s] = (tasks[s] ?? 0) + n;
    }
    const of = active.records.length, all = active.pagination.total;
    const label = of < all ? `Tasks of the newest ${of} of ${all} active jobs` : "Tasks of active jobs";
    cards.push(card(label, "tasks", statsLine(tasks)));
  }
  const poolsCard = card("Resource pools", "pools", pools ? String(poolsUnderRoot(pools)) : "—");
  poolsCard.setAttribute("title", "Pools under the root pool (/); the root is not counted");
  cards.push(poolsCard);
  return h("div", { class: "cards" }, ...cards);
}

/**
 * How many pools there are besides the root (/), which every cluster has: the pools operators made. The
 * summary's card and the pools view's heading both show it, so they agree.
 */
export function poolsUnderRoot(pools: RespoolInfoJson[]): number {
  return pools.filter((p) => p.path.value !== "/").length;
}

/** Pools in tree order (each parent before its children, siblings by name) with their depth. */
export function poolTree(pools: RespoolInfoJson[]): { pool: RespoolInfoJson; depth: number }[] {
  const byId = new Map(pools.map((p) => [p.id.value, p]));
  const out: { pool: RespoolInfoJson; depth: number }[] = [];
  const seen = new Set<string>();
  const visit = (p: RespoolInfoJson, depth: number) => {
    if (seen.has(p.id.value)) return;
    seen.add(p.id.value);
    out.push({ pool: p, depth });
    const kids = p.children.map((c) => byId.get(c.value)).filter((k): k is RespoolInfoJson =>
      k !== undefined
    );
    for (const k of kids.sort((a, b) => a.config.name.localeCompare(b.config.name))) visit(k, depth + 1);
  };
  for (const root of pools.filter((p) => !p.parent || !byId.has(p.parent.value))) visit(root, 0);
  for (const p of pools) visit(p, 0);
  return out;
}

/** The resource-pool tree; `queues` says which leaf pools show what waits in their queues. */
export function poolsView(snap: Snapshot, queues: RowToggle<string>): UiElement {
  // A pool queue's name: what waits in it. (Client code is shipped function by function: no module constants.)
  const QUEUE_LABELS: Record<string, string> = {
    pending: "Waiting",
    nonPreemptible: "Non-preemptible tasks waiting",
    controller: "Controller tasks waiting",
    revocable: "Revocable tasks waiting",
  };
  if (!snap.pools) {
    return h("p", { class: "muted" }, "Resource pools could not be loaded (see the error above).");
  }
  const jobsIn = new Map<string, number>();
  const active = snap.activeJobs;
  const jobNames = new Map((active?.records ?? []).map((j) => [j.id.value, j.config.name]));
  // A pool counts the active jobs of its whole subtree, as its allocation adds up its leaves'.
  const parentOf = new Map(snap.pools.map((p) => [p.id.value, p.parent?.value]));
  for (const j of active?.records ?? []) {
    if (isTerminalJob(j.runtime.state)) continue;
    const seen = new Set<string>();
    for (let id = j.config.respoolID?.value; id !== undefined && !seen.has(id); id = parentOf.get(id)) {
      seen.add(id);
      jobsIn.set(id, (jobsIn.get(id) ?? 0) + 1);
    }
  }
  const headers = [
    "Pool",
    "Resource",
    "Reservation",
    "Limit",
    "Share",
    "Allocation",
    "Slack",
    "Entitlement",
    "Demand",
  ];
  const groups = poolTree(snap.pools).map(({ pool, depth }) => {
    const open = queues.open.has(pool.id.value);
    const kinds = ["cpu", "memory", "disk", "gpu"];
    const rows = kinds.map((kind, i) => {
      const cfg = pool.config.resources.find((r) => r.kind === kind);
      const use: RespoolUsage = (pool.usage ?? []).find((u) => u.kind === kind) ?? { kind };
      const cells: UiChild[] = [
        kind,
        cfg ? num(cfg.reservation) : "—",
        cfg ? num(cfg.limit) : "—",
        cfg ? num(cfg.share) : "—",
        num(use.allocation),
        num(use.slack),
        num(use.entitlement),
        num(use.demand),
      ];
      const first = i === 0
        ? [h(
          "td",
          { rowspan: kinds.length, class: `pool depth-${Math.min(depth, 6)}` },
          h("strong", { class: "long" }, pool.path.value),
          h(
            "div",
            { class: "muted" },
            pool.children.length ? plural(pool.children.length, "child pool") : "leaf",
            active ? ` · ${plural(jobsIn.get(pool.id.value) ?? 0, "active job")}` : "",
          ),
          h("div", { class: "muted" }, pool.config.policy ?? ""),
          ...Object.entries(snap.poolWaits?.[pool.id.value]?.queues ?? {}).flatMap(([queue, why]) =>
            why
              ? [h("div", { class: "wait", "data-queue": queue }, `${QUEUE_LABELS[queue] ?? queue}: ${why}`)]
              : []
          ),
          // An opened queue keeps its button while it empties, so it can be closed again.
          hasQueuedDemand(pool) || (open && isLeafPool(pool)) ? queueToggle(pool, queues) : null,
        )]
        : [];
      return h(
        "tr",
        { "data-pool": pool.path.value, "data-kind": kind },
        ...first,
        ...cells.map((c, j) => h("td", j === 0 ? { title: resourceUnit(kind) } : {}, c)),
      );
    });
    const queue = open && isLeafPool(pool)
      ? poolQueueRow(pool, snap.poolQueues?.[pool.id.value], jobNames, headers.length)
      : null;
    return h("tbody", { class: "pool-group" }, ...rows, queue);
  });
  return h(
    "section",
    {},
    h("h2", {}, `Resource pools (${poolsUnderRoot(snap.pools)} under the root)`),
    h(
      "p",
      { class: "muted" },
      "CPU in cores, memory and disk in MB. A parent pool's allocation is the sum of its leaves'.",
      active && active.records.length < active.pagination.total
        ? ` Active jobs counted: the newest ${active.records.length} of ${active.pagination.total}.`
        : "",
    ),
    scrolling(h(
      "table",
      { class: "pools" },
      h("thead", {}, h("tr", {}, ...headers.map((t) => h("th", {}, t)))),
      ...groups,
    )),
  );
}

/** "1 active job", "2 active jobs". */
export function plural(n: number, noun: string): string {
  return `${count(n)} ${noun}${n === 1 ? "" : "s"}`;
}

/** What maintenance means for a host in a state. */
export function maintenanceOf(state: string): string {
  switch (state) {
    case "HOST_STATE_UP":
      return "none";
    case "HOST_STATE_DRAINING":
      return "draining: tasks moving off";
    case "HOST_STATE_DRAINED":
      return "drained: its machine going down";
    case "HOST_STATE_DOWN":
      return "down: in maintenance";
    default:
      return "unknown: host unreachable";
  }
}

/** The host's actions; `pools` are the host pools it may be moved to (its own is left out). */
export function hostActions(x: HostInfoJson, pools: string[] = []): UiAction[] {
  const up = x.state === "HOST_STATE_UP";
  // Only a host whose machine is down completes, as in Peloton: a DRAINING or DRAINED one is refused (its
  // refusal is shown if it races).
  const down = x.state === "HOST_STATE_DOWN";
  const others = pools.filter((p) => p !== x.currentPool);
  const state = x.state.replace(/^HOST_STATE_/, "");
  const noStart = up
    ? undefined
    : /DRAIN|DOWN/.test(x.state)
    ? `Host is in maintenance already (${state})`
    : `Host is ${state}: only an UP host starts maintenance`;
  const noComplete = down
    ? undefined
    : up
    ? "Host is UP: it is not in maintenance"
    : /DRAIN/.test(x.state)
    ? `Host is ${state}: maintenance completes once its machine is down (DOWN)`
    : `Host is ${state}: only a host in maintenance whose machine is down (DOWN) completes it`;
  // "its 1 task is", "its 2 tasks are": the count and the verb agree.
  const tasks = x.tasks ?? 0, one = tasks === 1;
  const noMove = !x.currentPool
    ? "Host is in no host pool (in maintenance with its agent gone)"
    : !others.length
    ? `There is no host pool but ${x.currentPool} to move it to`
    : undefined;
  return [
    {
      label: "Start maintenance",
      name: `Start maintenance on ${x.hostname}`,
      question: `Start maintenance on ${x.hostname}? It takes no new work and its ${plural(tasks, "task")} ` +
        `${one ? "is" : "are"} moved off.`,
      procedure: `${Rpc.HOST}::StartMaintenance`,
      body: { hostname: x.hostname },
      describe: () => `Host ${x.hostname}: maintenance started`,
      disabled: !up,
      disabledWhy: noStart,
      danger: true,
    },
    {
      label: "Complete maintenance",
      name: `Complete maintenance on ${x.hostname}`,
      question: `Complete maintenance on ${x.hostname}? It will be UP and take work again.`,
      procedure: `${Rpc.HOST}::CompleteMaintenance`,
      body: { hostname: x.hostname },
      describe: () => `Host ${x.hostname}: maintenance completed`,
      disabled: !down,
      disabledWhy: noComplete,
    },
    {
      label: "Move to pool…",
      name: `Move ${x.hostname} to another host pool…`,
      question: `Move ${x.hostname} out of host pool ${x.currentPool ?? "—"}? Its ${plural(tasks, "task")} ` +
        `${one ? "keeps" : "keep"} running there.`,
      procedure: `${Rpc.HOST}::ChangeHostPool`,
      // The pool it is in, as the server must find it: a move made meanwhile elsewhere is refused, not undone.
      body: { hostname: x.hostname, sourcePool: x.currentPool },
      choice: { label: "To host pool", field: "destinationPool", options: others },
      describe: (_, sent) => `Host ${x.hostname} moved to host pool ${sent.destinationPool}`,
      // A host in maintenance whose agent is gone is in no pool the server knows of.
      disabled: noMove !== undefined,
      disabledWhy: noMove,
    },
  ];
}

/**
 * Every host pool by name with how many hosts it has and how many of them are UP: the pools ListHostPools
 * lists (`pools`, empty ones too; undefined when it did not load) and any other a host is in. A host counts in
 * the pool QueryHosts gives it, so the summary agrees with the table's column.
 */
export function hostPoolCounts(
  hosts: HostInfoJson[],
  pools: HostPoolJson[] | undefined,
): { name: string; hosts: number; up: number }[] {
  const out = new Map<string, { name: string; hosts: number; up: number }>();
  const pool = (name: string) => {
    let p = out.get(name);
    if (!p) out.set(name, p = { name, hosts: 0, up: 0 });
    return p;
  };
  for (const p of pools ?? []) pool(p.name);
  for (const x of hosts) {
    if (!x.currentPool) continue;
    const p = pool(x.currentPool);
    p.hosts++;
    if (x.state === "HOST_STATE_UP") p.up++;
  }
  return [...out.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * A host pool's "Move hosts…" (MoveHosts): the operator picks the destination and how many in the confirm step,
 * and the host manager picks which hosts. `pools` are ListHostPools' as the page last loaded them (undefined
 * when they did not load): they bound how many the operator may ask for. As the CLI's `host pool move` does,
 * the request gives the number of hosts each pool is to have after the move, from their sizes read again
 * (ListHostPools) when the operator presses Confirm, so a move made meanwhile elsewhere changes nothing of
 * what this one does; one made between that read and the move is refused by the host manager.
 */
export function moveHostsAction(source: string, pools: HostPoolJson[] | undefined): UiAction {
  const sizes = new Map((pools ?? []).map((p) => [p.name, p.hosts.length]));
  const has = sizes.get(source) ?? 0;
  const others = [...sizes.keys()].filter((n) => n !== source).sort();
  const hosts = (n: unknown) => `${n} host${n === 1 ? "" : "s"}`;
  const why = !pools
    ? "The host pools could not be loaded (see the error above)"
    : !sizes.has(source)
    ? `Host pool ${source} is not listed by ListHostPools`
    : has === 0
    ? `Host pool ${source} has no hosts to move`
    : !others.length
    ? `There is no host pool but ${source} to move hosts to`
    : undefined;
  return {
    label: "Move hosts…",
    name: `Move hosts out of host pool ${source}…`,
    question: `Move hosts out of host pool ${source} (${hosts(has)})? The host manager picks which: idle, ` +
      "usable ones first (UP, fewest tasks, most free CPU and memory), hosts in maintenance last. Their " +
      "tasks keep running.",
    procedure: `${Rpc.HOST}::MoveHosts`,
    body: { sourcePool: source },
    choice: { label: "To host pool", field: "destinationPool", options: others },
    amount: { label: `Hosts to move (1 to ${has})`, max: has },
    prepare: async ({ choice = "", amount = 0 }, call) => {
      const now = await call<{ pools?: HostPoolJson[] }>(`${Rpc.HOST}::ListHostPools`, {});
      const size = new Map((now.pools ?? []).map((p) => [p.name, p.hosts.length]));
      const src = size.get(source), dest = size.get(choice);
      if (src === undefined) throw new Error(`host pool ${source} no longer exists`);
      if (dest === undefined) throw new Error(`host pool ${choice} no longer exists`);
      if (amount > src) {
        throw new Error(`cannot move ${hosts(amount)} out of host pool ${source}: it has ${hosts(src)} now`);
      }
      return {
        sourcePool: source,
        srcPoolDesiredHosts: src - amount,
        destinationPool: choice,
        destPoolDesiredHosts: dest + amount,
      };
    },
    explain: (error, sent) =>
      /PoolDesiredHosts/.test(error)
        ? `host pool ${source} or ${sent.destinationPool} changed between reading their sizes and the move; ` +
          `no host moved, try again (the host manager said: ${error})`
        : error,
    describe: (r, sent) => {
      const moved = Array.isArray(r.hosts) ? r.hosts.map(String) : [];
      return moved.length
        ? `Moved ${hosts(moved.length)} from host pool ${source} to ${sent.destinationPool}: ${
          moved.join(", ")
        }`
        : `No host moved: host pools ${source} and ${sent.destinationPool} had the sizes asked already ` +
          `(${hosts(sent.srcPoolDesiredHosts)} and ${hosts(sent.destPoolDesiredHosts)})`;
    },
    disabled: why !== undefined,
    disabledWhy: why,
  };
}

/**
 * The host pools line above the hosts table: each pool, its hosts and how many are UP, and its Move hosts…
 * (`pools` are ListHostPools', which the move's request is worked out from).
 */
export function hostPoolsView(
  counts: { name: string; hosts: number; up: number }[],
  pools: HostPoolJson[] | undefined,
  act: Act,
): UiElement {
  return h(
    "div",
    { class: "host-pools", id: "host-pools" },
    h("span", { class: "muted" }, `Host pools (${counts.length}):`),
    ...counts.map((p) =>
      h(
        "span",
        { class: "host-pool-entry" },
        h(
          "span",
          { class: p.hosts ? "host-pool" : "host-pool empty", "data-pool": p.name },
          h("strong", {}, p.name),
          ` ${p.hosts} ${p.hosts === 1 ? "host" : "hosts"} · ${p.up} UP`,
        ),
        actionButton(moveHostsAction(p.name, pools), act),
      )
    ),
  );
}

/** A host's pool; "current → desired" while a move is under way (Peloton's host mover; ours moves at once). */
function poolOfHost(x: HostInfoJson): string {
  const current = x.currentPool ?? "—";
  return x.desiredPool && x.desiredPool !== x.currentPool ? `${current} → ${x.desiredPool}` : current;
}

export function hostsView(snap: Snapshot, filter: string, act: Act): UiElement {
  if (!snap.hosts) return h("p", { class: "muted" }, "Hosts could not be loaded (see the error above).");
  const hosts = snap.hosts.slice().sort((a, b) => a.hostname.localeCompare(b.hostname));
  const shown = hosts.filter((x) =>
    matches(filter, [
      x.hostname,
      x.agentId,
      x.state,
      x.currentPool,
      x.desiredPool,
      ...(x.labels ?? []).map((l) => `${l.key}=${l.value}`),
    ])
  );
  const pools = hostPoolCounts(hosts, snap.hostPools);
  const poolNames = pools.map((p) => p.name);
  const pair = (x: HostInfoJson, k: keyof ResourceLimits) =>
    `${num(x.resources?.free?.[k])} / ${num(x.resources?.total?.[k])}`;
  // A host may carry many labels: the cell shows their first lines, the tooltip every one (see the CSS).
  const labels = (x: HostInfoJson) => {
    const all = (x.labels ?? []).map((l) => `${l.key}=${l.value}`);
    return h("span", { class: "labels", title: all.join("\n") || undefined }, all.join(", "));
  };
  return h(
    "section",
    {},
    h("h2", {}, `Hosts (${shown.length}${shown.length === hosts.length ? "" : ` of ${hosts.length}`})`),
    hostPoolsView(pools, snap.hostPools, act),
    table(
      [
        "Host",
        "Agent",
        "State",
        "Pool",
        "Maintenance",
        "CPU free / total",
        "Memory MB free / total",
        "Disk MB free / total",
        "GPU free / total",
        "Tasks",
        "Labels",
        "Actions",
      ],
      shown.map((x) => [
        h("strong", { class: "long" }, x.hostname),
        h("code", { class: "long" }, x.agentId ?? ""),
        badge(x.state),
        h("span", { class: "path" }, poolOfHost(x)),
        h("span", { class: "maintenance" }, maintenanceOf(x.state)),
        pair(x, "cpuLimit"),
        pair(x, "memLimitMb"),
        pair(x, "diskLimitMb"),
        pair(x, "gpuLimit"),
        x.tasks ?? 0,
        labels(x),
        h("div", { class: "actions" }, ...hostActions(x, poolNames).map((a) => actionButton(a, act))),
      ]),
      filter ? "No host matches the filter" : "No hosts registered",
      "hosts",
    ),
  );
}

export const CLUSTER_CODE = [
  sumHosts,
  countBy,
  summaryView,
  poolsUnderRoot,
  poolTree,
  poolsView,
  plural,
  maintenanceOf,
  hostActions,
  hostPoolCounts,
  moveHostsAction,
  hostPoolsView,
  poolOfHost,
  hostsView,
];
