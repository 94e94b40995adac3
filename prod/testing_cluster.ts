/** Test harness for separate daemon processes: start, SIGKILL and restart them; a private MariaDB to restart. */
import assert from "node:assert/strict";
import { shardOf } from "./cluster/registry.ts";
import { cli, startPeloton, type UpProcess, waitFor } from "./testing.ts";

export type Role = "jobmgr" | "resmgr" | "hostmgr" | "placement";

interface Daemon {
  role: Role;
  args: string[];
  proc: UpProcess;
}

/** The daemons of one cluster, by name (`jobmgr`, `jobmgr-2`, ...), sharing a store and a data dir. */
export class DaemonCluster {
  readonly daemons = new Map<string, Daemon>();

  constructor(
    readonly store: string,
    readonly dataDir: string,
    readonly leaseTtlMs: number,
    readonly extra: Partial<Record<Role, string[]>> = {},
  ) {}

  /** Starts (or starts again) a daemon and waits until it serves. */
  async start(name: string, role: Role = name.split("-")[0] as Role, args: string[] = []): Promise<string> {
    const all = [
      role,
      "--port",
      "0",
      "--data-dir",
      this.dataDir,
      "--store",
      this.store,
      "--lease-ttl-ms",
      String(this.leaseTtlMs),
      ...(this.extra[role] ?? []),
      ...args,
    ];
    const proc = await startPeloton(all, /serving at (http:\/\/\S+)/);
    this.daemons.set(name, { role, args, proc });
    return proc.url;
  }

  url(name: string): string {
    const d = this.daemons.get(name);
    if (!d) throw new Error(`no daemon ${name}`);
    return d.proc.url;
  }

  /** SIGKILL: no shutdown at all, as a crash. */
  async kill(name: string): Promise<void> {
    const d = this.daemons.get(name);
    if (!d) return;
    try {
      d.proc.child.kill("SIGKILL");
    } catch { /* already gone */ }
    await d.proc.child.status;
    await d.proc.stop();
  }

  /** Kills and starts again with the same arguments; returns the new URL. */
  async restart(name: string): Promise<string> {
    const d = this.daemons.get(name)!;
    await this.kill(name);
    return await this.start(name, d.role, d.args);
  }

  output(name: string): string {
    return this.daemons.get(name)?.proc.output() ?? "";
  }

  /** The last lines every daemon printed, for a failing test's report. */
  tail(lines = 25): string {
    return [...this.daemons].map(([name, d]) =>
      `--- ${name}\n${d.proc.output().trimEnd().split("\n").slice(-lines).join("\n")}`
    ).join("\n");
  }

  /** Graceful stop of everything (SIGINT), jobmgr first so nothing is left half-written. */
  async stopAll(): Promise<void> {
    const order = [...this.daemons.keys()].sort((a, b) => rank(a) - rank(b));
    // Every daemon is stopped even if one had to be killed; that one's error is thrown after.
    const failed: unknown[] = [];
    for (const name of order) await this.daemons.get(name)!.proc.stop().catch((e) => failed.push(e));
    this.daemons.clear();
    if (failed.length) throw failed[0];
  }
}

function rank(name: string): number {
  return ["jobmgr", "placement", "resmgr", "hostmgr"].indexOf(name.split("-")[0]);
}

/** A MariaDB server of the test's own (its data dir, a free port), so it can be killed and restarted. */
export class PrivateMariaDb {
  #child?: Deno.ChildProcess;
  constructor(readonly dir: string, readonly port: number) {}

  get url(): string {
    return `mysql://root@127.0.0.1:${this.port}/peloton`;
  }

