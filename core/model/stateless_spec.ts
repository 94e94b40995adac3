/** The v1alpha stateless JobSpec, PodSpec, ContainerSpec: schemas, conversion to and from a JobConfig. */

// The conversions follow Peloton's API handler (`ConvertJobSpecToJobConfig`, `ConvertPodSpecToTaskConfig`,
// and back `ConvertJobConfigToJobSpec`, `ConvertTaskConfigToPodSpec`).
import { z } from "zod";
import type {
  CommandInfo,
  ContainerInfo,
  ContainerSpec,
  JobConfig,
  PodSpec,
  StatelessJobSpec,
  TaskConfig,
} from "./config_types.ts";
import type { PathSeg, RuleIssue } from "./config_issues.ts";
import { MAX_TASK_RETRIES } from "./job_config_validate.ts";
import { isPlainObject } from "./yaml_load.ts";
import {
  bool,
  canonKey,
  instanceIdKey,
  keyMeta,
  MAX_JOB_NAME_CHARS,
  MAX_JOB_OWNER_CHARS,
  num,
  text,
  textList,
  uint,
  wrappedId,
} from "./_schema_kit.ts";
import {
  CommandInfoSchema,
  ConstraintSchema,
  ContainerInfoSchema,
  EnvironmentVariableSchema,
  ExecutorInfoSchema,
  HealthCheckConfigSchema,
  LabelSchema,
  PersistentVolumeConfigSchema,
  ResourceConfigSchema,
  RestartPolicySchema,
} from "./task_config.ts";

export const ContainerSpecSchema: z.ZodType<ContainerSpec> = z.object({
  name: text().optional(),
  resource: ResourceConfigSchema.optional(),
  container: ContainerInfoSchema.optional(),
  command: CommandInfoSchema.optional(),
  executor: ExecutorInfoSchema.optional(),
  livenessCheck: HealthCheckConfigSchema.optional(),
  readinessCheck: HealthCheckConfigSchema.optional(),
  ports: z.array(z.object({
    name: text().default(""),
    value: num({ int: true, min: 0, max: 65535 }).default(0),
    envName: text().optional(),
    type: text().optional(),
  })).optional(),
  entrypoint: z.object({ value: text().default(""), arguments: textList().default([]) }).optional(),
  environment: z.array(EnvironmentVariableSchema).optional(),
  image: text().optional(),
  volumeMounts: z.array(z.object({ name: text(), readOnly: bool().optional(), mountPath: text() }))
    .optional(),
});

export const PodSpecSchema: z.ZodType<PodSpec> = z.object({
  podName: wrappedId().optional(),
  labels: z.array(LabelSchema).optional(),
  initContainers: z.array(ContainerSpecSchema).optional(),
  containers: z.array(ContainerSpecSchema).default([]),
  constraint: ConstraintSchema.optional(),
  restartPolicy: RestartPolicySchema.optional(),
  volume: PersistentVolumeConfigSchema.optional(),
  preemptionPolicy: z.object({ killOnPreempt: bool().default(false) }).optional(),
  controller: bool().optional(),
  killGracePeriodSeconds: uint().optional(),
  revocable: bool().optional(),
  volumes: z.array(z.record(z.string(), z.unknown())).optional(),
  // Kept as given (`shell`, `type`, `dockerParameters`, `uris`, `executorSpec`); read by the conversion.
  mesosSpec: z.record(z.string(), z.unknown()).optional(),
  hostPorts: bool().optional(),
});

