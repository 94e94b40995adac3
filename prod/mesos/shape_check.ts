/** A structural checker for Mesos JSON: learns keys, value types and enums from the reference examples. */
import {
  CALL_TYPES,
  EVENT_TYPES,
  FRAMEWORK_CAPABILITIES,
  INVERSE_OFFER_STATUSES,
  OPERATION_TYPES,
  TASK_STATES,
  TASK_STATUS_REASONS,
  TASK_STATUS_SOURCES,
  VALUE_TYPES,
} from "./protocol.ts";

type Kind = "string" | "number" | "boolean" | "object" | "array";
export type Root = "Call" | "Event" | "Operator";

interface Node {
  kinds: Set<Kind>;
  fields: Map<string, string>;
  item?: string;
}

// One message type reached through several paths (an AgentID inside an offer, a task, a status...) shares
// one node, so each example teaches every place the message occurs. Qualified names win over bare ones.
const MESSAGE_OF_FIELD: Record<string, string> = {
  agent_id: "ID",
  task_id: "ID",
  framework_id: "ID",
  offer_id: "ID",
  executor_id: "ID",
  container_id: "ID",
  inverse_offer_id: "ID",
  filters: "Filters",
  grace_period: "TimeInfo",
  start: "TimeInfo",
  duration: "TimeInfo",
  registered_time: "TimeInfo",
  unreachable_time: "TimeInfo",
  timestamp: "TimeInfo",
  unavailability: "Unavailability",
  allocation_info: "AllocationInfo",
  scalar: "Scalar",
  ranges: "Ranges",
  text: "Text",
  labels: "Labels",
  command: "CommandInfo",
  container: "ContainerInfo",
  executor: "ExecutorInfo",
  kill_policy: "KillPolicy",
  framework_info: "FrameworkInfo",
  master_info: "MasterInfo",
  agent_info: "AgentInfo",
  "Event.update.status": "TaskStatus",
  "Event.offers.offers": "Offer",
  "Event.inverse_offers.inverse_offers": "InverseOffer",
};
const ITEM_OF_FIELD: Record<string, string> = {
  resources: "Resource",
  total_resources: "Resource",
  allocated_resources: "Resource",
  offered_resources: "Resource",
  attributes: "Attribute",
  offer_ids: "ID",
  inverse_offer_ids: "ID",
  task_infos: "TaskInfo",
  operations: "Operation",
  capabilities: "Capability",
  variables: "Variable",
  labels: "Label",
  parameters: "Parameter",
  range: "Range",
  machine_ids: "MachineID",
  down_machines: "MachineID",
  recovered_agents: "AgentInfo",
  "Event.offers.offers": "Offer",
  "Event.inverse_offers.inverse_offers": "InverseOffer",
};

const ENUMS: Record<string, readonly string[]> = {
  "Call.type": CALL_TYPES,
  "Event.type": EVENT_TYPES,
  "Resource.type": ["SCALAR", "RANGES", "SET"],
  "Resource.reservations[].type": ["UNKNOWN", "STATIC", "DYNAMIC"],
  "Attribute.type": VALUE_TYPES,
  "Operation.type": OPERATION_TYPES,
  "Capability.type": FRAMEWORK_CAPABILITIES,
  "TaskStatus.state": TASK_STATES,
  "TaskStatus.source": TASK_STATUS_SOURCES,
  "TaskStatus.reason": TASK_STATUS_REASONS,
  "ContainerInfo.type": ["DOCKER", "MESOS"],
  "ContainerInfo.docker.network": ["HOST", "BRIDGE", "NONE", "USER"],
  "ContainerInfo.volumes[].mode": ["RW", "RO"],
  "Resource.disk.volume.mode": ["RW", "RO"],
  "ContainerInfo.volumes[].source.type": ["UNKNOWN", "DOCKER_VOLUME", "HOST_PATH", "SANDBOX_PATH", "SECRET"],
  "ContainerInfo.volumes[].source.secret.type": ["UNKNOWN", "REFERENCE", "VALUE"],
  "ContainerInfo.mesos.image.type": ["APPC", "DOCKER"],
  "ExecutorInfo.type": ["UNKNOWN", "DEFAULT", "CUSTOM"],
  "Operator.get_maintenance_status.status.draining_machines[].statuses[].status": INVERSE_OFFER_STATUSES,
};

