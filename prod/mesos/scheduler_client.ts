/** The Mesos v1 scheduler HTTP client: a SUBSCRIBE event stream, calls on other connections, re-subscription. */
import {
  type Call,
  CONTENT_TYPE_JSON,
  type Event,
  type Filters,
  type FrameworkInfo,
  msToDuration,
  type Operation,
  SCHEDULER_PATH,
  STREAM_ID_HEADER,
} from "./protocol.ts";
import { readRecords } from "./recordio.ts";
import { authorization, authRefusal, type MesosCredentials } from "./credentials.ts";

export { FileFrameworkIdStore, type FrameworkIdStore, MemoryFrameworkIdStore } from "./framework_id_store.ts";
import type { FrameworkIdStore } from "./framework_id_store.ts";

/** A call the master answered with something other than 202/200 (the call was not processed). */
export class MesosCallError extends Error {
  override readonly name = "MesosCallError";
  constructor(readonly callType: string, readonly status: number, readonly body: string) {
    super(`Mesos ${callType} call failed: HTTP ${status} ${body.trim()}`);
  }
}

/**
 * Whether a refusal says our subscription is gone or stale, so that only a new SUBSCRIBE helps: 307 (this
 * master no longer leads), 403 "Framework is not subscribed" (it saw our connection end), 400 for a stream
 * id it does not know or lacks (another subscription took over), or "Framework cannot be found" (it lost
 * its state, and re-subscribing with our id recovers the framework).
 */
export function isSubscriptionRefusal(status: number, body: string): boolean {
  if (status === 307 || status === 403) return true;
  return status === 400 && /stream id|Mesos-Stream-Id|Framework cannot be found/i.test(body);
}

/**
 * Whether an ERROR says the master removed the framework (TEARDOWN, or its failover timeout passed): Mesos
 * refuses a SUBSCRIBE with a removed framework's id with this message, and has removed its every task.
 */
export function isFrameworkRemoved(message: string): boolean {
  return /Framework has been removed/i.test(message);
}

export class NotSubscribedError extends Error {
  override readonly name = "NotSubscribedError";
}

/** The FrameworkInfo Peloton subscribed with (`pkg/hostmgr/mesos/driver.go`), in MULTI_ROLE form. */
export const PELOTON_FRAMEWORK: FrameworkInfo = {
  user: "root",
  name: "Peloton",
  roles: ["peloton"],
  principal: "peloton",
  // Peloton's ~100 weeks: the master's default of 0 would kill every task at the first disconnection.
  failover_timeout: 60_000_000,
  checkpoint: true,
  capabilities: [
    { type: "MULTI_ROLE" },
    { type: "GPU_RESOURCES" },
    { type: "PARTITION_AWARE" },
    { type: "REVOCABLE_RESOURCES" },
    { type: "TASK_KILLING_STATE" },
  ],
};

export interface SchedulerClientOptions {
  /**
   * `http://host:5050`, or several masters separated by commas (HA masters, as Peloton can be given). The
   * leader a 307 names is used until a subscription there fails; then the configured masters are tried in
   * turn.
   */
  masterUrl: string;
  /** Overrides on top of `PELOTON_FRAMEWORK`. */
  framework?: Partial<FrameworkInfo>;
  idStore?: FrameworkIdStore;
  /**
   * HTTP basic authentication, as Peloton sent when a principal secret was configured. Its principal is the
   * FrameworkInfo's too (unless `framework` names one): the master refuses a SUBSCRIBE whose FrameworkInfo
   * names another principal than the authenticated one.
   */
  credentials?: MesosCredentials;
  /** Missed heartbeats before the stream counts as lost (the docs suggest about 5). */
  heartbeatMisses?: number;
  /** How long SUBSCRIBE may take to produce SUBSCRIBED. */
  subscribeTimeoutMs?: number;
  callTimeoutMs?: number;
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** Jitter for the re-subscription backoff; randomness is an argument. */
  random?: () => number;
  /** Every event, in stream order, after the client's own bookkeeping (SUBSCRIBED is persisted first). */
  onEvent: (event: Event) => void;
  /** The stream ended; the client re-subscribes after a backoff. */
  onDisconnected?: (reason: string) => void;
  /**
   * An ERROR event (failed over to another instance, framework removed, invalid info): the client stops;
   * with `onFrameworkRemoved`, not for a removed framework.
   */
  onFatal?: (message: string) => void;
  /**
   * Given, an ERROR saying the framework was removed (`isFrameworkRemoved`) does not stop the client: that
   * id can never subscribe again, so the client forgets it (the stored one too, `FrameworkIdStore.clear`),
   * calls this with the ERROR's message and the removed id, then subscribes anew as a new framework.
   */
  onFrameworkRemoved?: (message: string, frameworkId: string | undefined) => void;
  /** Every call as sent, for tracing and conformance tests. */
  onCall?: (call: Call) => void;
  log?: (line: string) => void;
}