export const StatelessJobSpecSchema: z.ZodType<StatelessJobSpec> = z.object({
  name: text(MAX_JOB_NAME_CHARS).default(""),
  owner: text(MAX_JOB_OWNER_CHARS).default(""),
  owningTeam: text(MAX_JOB_OWNER_CHARS).default(""),
  ldapGroups: textList().default([]),
  description: text().default(""),
  labels: z.array(LabelSchema).default([]),
  // A spec is a SERVICE job, which needs an instance (see INSTANCE_COUNT_EXPECTED).
  instanceCount: num({ int: true, min: 0 }, "a whole number, at least 1").default(0),
  sla: z.object({
    priority: uint().default(0),
    preemptible: bool().default(false),
    revocable: bool().default(false),
    maximumUnavailableInstances: uint().default(0),
  }).prefault({}),
  defaultSpec: PodSpecSchema.prefault({}),
  instanceSpec: z.record(instanceIdKey(), PodSpecSchema).default({}),
  respoolId: wrappedId().optional(),
}).register(keyMeta, { ignoredKeys: ["revision"] });

/** Reads a field of a kept-as-given mapping (`mesosSpec`) whatever its key style. */
function pick(obj: unknown, name: string): unknown {
  if (!isPlainObject(obj)) return undefined;
  const key = Object.keys(obj).find((k) => canonKey(k) === canonKey(name));
  return key === undefined ? undefined : obj[key];
}

const enumIs = (v: unknown, name: string, n: number) =>
  v === n || (typeof v === "string" && v.toUpperCase().replace(/^.*_TYPE_/, "") === name);

function toContainer(pod: PodSpec, main: ContainerSpec): ContainerInfo | undefined {
  if (main.container) return main.container;
  if (!main.image) return undefined;
  const volumes = (main.volumeMounts ?? []).flatMap((m) => {
    const spec = pod.volumes?.find((v) => pick(v, "name") === m.name);
    const hostPath = pick(pick(spec, "hostPath"), "path");
    if (typeof hostPath !== "string") return [];
    return [{ containerPath: m.mountPath, hostPath, mode: m.readOnly ? "RO" as const : "RW" as const }];
  });
  const withVolumes = volumes.length > 0 ? { volumes } : {};
  if (enumIs(pick(pod.mesosSpec, "type"), "DOCKER", 1)) {
    const params = pick(pod.mesosSpec, "dockerParameters");
    const parameters = Array.isArray(params)
      ? params.map((p) => ({ key: String(pick(p, "key") ?? ""), value: String(pick(p, "value") ?? "") }))
      : [];
    return { type: "DOCKER", docker: { image: main.image, network: "HOST", parameters }, ...withVolumes };
  }
  // Peloton leaves the type unset here, which Mesos runs with its own containerizer.
  const image = { type: "DOCKER", docker: { name: main.image }, cached: true };
  return { type: "MESOS", mesos: { image }, ...withVolumes };
}

/**
 * The container's command (`ConvertPodSpecToMesosCommand`): its `command` whole when it gives one, else one
 * made from its entrypoint. Without an entrypoint value there is none: a default spec is then refused as
 * one without a command, and an instance spec keeps the default's (`validateStatelessSpec` refuses one that
 * sets other parts of a command of its own). A `command` without a value is refused by the job's rules.
 */
function toCommand(pod: PodSpec, main: ContainerSpec): CommandInfo | undefined {
  if (main.command) return main.command;
  if (!main.entrypoint?.value) return undefined;
  const uris = pick(pod.mesosSpec, "uris");
  const command: CommandInfo = {
    // With a mesosSpec its `shell` decides (unset is false); without one, Mesos's default (true) applies.
    shell: pod.mesosSpec === undefined ? true : pick(pod.mesosSpec, "shell") === true,
    arguments: main.entrypoint?.arguments ?? [],
    environment: { variables: main.environment ?? [] },
    // Peloton's `ConvertPodSpecToMesosCommand` copies each URI whole.
    uris: Array.isArray(uris) ? uris.map(toUri) : [],
  };
  command.value = main.entrypoint.value;
  return command;
}

function toUri(u: unknown): CommandInfo["uris"][number] {
  const out: CommandInfo["uris"][number] = { value: String(pick(u, "value") ?? "") };
  for (const flag of ["executable", "extract", "cache"] as const) {
    const v = pick(u, flag);
    if (typeof v === "boolean") out[flag] = v;
  }
  const file = pick(u, "outputFile");
  if (typeof file === "string" && file) out.outputFile = file;
  return out;
}

