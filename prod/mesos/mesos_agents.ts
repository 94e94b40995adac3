/** The Mesos backend's per-agent state: held offers, the operator API's agent list, launches awaiting offers. */
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { authorization, authRefusal, MesosAuthError, type MesosCredentials } from "./credentials.ts";
import { agentAddress, operatorTotal, specBag } from "./mesos_convert.ts";
import {
  CONTENT_TYPE_JSON,
  type Offer,
  type Operation,
  OPERATOR_PATH,
  type OperatorAgent,
} from "./protocol.ts";
import { addBags, type Bag, bagFromMesos, emptyBag, reservedFor, takeResources } from "./resources.ts";
import { persistenceId } from "./volumes.ts";

/** Offers held until used, rescinded, or declined once held past the hold time. */
export class OfferPool {
  readonly #offers = new Map<string, { offer: Offer; bag: Bag; receivedMs: number }>();

  add(offer: Offer, receivedMs = Date.now()): void {
    this.#offers.set(offer.id.value, { offer, bag: bagFromMesos(offer.resources), receivedMs });
  }

  /** Ids of offers received at or before `beforeMs`, except those of agents `keep` says are in use. */
  heldSince(beforeMs: number, keep: (agentId: string) => boolean): string[] {
    const out: string[] = [];
    for (const [id, o] of this.#offers) {
      if (o.receivedMs <= beforeMs && !keep(o.offer.agent_id.value)) out.push(id);
    }
    return out;
  }

  /** Drops an offer; returns the agent it was for. */
  remove(offerId: string): string | undefined {
    const agentId = this.#offers.get(offerId)?.offer.agent_id.value;
    this.#offers.delete(offerId);
    return agentId;
  }

  /** The master discards outstanding offers on re-subscription, without RESCIND events. */
  clear(): void {
    this.#offers.clear();
  }

  of(agentId: string): { offer: Offer; bag: Bag }[] {
    return [...this.#offers.values()].filter((o) => o.offer.agent_id.value === agentId);
  }

  /** What an agent's held offers add up to. */
  total(agentId: string): Bag {
    return this.of(agentId).reduce((b, o) => addBags(b, o.bag), emptyBag());
  }

  dropAgent(agentId: string): void {
    for (const o of this.of(agentId)) this.#offers.delete(o.offer.id.value);
  }

  /** Offer ids per agent. */
  byAgent(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const [id, { offer }] of this.#offers) {
      const agentId = offer.agent_id.value;
      out.set(agentId, [...(out.get(agentId) ?? []), id]);
    }
    return out;
  }
}

export interface AgentDirectoryOptions {
  masterUrl: () => string;
  role: string;
  /** Sent on every request, to the master and to the agents. */
  credentials?: MesosCredentials;
  /** A GET_AGENTS that failed. */
  warn: (what: string, e: unknown) => void;
  /**
   * The master refused GET_AGENTS's credentials (401) or principal (403): told once, until an answer or
   * another refusal; the directory is then unavailable, as without an operator API.
   */
  refused: (e: MesosAuthError) => void;
  /** How long GET_AGENTS may take, and a sandbox read wait for the agent's answer, before it fails. */
  timeoutMs?: number;
  /** How long a sandbox file, once the agent has answered, may take to arrive. */
  bodyTimeoutMs?: number;
}

/** The operator API's GET_AGENTS answer, fetched one request at a time. */
export class AgentDirectory {
  readonly role: string;
  readonly timeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly #o: AgentDirectoryOptions;
  #agents = new Map<string, OperatorAgent>();
  /** Undefined until the first answer; false when the master has no usable operator API. */
  #available?: boolean;
  #refreshing?: Promise<void>;
  /** The refusal last told, so that a lasting one is told once. */
  #refusal?: string;

  constructor(options: AgentDirectoryOptions) {
    this.#o = options;
    this.role = options.role;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.bodyTimeoutMs = options.bodyTimeoutMs ?? 300_000;
  }

  get available(): boolean | undefined {
    return this.#available;
  }

  get(agentId: string): OperatorAgent | undefined {
    return this.#agents.get(agentId);
  }