type Outcome =
  | { kind: "redirect" }
  | { kind: "ended"; reason: string; subscribed: boolean }
  | { kind: "removed"; message: string };

export class SchedulerClient {
  readonly #o: SchedulerClientOptions;
  readonly #framework: FrameworkInfo;
  /** The configured masters, in order; `#current` is the one tried last. */
  readonly #masters: string[];
  #current = 0;
  /** Where calls go: the current configured master, or the leader it redirected to (a cache). */
  #base: string;
  #frameworkId?: string;
  #streamId?: string;
  #subscribed = false;
  #stopped = false;
  #fatal?: string;
  #abort?: AbortController;
  #abortReason?: string;
  #watchdog?: ReturnType<typeof setTimeout>;
  #heartbeatMs = 15_000;
  #loop?: Promise<void>;
  #wake?: () => void;
  #sleepTimer?: ReturnType<typeof setTimeout>;

  constructor(options: SchedulerClientOptions) {
    this.#o = options;
    const principal = options.credentials ? { principal: options.credentials.principal } : {};
    this.#framework = { ...PELOTON_FRAMEWORK, ...principal, ...options.framework };
    this.#masters = options.masterUrl.split(",").map((u) => u.trim()).filter((u) => u !== "").map(origin);
    if (this.#masters.length === 0) {
      throw new Error(
        `Cannot use the Mesos master URL ${JSON.stringify(options.masterUrl)}: it names no master`,
      );
    }
    this.#base = this.#masters[0];
  }

  get frameworkId(): string | undefined {
    return this.#frameworkId;
  }
  get streamId(): string | undefined {
    return this.#streamId;
  }
  get subscribed(): boolean {
    return this.#subscribed;
  }
  /** The master currently talked to (after redirects). */
  get masterUrl(): string {
    return this.#base;
  }
  get framework(): FrameworkInfo {
    return this.#framework;
  }
  /** The ERROR message that stopped the client, if one did. */
  get fatal(): string | undefined {
    return this.#fatal;
  }

  /** Loads the stored framework id and starts subscribing in the background. */
  start(): void {
    if (this.#loop) throw new Error("Cannot start the scheduler client: it was already started");
    this.#loop = this.#run().catch((e) => this.#o.log?.(`mesos: subscription loop failed: ${e}`));
  }

  /** Closes the event stream and stops re-subscribing; never sends TEARDOWN (tasks must survive). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abortReason = "client stopped";
    this.#abort?.abort();
    clearTimeout(this.#sleepTimer);
    this.#wake?.();
    await this.#loop;
  }

  /** Drops the current stream as if it broke; the client re-subscribes (tests and operator tools). */
  reconnect(reason = "reconnect requested"): void {
    this.#abortReason = reason;
    this.#abort?.abort();
  }

  async #run(): Promise<void> {
    this.#frameworkId ??= await this.#o.idStore?.load();
    const min = this.#o.backoffMinMs ?? 500, max = this.#o.backoffMaxMs ?? 15_000;
    let backoff = min, redirects = 0;
    while (!this.#stopped && !this.#fatal) {
      const master = this.#base;
      const outcome = await this.#subscribeOnce();
      if (this.#stopped || this.#fatal) break;
      if (outcome.kind === "removed") {
        await this.#forget(outcome.message);
        backoff = min;
        continue;
      }
      // A leader change is followed at once, but a redirect loop backs off like any failure.
      if (outcome.kind === "redirect" && ++redirects <= 3) continue;
      redirects = 0;
      if (outcome.kind === "ended") {
        if (outcome.subscribed) backoff = min;
        this.#o.onDisconnected?.(outcome.reason);
        // Naming the master: a wrong address is told from a master that is down (or refuses us).
        this.#o.log?.(`mesos: ${outcome.reason} (master ${master}); re-subscribing in ~${backoff} ms`);
        if (!outcome.subscribed) this.#nextMaster();
      }
      await this.#sleep(backoff * (0.5 + (this.#o.random ?? Math.random)() / 2));
      backoff = Math.min(max, backoff * 2);
    }
  }

  /** The framework was removed: its id is forgotten, here and in the store, before subscribing anew. */
  async #forget(message: string): Promise<void> {
    const removed = this.#frameworkId;
    this.#frameworkId = undefined;
    try {
      await this.#o.idStore?.clear?.();
    } catch (e) {
      // The next SUBSCRIBED stores the new id over it anyway.
      this.#o.log?.(`mesos: cannot forget the removed framework id ${removed}: ${(e as Error).message}`);
    }
    this.#o.onFrameworkRemoved?.(message, removed);
  }

