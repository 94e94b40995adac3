/** Test harness for the Mesos client, backend and emulator: fast masters, raw streams, event recorders. */
import assert from "node:assert/strict";
import type { HostInfo } from "../../core/ports/host_backend.ts";
import { seededPrng } from "../../core/ports/prng.ts";
import { Recorder } from "../backend_testing.ts";
import { MesosMaster, type MesosMasterOptions } from "./master.ts";
import { type Call, CONTENT_TYPE_JSON, type Event, SCHEDULER_PATH, STREAM_ID_HEADER } from "./protocol.ts";
import { MesosBackend, type MesosBackendOptions } from "./mesos_backend.ts";
import { RecordIODecoder } from "./recordio.ts";
import { MemoryFrameworkIdStore } from "./scheduler_client.ts";
import { loadReferenceSchema, type ShapeSchema } from "./shape_check.ts";

let schemaPromise: Promise<ShapeSchema> | undefined;
export function referenceSchema(): Promise<ShapeSchema> {
  return schemaPromise ??= loadReferenceSchema();
}

/** An emulator with millisecond timings, a temporary data dir, and every call and event recorded. */
export interface TestMaster {
  master: MesosMaster;
  url: string;
  calls: unknown[];
  events: Event[];
  dataDir: string;
  stop(): Promise<void>;
}

/** Emulator options for tests; `rechunkSeed` turns on random re-chunking of stream bytes from the start. */
export type TestMasterOptions = Partial<MesosMasterOptions> & { rechunkSeed?: number };