// Proto `required` fields (and the per-type payloads the master insists on), by node.
const REQUIRED: Record<string, string[]> = {
  ID: ["value"],
  Resource: ["name", "type"],
  Attribute: ["name", "type"],
  TaskInfo: ["name", "task_id", "agent_id"],
  FrameworkInfo: ["user", "name"],
  TaskStatus: ["task_id", "state"],
  Offer: ["id", "framework_id", "agent_id", "hostname"],
  InverseOffer: ["id", "framework_id", "unavailability"],
  Unavailability: ["start"],
  TimeInfo: ["nanoseconds"],
  Scalar: ["value"],
  Range: ["begin", "end"],
  Capability: ["type"],
  Label: ["key"],
  Parameter: ["key", "value"],
  ContainerInfo: ["type"],
  "ContainerInfo.docker": ["image"],
  "ContainerInfo.volumes[]": ["container_path", "mode"],
  "Resource.disk.persistence": ["id"],
  "Resource.disk.volume": ["container_path", "mode"],
  "ContainerInfo.volumes[].source.secret.value": ["data"],
  "ContainerInfo.mesos.image": ["type"],
  "ContainerInfo.mesos.image.docker": ["name"],
  "ContainerInfo.docker.port_mappings[]": ["host_port", "container_port"],
  "CommandInfo.uris[]": ["value"],
  ExecutorInfo: ["executor_id"],
  Call: ["type"],
  Event: ["type"],
  "Call.acknowledge": ["agent_id", "task_id", "uuid"],
  "Call.kill": ["task_id"],
  "Event.subscribed": ["framework_id"],
  "Event.error": ["message"],
  "Event.rescind": ["offer_id"],
  "Event.update": ["status"],
};

function kindOf(v: unknown): Kind | undefined {
  if (Array.isArray(v)) return "array";
  if (v === null) return undefined;
  const t = typeof v;
  return t === "string" || t === "number" || t === "boolean" || t === "object" ? t : undefined;
}

function childKey(parent: string, field: string, value: unknown): string {
  const kind = kindOf(value);
  if (kind === "array") return `${parent}.${field}`;
  const named = MESSAGE_OF_FIELD[`${parent}.${field}`] ?? MESSAGE_OF_FIELD[field];
  return named !== undefined && kind === "object" ? named : `${parent}.${field}`;
}

function itemKey(parent: string, field: string): string {
  return ITEM_OF_FIELD[`${parent}.${field}`] ?? ITEM_OF_FIELD[field] ?? `${parent}.${field}[]`;
}

export interface CheckOptions {
  /** Unknown keys are errors (the emulator and our client); off for a real master's richer events. */
  strict: boolean;
}

export class ShapeSchema {
  readonly #nodes = new Map<string, Node>();

  /** Merges one example message into the schema. */
  learn(root: Root, example: unknown): void {
    this.#learn(root, example);
  }

  /** Every problem found, each naming the path, what was found and what was expected. */
  check(root: Root, value: unknown, options: CheckOptions = { strict: true }): string[] {
    const problems: string[] = [];
    this.#check(root, root, value, options, problems);
    if (root !== "Operator" && kindOf(value) === "object") {
      this.#checkPayload(root, value as object, problems);
    }
    return problems;
  }

  /** Known node keys, for tests of the schema itself. */
  keys(): string[] {
    return [...this.#nodes.keys()].sort();
  }

  #node(key: string): Node {
    let n = this.#nodes.get(key);
    if (!n) this.#nodes.set(key, n = { kinds: new Set(), fields: new Map() });
    return n;
  }

