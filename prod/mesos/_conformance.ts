/** The conformance harness: one test body, run on the emulator and (with MESOS_MASTER_URL) on a real master. */
import { CONTENT_TYPE_JSON, type Event, STREAM_ID_HEADER } from "./protocol.ts";
import {
  frameworkInfo,
  post,
  RawSubscription,
  shapeProblems,
  startTestMaster,
  type TestMaster,
  type TestMasterOptions,
} from "./_testing.ts";

/** Set to run the conformance suites against a real master as well. */
export const REAL_MASTER_URL = Deno.env.get("MESOS_MASTER_URL");

/** Where a conformance test runs: the emulator (with its fault hooks) or a real master. */
export interface Target {
  url: string;
  /** The emulator, when the target is one. */
  emu?: TestMaster;
  /** How long "nothing happens" windows last: a real master allocates every second, not every 10 ms. */
  quietMs: number;
  /** Heartbeat interval, for tests that wait for a second heartbeat. */
  heartbeatMs: number;
  session: Session;
}

/** Subscriptions and calls of one test; frameworks are torn down at the end (real masters keep them). */
export class Session {
  readonly subs: RawSubscription[] = [];
  readonly invalid = new Set<string>();
  readonly frameworks = new Map<string, string>();
  /** Calls our client sent and events it received (checked like the raw ones). */
  readonly sent: unknown[] = [];
  readonly seen: Event[] = [];
  constructor(readonly url: string) {}

  async subscribe(
    info: Record<string, unknown> = frameworkInfo(),
    frameworkId?: string,
    suppressed?: string[],
  ) {
    const call: Record<string, unknown> = {
      type: "SUBSCRIBE",
      subscribe: {
        framework_info: frameworkId ? { ...info, id: { value: frameworkId } } : info,
        ...(suppressed ? { suppressed_roles: suppressed } : {}),
      },
    };
    if (frameworkId) call.framework_id = { value: frameworkId };
    const sub = await RawSubscription.open(this.url, call);
    this.subs.push(sub);
    if (sub.response.status !== 200) throw new Error(`SUBSCRIBE answered ${sub.response.status}`);
    const subscribed = await sub.nextOf("SUBSCRIBED");
    const id = subscribed.subscribed.framework_id.value;
    this.frameworks.set(id, sub.streamId);
    return { sub, frameworkId: id, streamId: sub.streamId };
  }

  /** A call with the framework id and stream id filled in; `invalid` ones are left out of shape checks. */
  async call(
    frameworkId: string,
    streamId: string | undefined,
    call: Record<string, unknown>,
    invalid = false,
  ) {
    const body = { framework_id: { value: frameworkId }, ...call };
    if (invalid) this.invalid.add(JSON.stringify(body));
    const headers: Record<string, string> = { "content-type": CONTENT_TYPE_JSON };
    if (streamId !== undefined) headers[STREAM_ID_HEADER] = streamId;
    return await post(this.url, body, headers);
  }

  raw(body: unknown, headers: Record<string, string>, invalid = true) {
    if (invalid) this.invalid.add(JSON.stringify(body));
    return post(this.url, body, headers);
  }

  async close(): Promise<void> {
    for (const [id, streamId] of this.frameworks) {
      await this.call(id, streamId, { type: "TEARDOWN" }).catch(() => {});
    }
    for (const s of this.subs) await s.close();
  }
}

/**
 * Registers one conformance test for the emulator and, when MESOS_MASTER_URL is set, for that master
 * (otherwise the second registration is listed as ignored). Every call sent and event received is
 * checked against the reference shapes: strictly on the emulator, leniently on a real master.
 */
export function conformance(
  name: string,
  fn: (t: Target) => Promise<void>,
  options: { emulatorOnly?: boolean; master?: TestMasterOptions } = {},
): void {
  Deno.test(`${name} [emulator]`, async () => {
    const emu = await startTestMaster(options.master);
    const session = new Session(emu.url);
    try {
      await fn({
        url: emu.url,
        emu,
        quietMs: 300,
        heartbeatMs: emu.master.http.heartbeatIntervalMs,
        session,
      });
    } finally {
      await session.close();
      await emu.stop();
    }
    const calls = emu.calls.filter((c) => !session.invalid.has(JSON.stringify(c)));
    const problems = await shapeProblems([...calls, ...session.sent], emu.events);
    if (problems.length) throw new Error(`shape problems:\n${problems.join("\n")}`);
  });
  if (options.emulatorOnly) return;
  Deno.test({
    name: `${name} [MESOS_MASTER_URL]`,
    ignore: !REAL_MASTER_URL,
    async fn() {
      const session = new Session(REAL_MASTER_URL!);
      try {
        await fn({ url: REAL_MASTER_URL!, quietMs: 3000, heartbeatMs: 15_000, session });
      } finally {
        await session.close();
      }
      const received = [...session.subs.flatMap((s) => s.received), ...session.seen];
      const problems = [
        ...await shapeProblems(session.sent, []),
        ...await shapeProblems([], received, false),
      ];
      if (problems.length) throw new Error(`shape problems:\n${problems.join("\n")}`);
    },
  });
}