function toExecutor(pod: PodSpec, main: ContainerSpec): Record<string, unknown> | undefined {
  if (main.executor) return main.executor;
  const spec = pick(pod.mesosSpec, "executorSpec");
  if (!isPlainObject(spec)) return undefined;
  const t = pick(spec, "type");
  const type = enumIs(t, "CUSTOM", 2) ? "CUSTOM" : enumIs(t, "DEFAULT", 1) ? "DEFAULT" : "UNKNOWN";
  const executor: Record<string, unknown> = { type };
  const id = pick(spec, "executorId");
  if (typeof id === "string" && id !== "") executor.executorId = { value: id };
  const data = pick(spec, "data");
  if (typeof data === "string" && data !== "") executor.data = data;
  return executor;
}

/** v1alpha `PodSpec` → v0 `TaskConfig` (`ConvertPodSpecToTaskConfig`); only the first container is used. */
export function podSpecToTaskConfig(pod: PodSpec): TaskConfig {
  const task: TaskConfig = {};
  const main = pod.containers[0];
  if (main?.name) task.name = main.name;
  if (pod.labels) task.labels = pod.labels;
  if (main?.resource) task.resource = main.resource;
  if (main) {
    const container = toContainer(pod, main);
    if (container) task.container = container;
    const command = toCommand(pod, main);
    if (command) task.command = command;
    const executor = toExecutor(pod, main);
    if (executor) task.executor = executor;
    if (main.livenessCheck) task.healthCheck = main.livenessCheck;
    if (main.ports?.length) {
      task.ports = main.ports.map(({ name, value, envName }) =>
        envName ? { name, value, envName } : { name, value }
      );
    }
  }
  if (pod.constraint) task.constraint = pod.constraint;
  if (pod.restartPolicy) task.restartPolicy = pod.restartPolicy;
  if (pod.volume) task.volume = pod.volume;
  if (pod.preemptionPolicy) {
    const kill = pod.preemptionPolicy.killOnPreempt;
    task.preemptionPolicy = { type: kill ? "PREEMPTIBLE" : "NON_PREEMPTIBLE", killOnPreempt: kill };
  }
  if (pod.controller !== undefined) task.controller = pod.controller;
  if (pod.killGracePeriodSeconds) task.killGracePeriodSeconds = pod.killGracePeriodSeconds;
  if (pod.revocable !== undefined) task.revocable = pod.revocable;
  return task;
}

/** A stateless JobSpec as the SERVICE JobConfig Peloton runs; the SLA's `revocable` is set on every task. */
export function statelessSpecToJobConfig(spec: StatelessJobSpec): JobConfig {
  const toTask = (pod: PodSpec): TaskConfig => ({
    ...podSpecToTaskConfig(pod),
    revocable: spec.sla.revocable,
  });
  const config: JobConfig = {
    name: spec.name,
    type: "SERVICE",
    owningTeam: spec.owningTeam,
    ldapGroups: spec.ldapGroups,
    description: spec.description,
    owner: spec.owner,
    labels: spec.labels,
    instanceCount: spec.instanceCount,
    sla: {
      priority: spec.sla.priority,
      preemptible: spec.sla.preemptible,
      revocable: spec.sla.revocable,
      maximumRunningInstances: 0,
      minimumRunningInstances: 0,
      maxRunningTime: 0,
      maximumUnavailableInstances: spec.sla.maximumUnavailableInstances,
    },
    defaultConfig: toTask(spec.defaultSpec),
    instanceConfig: Object.fromEntries(
      Object.entries(spec.instanceSpec).map(([id, pod]) => [id, toTask(pod)]),
    ),
    placementStrategy: "PLACEMENT_STRATEGY_INVALID",
  };
  if (spec.respoolId !== undefined) config.respoolId = spec.respoolId;
  return config;
}