  #learn(key: string, value: unknown): void {
    const kind = kindOf(value);
    if (!kind) return;
    const node = this.#node(key);
    node.kinds.add(kind);
    if (kind === "array") {
      const parent = key.slice(0, key.lastIndexOf("."));
      const field = key.slice(key.lastIndexOf(".") + 1);
      node.item ??= itemKey(parent, field);
      for (const item of value as unknown[]) this.#learn(node.item, item);
    } else if (kind === "object") {
      for (const [field, v] of Object.entries(value as Record<string, unknown>)) {
        const child = childKey(key, field, v);
        node.fields.set(field, node.fields.get(field) ?? child);
        this.#learn(child, v);
      }
    }
  }

  #check(key: string, path: string, value: unknown, options: CheckOptions, out: string[]): void {
    const kind = kindOf(value);
    const node = this.#nodes.get(key);
    if (!node) {
      if (options.strict) out.push(`${path}: no reference example shows this field`);
      return;
    }
    if (!kind || !node.kinds.has(kind)) {
      out.push(`${path}: got ${kind ?? "null"}, expected ${[...node.kinds].join(" or ")}`);
      return;
    }
    const allowed = ENUMS[key];
    if (allowed && kind === "string" && !allowed.includes(value as string)) {
      out.push(`${path}: got ${JSON.stringify(value)}, expected one of the proto's enum names`);
    }
    if (kind === "array") {
      (value as unknown[]).forEach((item, i) => this.#check(node.item!, `${path}[${i}]`, item, options, out));
    } else if (kind === "object") {
      const obj = value as Record<string, unknown>;
      for (const field of REQUIRED[key] ?? []) {
        if (obj[field] === undefined) out.push(`${path}: required field "${field}" is missing`);
      }
      for (const [field, v] of Object.entries(obj)) {
        const known = node.fields.get(field);
        if (known === undefined) {
          if (options.strict) out.push(`${path}.${field}: no reference example shows this field`);
          continue;
        }
        // A value of another kind than the example's falls back to the learned node, which reports it.
        const actual = childKey(key, field, v);
        this.#check(this.#nodes.has(actual) ? actual : known, `${path}.${field}`, v, options, out);
      }
    }
  }

  // A call or event carries exactly the payload its type names (`ACCEPT` → `accept`), nothing else.
  #checkPayload(root: Root, value: object, out: string[]): void {
    const obj = value as Record<string, unknown>;
    const type = obj.type;
    if (typeof type !== "string") return;
    const node = this.#nodes.get(root);
    if (!node) return;
    const payload = type.toLowerCase();
    const optional = new Set(["revive", "suppress", "reconcile_operations"]);
    if (node.fields.has(payload) && obj[payload] === undefined && !optional.has(payload)) {
      out.push(`${root}: a ${type} ${root.toLowerCase()} needs its "${payload}" field`);
    }
    for (const field of Object.keys(obj)) {
      const payloadLike = field !== "type" && field !== "framework_id";
      if (payloadLike && field !== payload) out.push(`${root}.${field}: does not belong to a ${type}`);
    }
  }
}

const TESTDATA = new URL("./testdata/", import.meta.url);

function rootOf(file: string): Root | undefined {
  const name = file.replace(/^(doc|proto)-/, "");
  if (name.startsWith("call-")) return "Call";
  if (name.startsWith("event-")) return "Event";
  if (name.startsWith("operator-")) return "Operator";
  return undefined;
}

/** Reads every example under `testdata/` (and `testdata/extra/`) into one schema. */
export async function loadReferenceSchema(dir: URL = TESTDATA): Promise<ShapeSchema> {
  const schema = new ShapeSchema();
  for (const sub of ["", "extra/"]) {
    const folder = new URL(sub, dir);
    const names: string[] = [];
    for await (const e of Deno.readDir(folder)) if (e.isFile && e.name.endsWith(".json")) names.push(e.name);
    for (const name of names.sort()) {
      const root = rootOf(name);
      if (!root) {
        throw new Error(`Cannot load ${sub}${name}: its name must start with call-, event- or operator-`);
      }
      schema.learn(root, JSON.parse(await Deno.readTextFile(new URL(name, folder))));
    }
  }
  return schema;
}