  static async create(dir: string): Promise<PrivateMariaDb> {
    const port = freePort();
    // Its own tmpdir: a mariadbd deletes every `#sql*` file of its tmpdir when it starts, and in the shared
    // /tmp those are the CI MariaDB's live temporary tables (which crashed it).
    await Deno.mkdir(`${dir}/tmp`, { recursive: true });
    const install = await new Deno.Command("mariadb-install-db", {
      args: [
        "--no-defaults",
        `--datadir=${dir}/data`,
        `--user=${Deno.env.get("USER") ?? "root"}`,
        "--auth-root-authentication-method=normal",
        "--skip-test-db",
        `--tmpdir=${dir}/tmp`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!install.success) {
      throw new Error(`mariadb-install-db failed: ${new TextDecoder().decode(install.stderr)}`);
    }
    const db = new PrivateMariaDb(dir, port);
    await db.start();
    return db;
  }

  async start(): Promise<void> {
    this.#child = new Deno.Command("mariadbd", {
      args: [
        "--no-defaults",
        `--datadir=${this.dir}/data`,
        `--port=${this.port}`,
        "--bind-address=127.0.0.1",
        `--socket=${this.dir}/sock`,
        `--tmpdir=${this.dir}/tmp`,
        `--pid-file=${this.dir}/pid`,
        `--user=${Deno.env.get("USER") ?? "root"}`,
        "--skip-grant-tables",
        "--innodb-flush-log-at-trx-commit=1",
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        const conn = await Deno.connect({ hostname: "127.0.0.1", port: this.port });
        conn.close();
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`mariadbd on port ${this.port} did not start`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** SIGKILL: a crash; InnoDB recovers committed transactions on the next start. */
  async kill(): Promise<void> {
    try {
      this.#child?.kill("SIGKILL");
    } catch { /* gone */ }
    await this.#child?.status;
    this.#child = undefined;
  }

  async stop(): Promise<void> {
    try {
      this.#child?.kill("SIGTERM");
    } catch { /* gone */ }
    await this.#child?.status;
    this.#child = undefined;
  }
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** A batch job file: `count` instances of `command`, small enough to pack many per agent. */
export function batchJobYaml(name: string, count: number, command: string, cpu = 0.1): string {
  return [
    `name: ${name}`,
    "owningteam: team6",
    `instancecount: ${count}`,
    "sla:",
    "  priority: 1",
    "  preemptible: false",
    "defaultconfig:",
    "  resource:",
    `    cpulimit: ${cpu}`,
    "    memlimitmb: 4",
    "    disklimitmb: 1",
    "  command:",
    `    value: '${command}'`,
    "",
  ].join("\n");
}

/** The test MySQL server's URL (PELOTON_TEST_MYSQL_URL, default the CI's MariaDB) with a database of its own. */
export function testDatabaseUrl(label: string): string {
  const u = new URL(Deno.env.get("PELOTON_TEST_MYSQL_URL") || "mysql://root@127.0.0.1:3306/");
  const base = decodeURIComponent(u.pathname.replace(/^\//, "")) || "peloton_test";
  u.pathname = `/${base}_${label}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  return u.href;
}

/** `host pool list`: each host pool's hosts, by pool name. */
export async function poolsOf(url: string): Promise<Record<string, string[]>> {
  const r = await cli(url, "host", "pool", "list", "-j");
  assert.equal(r.code, 0, r.err);
  const pools = JSON.parse(r.out).pools as { name: string; hosts: string[] }[];
  return Object.fromEntries(pools.map((p) => [p.name, p.hosts]));
}

/** `host query` once `count` agents have registered (a restarted host manager answers once its lease is taken). */
export function registered<H extends { agentId: string }>(url: string, count: number): Promise<H[]> {
  return waitFor(`${count} agents registered`, async () => {
    const r = await cli(url, "host", "query", "-j");
    const list: H[] = r.code === 0 ? JSON.parse(r.out).hostInfos : [];
    return list.filter((h) => h.agentId).length === count ? list : undefined;
  });
}

/** A daemon's `/health` answer. */
export async function health(url: string): Promise<Record<string, unknown>> {
  return await (await fetch(`${url}/health`)).json();
}

/**
 * Starts a resource manager, a host manager of two agents, a placement engine and two job managers, and waits
 * (up to `timeoutMs`) until each job manager holds 8 of the 16 shards. Returns the job managers' URLs and a
 * new job id whose shard the first one owns.
 */
export async function twoJobManagers(
  cluster: DaemonCluster,
  timeoutMs: number,
): Promise<{ j1: string; j2: string; jobOfJ1: string }> {
  await cluster.start("resmgr");
  await cluster.start("hostmgr");
  await Promise.all(["placement", "jobmgr-1"].map((n) => cluster.start(n)));
  await cluster.start("jobmgr-2");
  const [j1, j2] = [cluster.url("jobmgr-1"), cluster.url("jobmgr-2")];
  const mine = await waitFor("both job managers to hold shards", async () => {
    const [a, b] = [await health(j1), await health(j2)];
    const [sa, sb] = [a.shards as number[], b.shards as number[]];
    return sa.length === 8 && sb.length === 8 ? sa : undefined;
  }, timeoutMs);
  let jobOfJ1 = crypto.randomUUID();
  while (!mine.includes(shardOf(jobOfJ1))) jobOfJ1 = crypto.randomUUID();
  return { j1, j2, jobOfJ1 };
}