/**
 * The task's Mesos container as the spec says it (`ConvertMesosContainerToPodSpec`): the containerizer in
 * `mesosSpec.type`, a Docker image's parameters in `mesosSpec.dockerParameters`, the image in `image`, and
 * each host-path volume as a pod volume named by its host path (the name it had is not kept) mounted by the
 * container.
 */
function fromContainer(c: ContainerInfo, pod: PodSpec, main: ContainerSpec, mesos: Record<string, unknown>) {
  mesos.type = c.type === "DOCKER" ? "CONTAINER_TYPE_DOCKER" : "CONTAINER_TYPE_MESOS";
  const mounted = (c.volumes ?? []).filter((v) => typeof v.hostPath === "string" && v.hostPath !== "");
  if (mounted.length) {
    const paths = [...new Set(mounted.map((v) => v.hostPath!))];
    pod.volumes = paths.map((path) => ({ name: path, type: "VOLUME_TYPE_HOST_PATH", hostPath: { path } }));
    main.volumeMounts = mounted.map((v) => ({
      name: v.hostPath!,
      readOnly: v.mode === "RO",
      mountPath: v.containerPath,
    }));
  }
  if (c.type === "DOCKER") {
    const parameters = c.docker?.parameters ?? [];
    if (parameters.length) mesos.dockerParameters = parameters.map(({ key, value }) => ({ key, value }));
    if (c.docker?.image) main.image = c.docker.image;
    return;
  }
  const name = pick(pick(pick(c.mesos, "image"), "docker"), "name");
  if (typeof name === "string" && name) main.image = name;
}

/**
 * The task's Mesos command as the spec says it (`ConvertMesosCommandToPodSpec`): `entrypoint` (its value and
 * arguments), `environment`, and `mesosSpec.shell` and `mesosSpec.uris`.
 */
function fromCommand(cmd: CommandInfo, main: ContainerSpec, mesos: Record<string, unknown>) {
  if (cmd.uris.length) mesos.uris = cmd.uris.map((u) => ({ ...u }));
  if (cmd.environment.variables.length) {
    main.environment = cmd.environment.variables.map(({ name, value }) => ({ name, value }));
  }
  mesos.shell = cmd.shell;
  main.entrypoint = { value: cmd.value ?? "", arguments: cmd.arguments };
}

/** The task's executor as `mesosSpec.executorSpec` (`ConvertMesosExecutorInfoToPodSpec`). */
function fromExecutor(executor: Record<string, unknown>, mesos: Record<string, unknown>) {
  const t = executor.type;
  const type = enumIs(t, "CUSTOM", 2) ? "CUSTOM" : enumIs(t, "DEFAULT", 1) ? "DEFAULT" : "INVALID";
  const spec: Record<string, unknown> = { type: `EXECUTOR_TYPE_${type}` };
  const id = pick(executor.executorId, "value");
  if (typeof id === "string" && id !== "") spec.executorId = id;
  if (typeof executor.data === "string" && executor.data !== "") spec.data = executor.data;
  mesos.executorSpec = spec;
}

/**
 * v0 `TaskConfig` → v1alpha `PodSpec` (`ConvertTaskConfigToPodSpec`), the reverse of `podSpecToTaskConfig`.
 * As Peloton's, the task's container, command and executor go into the pod's one container as they are (its
 * `container`, `command` and `executor`), which `podSpecToTaskConfig` takes over unchanged, and are said
 * again in the spec's own fields (`image`, `entrypoint`, `environment`, `volumeMounts`, the pod's `volumes`
 * and `mesosSpec`), so a client reads back the fields it wrote. A task with none of the container's fields
 * gives a pod without containers.
 *
 * A TaskConfig carries two things a PodSpec cannot say: `preemptionPolicy.type` (a spec's pod has only
 * `killOnPreempt`, from which the type is derived again), and the pod's name, which the spec never gives
 * the config (`podName` is dropped on the way in, so it is not made up here).
 */