  /** The agents of the last answer. */
  agents(): OperatorAgent[] {
    return [...this.#agents.values()];
  }

  /** The agent's total usable by our role, when the operator API reported it. */
  total(agentId: string): Bag | undefined {
    const a = this.#agents.get(agentId);
    return a && operatorTotal(a, this.role);
  }

  /** Whether an agent's total carries the role's persistent volume `volumeId`. */
  hasVolume(volumeId: string): boolean {
    for (const a of this.#agents.values()) {
      const total = a.total_resources ?? [];
      if (total.some((r) => persistenceId(r) === volumeId && reservedFor(r) === this.role)) return true;
    }
    return false;
  }

  /** The agent of a host name. */
  byHostname(hostname: string): OperatorAgent | undefined {
    for (const a of this.#agents.values()) if (a.agent_info.hostname === hostname) return a;
    return undefined;
  }

  /** Where the agent's `/files` endpoint answers (`ip:port` from its pid). */
  address(agentId: string): string | undefined {
    const a = this.#agents.get(agentId);
    return a && agentAddress(a);
  }

  /**
   * A sandbox file through the agent's `/files/download` (Mesos's virtual path of an executor's sandbox;
   * a command task's executor id is its task id).
   */
  async readSandbox(
    agentId: string,
    frameworkId: string,
    executorId: string,
    file: string,
  ): Promise<string | undefined> {
    const address = this.address(agentId);
    if (!address) return undefined;
    const path = `/frameworks/${frameworkId}/executors/${executorId}/runs/latest/${file}`;
    // The agent answers within the timeout; a large file then has longer to arrive, but not for ever.
    const abort = new AbortController();
    const after = (ms: number) =>
      setTimeout(
        () => abort.abort(new DOMException(`agent ${address} took over ${ms} ms`, "TimeoutError")),
        ms,
      );
    let timer = after(this.timeoutMs);
    try {
      // An agent with HTTP authentication on (`--authenticate_http_readonly`) needs them for `/files`.
      const res = await fetch(`http://${address}/files/download?path=${encodeURIComponent(path)}`, {
        headers: authorization(this.#o.credentials),
        signal: abort.signal,
      });
      clearTimeout(timer);
      timer = after(this.bodyTimeoutMs);
      if (res.status === 404) {
        await res.body?.cancel();
        return undefined;
      }
      const text = await res.text();
      if (!res.ok) {
        const refused = authRefusal(res.status, text, this.#o.credentials, `agent ${address}`);
        if (refused) throw refused;
        throw new Error(
          `Cannot read ${file} of executor ${executorId} from agent ${address}: HTTP ${res.status} ${text}`,
        );
      }
      return text;
    } finally {
      clearTimeout(timer);
    }
  }

  refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      try {
        const res = await fetch(`${this.#o.masterUrl()}${OPERATOR_PATH}`, {
          method: "POST",
          headers: {
            "content-type": CONTENT_TYPE_JSON,
            accept: CONTENT_TYPE_JSON,
            ...authorization(this.#o.credentials),
          },
          body: JSON.stringify({ type: "GET_AGENTS" }),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        if (!res.ok) {
          const text = await res.text();
          throw authRefusal(res.status, text, this.#o.credentials, "the master") ??
            new Error(`HTTP ${res.status} ${text}`);
        }
        const agents: OperatorAgent[] = (await res.json())?.get_agents?.agents ?? [];
        this.#agents = new Map(agents.filter((a) => a.agent_info.id).map((a) => [a.agent_info.id!.value, a]));
        this.#available = true;
        this.#refusal = undefined;
      } catch (e) {
        // One failure after a success is a blip; failing from the start means no operator API. A refusal
        // is no blip, but hosts are still announced from offers without it: it is told, not waited on.
        if (this.#available !== true) this.#available = false;
        if (!(e instanceof MesosAuthError)) this.#o.warn("GET_AGENTS", e);
        else if (this.#refusal !== e.message) {
          this.#refusal = e.message;
          this.#o.refused(e);
        }
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }
}

/** A launch taken from the queue, with the offered pieces it uses and the operations that go before it. */
export interface FittingLaunch {
  spec: LaunchSpec;
  deadlineMs: number;
  used: Bag;
  operations?: Operation[];
}

/** How a launch fits in offered pieces: what it uses, what is left, operations to send before its LAUNCH. */
export type Fit = (
  avail: Bag,
  spec: LaunchSpec,
) => { used: Bag; left: Bag; operations?: Operation[] } | undefined;

/** A launch without volume: its resources taken from the offered pieces. */
export const plainFit: Fit = (avail, spec) => takeResources(avail, specBag(spec));

/** Launches waiting, per agent, for held offers that cover them; each is dropped at its deadline. */
export class LaunchQueue {
  readonly #byAgent = new Map<
    string,
    { spec: LaunchSpec; deadlineMs: number; alone: boolean; timer: ReturnType<typeof setTimeout> }[]
  >();

  constructor(readonly timeoutMs: number, readonly expired: (spec: LaunchSpec) => void) {}

  /**
   * Queues a launch; a retried one keeps its original deadline. One `alone` goes in an ACCEPT of its own
   * (its last ACCEPT was refused as invalid, with others: which task was at fault is not said).
   */
  add(spec: LaunchSpec, deadlineMs = Date.now() + this.timeoutMs, alone = false): void {
    const timer = setTimeout(
      () => this.take(spec.taskId) && this.expired(spec),
      Math.max(0, deadlineMs - Date.now()),
    );
    const list = this.#byAgent.get(spec.agentId) ?? [];
    list.push({ spec, deadlineMs, alone, timer });
    this.#byAgent.set(spec.agentId, list);
  }

  has(agentId: string): boolean {
    return (this.#byAgent.get(agentId)?.length ?? 0) > 0;
  }

  deadline(taskId: string): number | undefined {
    for (const list of this.#byAgent.values()) {
      const p = list.find((x) => x.spec.taskId === taskId);
      if (p) return p.deadlineMs;
    }
    return undefined;
  }

  /** Removes every launch waiting for the agent (it was replaced by another), in queue order. */
  takeAgent(agentId: string): LaunchSpec[] {
    const list = this.#byAgent.get(agentId) ?? [];
    this.#byAgent.delete(agentId);
    for (const p of list) clearTimeout(p.timer);
    return list.map((p) => p.spec);
  }

  /** Removes a waiting launch (killed, or expired). */
  take(taskId: string): LaunchSpec | undefined {
    for (const [agentId, list] of this.#byAgent) {
      const i = list.findIndex((p) => p.spec.taskId === taskId);
      if (i < 0) continue;
      const [p] = list.splice(i, 1);
      if (list.length === 0) this.#byAgent.delete(agentId);
      clearTimeout(p.timer);
      return p.spec;
    }
    return undefined;
  }

  /**
   * Takes, in queue order, the agent's launches that fit together in `avail` (a launch `alone` only by
   * itself), each with the offered pieces it uses; the others keep waiting.
   */
  takeFitting(agentId: string, avail: Bag, fit: Fit = plainFit): FittingLaunch[] {
    const chosen: FittingLaunch[] = [];
    const rest = [];
    let alone = false;
    for (const p of this.#byAgent.get(agentId) ?? []) {
      const taken = (alone || (p.alone && chosen.length > 0)) ? undefined : fit(avail, p.spec);
      if (!taken) {
        rest.push(p);
        continue;
      }
      avail = taken.left;
      alone = p.alone;
      clearTimeout(p.timer);
      const chose: FittingLaunch = { spec: p.spec, deadlineMs: p.deadlineMs, used: taken.used };
      if (taken.operations?.length) chose.operations = taken.operations;
      chosen.push(chose);
    }
    if (rest.length) this.#byAgent.set(agentId, rest);
    else this.#byAgent.delete(agentId);
    return chosen;
  }

  /** Forgets an agent's waiting launches without events (the host manager answers for a lost host). */
  dropAgent(agentId: string): void {
    for (const p of this.#byAgent.get(agentId) ?? []) clearTimeout(p.timer);
    this.#byAgent.delete(agentId);
  }

  /** Removes every waiting launch, in queue order per agent. */
  takeAll(): LaunchSpec[] {
    return [...this.#byAgent.keys()].flatMap((agentId) => this.takeAgent(agentId));
  }

  clear(): void {
    for (const agentId of [...this.#byAgent.keys()]) this.dropAgent(agentId);
  }
}