export async function startTestMaster(options: TestMasterOptions = {}): Promise<TestMaster> {
  const { rechunkSeed, ...rest } = options;
  const dataDir = await Deno.makeTempDir({ prefix: "mesos-emu-" });
  const calls: unknown[] = [], events: Event[] = [];
  const master = await MesosMaster.start({
    dataDir,
    agents: 2,
    heartbeatIntervalMs: 100,
    allocationIntervalMs: 10,
    statusUpdateRetryMinMs: 150,
    statusUpdateRetryMaxMs: 1000,
    defaultKillGraceMs: 500,
    onCall: (c) => calls.push(structuredClone(c)),
    onEvent: (e) => events.push(structuredClone(e)),
    ...rest,
  });
  if (rechunkSeed !== undefined) master.rechunk(seededPrng(rechunkSeed));
  return {
    master,
    url: master.url,
    calls,
    events,
    dataDir,
    async stop() {
      await master.stop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
}

/** Checks recorded calls and events against the reference shapes; returns the problems found. */
export async function shapeProblems(calls: unknown[], events: unknown[], strict = true): Promise<string[]> {
  const schema = await referenceSchema();
  const out: string[] = [];
  for (const c of calls) {
    out.push(...schema.check("Call", c, { strict }).map((p) => `${p} in ${JSON.stringify(c)}`));
  }
  for (const e of events) {
    out.push(...schema.check("Event", e, { strict }).map((p) => `${p} in ${JSON.stringify(e)}`));
  }
  return out;
}

export function frameworkInfo(extra: Record<string, unknown> = {}) {
  return {
    user: "root",
    name: "conformance",
    roles: ["peloton"],
    failover_timeout: 60,
    checkpoint: true,
    capabilities: [{ type: "MULTI_ROLE" }, { type: "PARTITION_AWARE" }, { type: "TASK_KILLING_STATE" }],
    ...extra,
  };
}

/** A SUBSCRIBE made by hand, reading events one at a time, as Mesos's own HTTP API tests do. */
export class RawSubscription {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new RecordIODecoder();
  readonly #queue: Event[] = [];
  readonly #text = new TextDecoder();
  /** Every event read, for shape checks. */
  readonly received: Event[] = [];
  private constructor(readonly response: Response) {
    this.#reader = response.body!.getReader();
  }

  static async open(
    url: string,
    call: unknown,
    headers: Record<string, string> = { "content-type": CONTENT_TYPE_JSON, accept: CONTENT_TYPE_JSON },
  ): Promise<RawSubscription> {
    const response = await fetch(url + SCHEDULER_PATH, {
      method: "POST",
      headers,
      body: JSON.stringify(call),
    });
    return new RawSubscription(response);
  }

  get streamId(): string {
    return this.response.headers.get(STREAM_ID_HEADER) ?? "";
  }

  /** The next event, or undefined at the end of the stream. */
  async next(timeoutMs = 5000): Promise<Event | undefined> {
    if (this.#queue.length === 0 && !(await this.#read(Date.now() + timeoutMs))) return undefined;
    return this.#queue.shift();
  }

  /** The first unread event of a type; events of other types stay unread for later waits. */
  async nextOf<T extends Event["type"]>(type: T, timeoutMs = 5000): Promise<Extract<Event, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.#queue.findIndex((e) => e.type === type);
      if (i >= 0) return this.#queue.splice(i, 1)[0] as Extract<Event, { type: T }>;
      if (!(await this.#read(deadline))) throw new Error(`stream ended before a ${type} event`);
    }
  }

  /** A read outlives a timed-out wait, so the bytes it brings are not lost. */
  #pendingRead?: Promise<ReadableStreamReadResult<Uint8Array>>;

  /** Reads at least one more event into the queue; false at the end of the stream. */
  async #read(deadline: number): Promise<boolean> {
    const before = this.#queue.length;
    while (this.#queue.length === before) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error("timed out waiting for an event")),
          Math.max(1, deadline - Date.now()),
        );
      });
      try {
        this.#pendingRead ??= this.#reader.read();
        const { value, done } = await Promise.race([this.#pendingRead, timeout]);
        this.#pendingRead = undefined;
        if (done) return false;
        for (const r of this.#decoder.decode(value)) {
          const event = JSON.parse(this.#text.decode(r));
          this.#queue.push(event);
          this.received.push(event);
        }
      } finally {
        clearTimeout(timer);
      }
    }
    return true;
  }

  async close(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }
}

/** POSTs one call on its own connection; returns the status and body text. */
export async function post(
  url: string,
  call: Call | unknown,
  headers: Record<string, string> = { "content-type": CONTENT_TYPE_JSON },
  path = SCHEDULER_PATH,
): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(url + path, {
    method: "POST",
    headers,
    body: JSON.stringify(call),
    redirect: "manual",
  });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

/** Collects a backend's event batches and lets a test wait for one. */
export { makeSpec, Recorder } from "../backend_testing.ts";

/** Polls until `check` returns a value. */
export async function eventually<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** What `withBackend` hands a test. */
export interface BackendEnv {
  m: TestMaster;
  backend: MesosBackend;
  rec: Recorder;
  hosts: HostInfo[];
  store: MemoryFrameworkIdStore;
}

/** A MesosBackend on the emulator with test timings. */
export function newBackend(
  m: TestMaster,
  store: MemoryFrameworkIdStore,
  extra: Partial<MesosBackendOptions> = {},
) {
  return new MesosBackend({
    masterUrl: m.url,
    idStore: store,
    launchTimeoutMs: 2000,
    client: { heartbeatMisses: 3, backoffMinMs: 20, backoffMaxMs: 200, random: () => 0.5 },
    ...extra,
  });
}

/** A backend started on a fresh emulator; by default acknowledges every update like the host manager. */
export async function withBackend(
  fn: (env: BackendEnv) => Promise<void>,
  options: { master?: TestMasterOptions; backend?: Partial<MesosBackendOptions>; autoAck?: boolean } = {},
): Promise<void> {
  const m = await startTestMaster(options.master);
  const rec = new Recorder();
  const store = new MemoryFrameworkIdStore();
  const backend = newBackend(m, store, options.backend);
  if (options.autoAck !== false) {
    rec.onStatus = (s) =>
      s.uuid && backend.acknowledge([{ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid }]);
  }
  try {
    backend.start(rec.sink);
    await eventually(
      "two hosts",
      () => rec.events.filter((e) => e.kind === "host-up").length >= 2 ? true : undefined,
    );
    const hosts = rec.events.flatMap((e) => e.kind === "host-up" ? [e.host] : []);
    await fn({ m, backend, rec, hosts, store });
  } finally {
    await backend.stop();
    await m.stop();
  }
  assert.deepEqual(await shapeProblems(m.calls, m.events), []);
}