export function taskConfigToPodSpec(task: TaskConfig): PodSpec {
  const main: ContainerSpec = {};
  const pod: PodSpec = { containers: [] };
  const mesos: Record<string, unknown> = {};
  if (task.name !== undefined) main.name = task.name;
  if (task.resource) main.resource = task.resource;
  if (task.container) {
    main.container = task.container;
    fromContainer(task.container, pod, main, mesos);
  }
  if (task.command) {
    main.command = task.command;
    fromCommand(task.command, main, mesos);
  }
  if (task.executor) {
    main.executor = task.executor;
    fromExecutor(task.executor, mesos);
  }
  if (task.healthCheck) main.livenessCheck = task.healthCheck;
  if (task.ports) {
    main.ports = task.ports.map(({ name, value, envName }) =>
      envName !== undefined ? { name, value, envName } : { name, value }
    );
  }
  if (Object.keys(main).length > 0) pod.containers = [main];
  if (Object.keys(mesos).length > 0) pod.mesosSpec = mesos;
  if (task.labels) pod.labels = task.labels;
  if (task.constraint) pod.constraint = task.constraint;
  if (task.restartPolicy) pod.restartPolicy = task.restartPolicy;
  if (task.volume) pod.volume = task.volume;
  if (task.preemptionPolicy) pod.preemptionPolicy = { killOnPreempt: task.preemptionPolicy.killOnPreempt };
  if (task.controller !== undefined) pod.controller = task.controller;
  if (task.killGracePeriodSeconds !== undefined) pod.killGracePeriodSeconds = task.killGracePeriodSeconds;
  if (task.revocable !== undefined) pod.revocable = task.revocable;
  return pod;
}

/**
 * A JobConfig as the v1alpha stateless JobSpec that makes it (`ConvertJobConfigToJobSpec`): for every spec
 * the parser accepts, `statelessSpecToJobConfig` of this gives back the config the spec made. It answers
 * GetJob from the stored config, so a job created through the v0 API has a spec too.
 *
 * What a JobConfig carries that a JobSpec has no place for is left out: `type` (a spec is always a SERVICE
 * job), `placementStrategy`, the SLA's `maximumRunningInstances`, `minimumRunningInstances` and
 * `maxRunningTime`, and what `taskConfigToPodSpec` leaves out. A task's `revocable` is shown on its pod only
 * where it differs from the SLA's, since a spec's SLA sets it on every task.
 */
export function jobConfigToStatelessSpec(config: JobConfig): StatelessJobSpec {
  const toPod = (task: TaskConfig): PodSpec => {
    const { revocable, ...pod } = taskConfigToPodSpec(task);
    return revocable === undefined || revocable === config.sla.revocable ? pod : { ...pod, revocable };
  };
  const spec: StatelessJobSpec = {
    name: config.name,
    owner: config.owner,
    owningTeam: config.owningTeam,
    ldapGroups: config.ldapGroups,
    description: config.description,
    labels: config.labels,
    instanceCount: config.instanceCount,
    sla: {
      priority: config.sla.priority,
      preemptible: config.sla.preemptible,
      revocable: config.sla.revocable,
      maximumUnavailableInstances: config.sla.maximumUnavailableInstances,
    },
    defaultSpec: toPod(config.defaultConfig),
    instanceSpec: Object.fromEntries(
      Object.entries(config.instanceConfig).map(([id, task]) => [id, toPod(task)]),
    ),
  };
  if (config.respoolId !== undefined) spec.respoolId = config.respoolId;
  return spec;
}

/** The spec with every `restartPolicy.maxFailures` capped at MAX_TASK_RETRIES, as Peloton stores it. */
export function capSpecRestartPolicies(spec: StatelessJobSpec): StatelessJobSpec {
  const cap = (pod: PodSpec): PodSpec =>
    pod.restartPolicy && pod.restartPolicy.maxFailures > MAX_TASK_RETRIES
      ? { ...pod, restartPolicy: { maxFailures: MAX_TASK_RETRIES } }
      : pod;
  const instanceSpec = Object.fromEntries(
    Object.entries(spec.instanceSpec).map(([id, pod]) => [id, cap(pod)]),
  );
  return { ...spec, defaultSpec: cap(spec.defaultSpec), instanceSpec };
}