if (!REAL_MASTER_URL) {
  console.log("Mesos conformance: not run against a real master (set MESOS_MASTER_URL); emulator only.");
}

/** A hand-driven framework on a raw subscription, for tests of the master's rules. */
export class RawFramework {
  private constructor(
    readonly t: Target,
    readonly sub: RawSubscription,
    readonly frameworkId: string,
    readonly streamId: string,
  ) {}

  static async subscribe(t: Target, info = frameworkInfo(), frameworkId?: string): Promise<RawFramework> {
    const s = await t.session.subscribe(info, frameworkId);
    return new RawFramework(t, s.sub, s.frameworkId, s.streamId);
  }

  async call(call: Record<string, unknown>, invalid = false): Promise<{ status: number; body: string }> {
    return await this.t.session.call(this.frameworkId, this.streamId, call, invalid);
  }

  async offers(timeoutMs = 5000) {
    return (await this.sub.nextOf("OFFERS", timeoutMs)).offers.offers;
  }

  /** ACCEPTs `offerIds` with one LAUNCH of command tasks; resources default to 0.1 cpus and 32 MB. */
  async launch(
    offerIds: string[],
    agentId: string,
    tasks: { taskId: string; command: string; cpus?: number; memMb?: number; killGraceMs?: number }[],
    filters?: { refuse_seconds: number },
  ): Promise<void> {
    const task_infos = tasks.map((t) => ({
      name: t.taskId,
      task_id: { value: t.taskId },
      agent_id: { value: agentId },
      resources: [
        { name: "cpus", type: "SCALAR", scalar: { value: t.cpus ?? 0.1 }, role: "*" },
        { name: "mem", type: "SCALAR", scalar: { value: t.memMb ?? 32 }, role: "*" },
      ],
      command: { shell: true, value: t.command },
      ...(t.killGraceMs !== undefined
        ? { kill_policy: { grace_period: { nanoseconds: t.killGraceMs * 1e6 } } }
        : {}),
    }));
    const accept: Record<string, unknown> = {
      offer_ids: offerIds.map((value) => ({ value })),
      operations: [{ type: "LAUNCH", launch: { task_infos } }],
    };
    if (filters) accept.filters = filters;
    const r = await this.call({ type: "ACCEPT", accept });
    if (r.status !== 202) throw new Error(`ACCEPT answered ${r.status} ${r.body}`);
  }

  /** The next UPDATE for a task (optionally in a given state). */
  async update(taskId: string, state?: string, timeoutMs = 5000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = await this.sub.nextOf("UPDATE", Math.max(1, deadline - Date.now()));
      const s = e.update.status;
      if (s.task_id.value === taskId && (state === undefined || s.state === state)) return s;
    }
  }

  async ack(s: { agent_id?: { value: string }; task_id: { value: string }; uuid?: string }): Promise<void> {
    const r = await this.call({
      type: "ACKNOWLEDGE",
      acknowledge: { agent_id: s.agent_id, task_id: s.task_id, uuid: s.uuid },
    });
    if (r.status !== 202) throw new Error(`ACKNOWLEDGE answered ${r.status} ${r.body}`);
  }

  /** Updates for a task until it reaches `state`, acknowledging each. */
  async ackUntil(taskId: string, state: string, timeoutMs = 5000) {
    for (;;) {
      const s = await this.update(taskId, undefined, timeoutMs);
      if (s.uuid) await this.ack(s);
      if (s.state === state) return s;
    }
  }

  async reconcile(tasks: { taskId: string; agentId?: string }[]): Promise<void> {
    const list = tasks.map((t) => ({
      task_id: { value: t.taskId },
      ...(t.agentId ? { agent_id: { value: t.agentId } } : {}),
    }));
    const r = await this.call({ type: "RECONCILE", reconcile: list.length ? { tasks: list } : {} });
    if (r.status !== 202) throw new Error(`RECONCILE answered ${r.status} ${r.body}`);
  }
}

/** Operator API call on the emulator (or a real master). */
export async function operator(
  url: string,
  call: Record<string, unknown>,
): Promise<{ status: number; body: string }> {
  return await post(url, call, { "content-type": CONTENT_TYPE_JSON, accept: CONTENT_TYPE_JSON }, "/api/v1");
}