  /**
   * After an attempt that did not subscribe (no connection, 503, a refusal): a leader learned from a 307
   * may be the master that died (an HA failover), so the configured master is asked again, which names the
   * new leader; without such a leader the next configured master is tried.
   */
  #nextMaster(): void {
    if (this.#base === this.#masters[this.#current]) {
      this.#current = (this.#current + 1) % this.#masters.length;
    }
    if (this.#base !== this.#masters[this.#current]) {
      this.#base = this.#masters[this.#current];
      this.#o.log?.(`mesos: trying the master ${this.#base}`);
    }
  }

  async #subscribeOnce(): Promise<Outcome> {
    const controller = new AbortController();
    this.#abort = controller;
    this.#abortReason = undefined;
    this.#arm(this.#o.subscribeTimeoutMs ?? 30_000, "no SUBSCRIBED event in time");
    const call = this.#subscribeCall();
    this.#o.onCall?.(call);
    let subscribed = false;
    try {
      const res = await fetch(this.#base + SCHEDULER_PATH, {
        method: "POST",
        headers: this.#headers({ accept: CONTENT_TYPE_JSON }),
        body: JSON.stringify(call),
        signal: controller.signal,
        redirect: "manual",
      });
      if (res.status === 307) {
        const location = res.headers.get("location");
        await res.body?.cancel();
        if (!location) return { kind: "ended", reason: "307 without a Location header", subscribed };
        this.#base = origin(new URL(location, this.#base).href);
        this.#o.log?.(`mesos: redirected to the leading master ${this.#base}`);
        return { kind: "redirect" };
      }
      if (res.status !== 200 || !res.body) {
        const text = await res.text();
        // Not a blip: every attempt is refused until the operator fixes the credentials, here or there.
        const refused = res.status === 401 && authRefusal(401, text, this.#o.credentials, "the master");
        const reason = refused
          ? `ERROR: SUBSCRIBE: ${refused.message}`
          : `SUBSCRIBE answered HTTP ${res.status} ${text.trim()}`;
        return { kind: "ended", reason, subscribed };
      }
      const streamId = res.headers.get(STREAM_ID_HEADER) ?? undefined;
      for await (const record of readRecords(res.body, undefined, controller.signal)) {
        this.#arm(this.#heartbeatMs * (this.#o.heartbeatMisses ?? 5), "missed heartbeats");
        const event = JSON.parse(record) as Event;
        if (event.type === "SUBSCRIBED") {
          await this.#onSubscribed(event, streamId);
          subscribed = true;
        } else if (event.type === "ERROR") {
          const message = event.error?.message ?? "ERROR event without a message";
          if (this.#o.onFrameworkRemoved && isFrameworkRemoved(message)) {
            this.#dispatch(event);
            return { kind: "removed", message };
          }
          this.#fatal = message;
        }
        this.#dispatch(event);
        if (this.#fatal) {
          this.#o.onFatal?.(this.#fatal);
          break;
        }
      }
      return { kind: "ended", reason: "the master closed the event stream", subscribed };
    } catch (e) {
      const reason = this.#abortReason ?? `event stream failed: ${errorText(e)}`;
      return { kind: "ended", reason, subscribed };
    } finally {
      clearTimeout(this.#watchdog);
      this.#subscribed = false;
      this.#streamId = undefined;
      if (this.#abort === controller) this.#abort = undefined;
      controller.abort();
    }
  }

  async #onSubscribed(event: Extract<Event, { type: "SUBSCRIBED" }>, streamId?: string): Promise<void> {
    const id = event.subscribed.framework_id.value;
    // Persist before anything else: a scheduler that restarts without its id orphans every task.
    await this.#o.idStore?.save(id);
    this.#frameworkId = id;
    this.#streamId = streamId;
    this.#subscribed = true;
    this.#heartbeatMs = (event.subscribed.heartbeat_interval_seconds ?? 15) * 1000;
    this.#arm(this.#heartbeatMs * (this.#o.heartbeatMisses ?? 5), "missed heartbeats");
  }

  #dispatch(event: Event): void {
    try {
      this.#o.onEvent(event);
    } catch (e) {
      this.#o.log?.(`mesos: handler of ${event.type} failed: ${e}`);
    }
  }

  /** Re-arms the loss detector: the stream is dropped when no event arrives within `ms`. */
  #arm(ms: number, reason: string): void {
    clearTimeout(this.#watchdog);
    this.#watchdog = setTimeout(() => {
      this.#abortReason = `${reason} (nothing for ${ms} ms)`;
      this.#abort?.abort();
    }, ms);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve;
      this.#sleepTimer = setTimeout(resolve, ms);
    });
  }

  #subscribeCall(): Call {
    const info: FrameworkInfo = { ...this.#framework };
    if (!this.#frameworkId) return { type: "SUBSCRIBE", subscribe: { framework_info: info } };
    // Re-subscription: the id in both places, which the master requires to be equal.
    info.id = { value: this.#frameworkId };
    return {
      framework_id: { value: this.#frameworkId },
      type: "SUBSCRIBE",
      subscribe: { framework_info: info },
    };
  }

  #headers(extra: Record<string, string> = {}): Record<string, string> {
    return { "content-type": CONTENT_TYPE_JSON, ...extra, ...authorization(this.#o.credentials) };
  }

  /** Sends one non-SUBSCRIBE call on its own connection with the stream id; resolves on 202/200. */
  async call(call: Call): Promise<void> {
    if (!this.#subscribed || !this.#frameworkId || !this.#streamId) {
      throw new NotSubscribedError(`Cannot send ${call.type}: the scheduler is not subscribed`);
    }
    const full = { framework_id: { value: this.#frameworkId }, ...call } as Call;
    this.#o.onCall?.(full);
    const streamId = this.#streamId;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.#o.callTimeoutMs ?? 75_000);
    try {
      const res = await fetch(this.#base + SCHEDULER_PATH, {
        method: "POST",
        headers: this.#headers({ [STREAM_ID_HEADER]: streamId }),
        body: JSON.stringify(full),
        signal: controller.signal,
        redirect: "manual",
      });
      const text = await res.text();
      if (res.status !== 202 && res.status !== 200) {
        const error = new MesosCallError(call.type, res.status, text);
        if (isSubscriptionRefusal(res.status, text)) {
          this.#resubscribe(streamId, res.headers.get("location"), error);
        }
        throw error;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The master refused a call on the stream `streamId` as one it no longer serves: the stream, even if
   * still open, is dropped and the client subscribes again (at the leader a 307 names). Calls in flight on
   * that stream may all be refused; the first one starts the new subscription.
   */
  #resubscribe(streamId: string, location: string | null, error: MesosCallError): void {
    if (!this.#subscribed || this.#streamId !== streamId || this.#stopped) return;
    if (location) {
      this.#base = origin(new URL(location, this.#base).href);
      this.#o.log?.(`mesos: ${error.callType} redirected to the leading master ${this.#base}`);
    }
    this.#subscribed = false;
    this.reconnect(
      `the master refused ${error.callType} (HTTP ${error.status} ${error.body.trim()}); re-subscribing`,
    );
  }

  accept(offerIds: string[], operations: Operation[], filters?: Filters): Promise<void> {
    const accept: Extract<Call, { type: "ACCEPT" }>["accept"] = { offer_ids: ids(offerIds), operations };
    if (filters) accept.filters = filters;
    return this.call({ type: "ACCEPT", accept });
  }

  decline(offerIds: string[], filters?: Filters): Promise<void> {
    return this.call({
      type: "DECLINE",
      decline: filters ? { offer_ids: ids(offerIds), filters } : { offer_ids: ids(offerIds) },
    });
  }

  /** Kills a task; `gracePeriodMs` overrides the task's kill policy (SIGTERM, then SIGKILL after it). */
  kill(taskId: string, agentId?: string, gracePeriodMs?: number): Promise<void> {
    const kill: Extract<Call, { type: "KILL" }>["kill"] = { task_id: { value: taskId } };
    if (agentId) kill.agent_id = { value: agentId };
    if (gracePeriodMs !== undefined) kill.kill_policy = { grace_period: msToDuration(gracePeriodMs) };
    return this.call({ type: "KILL", kill });
  }

  /** Echoes an update's agent id, task id and uuid unchanged. */
  acknowledge(agentId: string, taskId: string, uuid: string): Promise<void> {
    return this.call({
      type: "ACKNOWLEDGE",
      acknowledge: { agent_id: { value: agentId }, task_id: { value: taskId }, uuid },
    });
  }

  /** Explicit reconciliation of the given tasks; an empty list is implicit (every task the master knows). */
  reconcile(tasks: { taskId: string; agentId?: string }[] = []): Promise<void> {
    if (tasks.length === 0) return this.call({ type: "RECONCILE", reconcile: {} });
    const list = tasks.map((t) =>
      t.agentId
        ? { task_id: { value: t.taskId }, agent_id: { value: t.agentId } }
        : { task_id: { value: t.taskId } }
    );
    return this.call({ type: "RECONCILE", reconcile: { tasks: list } });
  }

  revive(roles = this.#roles()): Promise<void> {
    return this.call({ type: "REVIVE", revive: { roles } });
  }

  suppress(roles = this.#roles()): Promise<void> {
    return this.call({ type: "SUPPRESS", suppress: { roles } });
  }

  acceptInverseOffers(inverseOfferIds: string[], filters?: Filters): Promise<void> {
    const body = { inverse_offer_ids: ids(inverseOfferIds), ...(filters ? { filters } : {}) };
    return this.call({ type: "ACCEPT_INVERSE_OFFERS", accept_inverse_offers: body });
  }

  declineInverseOffers(inverseOfferIds: string[], filters?: Filters): Promise<void> {
    const body = { inverse_offer_ids: ids(inverseOfferIds), ...(filters ? { filters } : {}) };
    return this.call({ type: "DECLINE_INVERSE_OFFERS", decline_inverse_offers: body });
  }

  shutdown(executorId: string, agentId: string): Promise<void> {
    return this.call({
      type: "SHUTDOWN",
      shutdown: { executor_id: { value: executorId }, agent_id: { value: agentId } },
    });
  }

  /** Removes the framework and kills all its tasks: for operators, never on a normal shutdown. */
  teardown(): Promise<void> {
    return this.call({ type: "TEARDOWN" });
  }

  #roles(): string[] {
    return this.#framework.roles ?? (this.#framework.role ? [this.#framework.role] : []);
  }
}

function ids(values: string[]): { value: string }[] {
  return values.map((value) => ({ value }));
}

/**
 * An error's message with its cause's, if it has one: `fetch` fails with "fetch failed", and only its cause
 * says why (a refused connection, an unknown host).
 */
export function errorText(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const cause = e.cause instanceof Error ? e.cause.message : undefined;
  return cause && cause !== e.message ? `${e.message} (${cause})` : e.message;
}

function origin(url: string): string {
  const u = new URL(url.includes("://") ? url : `http://${url}`);
  return `${u.protocol}//${u.host}`;
}