/** What the conversion cannot carry: Peloton rejects several containers per pod and init containers. */
export function validateStatelessSpec(spec: StatelessJobSpec): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const pods: [PathSeg[], PodSpec][] = [
    [["defaultSpec"], spec.defaultSpec],
    ...Object.entries(spec.instanceSpec).map((
      [id, pod],
    ): [PathSeg[], PodSpec] => [["instanceSpec", id], pod]),
  ];
  for (const [at, pod] of pods) {
    if (pod.containers.length > 1) {
      issues.push({
        path: [...at, "containers"],
        value: pod.containers,
        expected: "at most one container: several containers per pod are not supported",
        severity: "error",
      });
    }
    pod.containers.forEach((c, i) => {
      if (!c.readinessCheck) return;
      issues.push({
        path: [...at, "containers", i, "readinessCheck"],
        value: c.readinessCheck,
        expected: "no readinessCheck: it is not used and not kept (a job's task config has only the " +
          "liveness check, as Peloton's v0 TaskConfig has; GetJob will not show it)",
        severity: "warning",
      });
    });
    const main = pod.containers[0];
    // An instance's container with parts of a command but no entrypoint value would have them dropped (its
    // instance runs the default spec's command): refused, as Peloton's would run a command with nothing in it.
    const parts = main && !main.command && !main.entrypoint?.value &&
      (main.entrypoint !== undefined || (main.environment?.length ?? 0) > 0 ||
        (pick(pod.mesosSpec, "uris") as unknown[] | undefined)?.length);
    if (at[0] === "instanceSpec" && parts) {
      issues.push({
        path: [...at, "containers", 0, "entrypoint", "value"],
        ...(main.entrypoint?.value === undefined ? {} : { value: main.entrypoint.value }),
        expected: "the command to run: an instance's container that sets its environment, entrypoint or " +
          "URIs runs a command of its own instead of the default spec's",
        severity: "error",
      });
    }
    if (pod.initContainers?.length) {
      issues.push({
        path: [...at, "initContainers"],
        value: pod.initContainers,
        expected: "no initContainers: init containers are not supported",
        severity: "error",
      });
    }
  }
  return issues;
}

// Where a TaskConfig field came from in a PodSpec.
const CONTAINER_FIELD: Partial<Record<string, PathSeg[]>> = {
  name: ["containers", 0, "name"],
  resource: ["containers", 0, "resource"],
  container: ["containers", 0, "container"],
  command: ["containers", 0, "entrypoint"],
  executor: ["containers", 0, "executor"],
  healthCheck: ["containers", 0, "livenessCheck"],
  ports: ["containers", 0, "ports"],
};

/** Maps a path in the converted JobConfig back into the spec, so errors point into the spec file. */
export function specPathOf(jobPath: readonly PathSeg[]): PathSeg[] {
  const [head, ...rest] = jobPath;
  let pod: PathSeg[];
  let field: readonly PathSeg[];
  if (head === "defaultConfig") [pod, field] = [["defaultSpec"], rest];
  else if (head === "instanceConfig" && rest.length > 0) {
    [pod, field] = [["instanceSpec", rest[0]], rest.slice(1)];
  } else return [...jobPath];
  if (field.length === 0) return pod;
  const [name, ...tail] = field;
  const container = CONTAINER_FIELD[String(name)];
  // A command without a value can only be a container's own `command` (one made from the entrypoint has its
  // value): its value is named there.
  if (name === "command" && tail[0] === "value") return [...pod, "containers", 0, "command", "value"];
  if (container) return [...pod, ...container, ...(name === "command" ? [] : tail)];
  if (name === "preemptionPolicy") return [...pod, "preemptionPolicy", "killOnPreempt"];
  return [...pod, ...field];
}
