/** Zod schemas for v0 `TaskConfig` and parts: resources, command, container, health check, constraints. */
import { z } from "zod";
import type {
  CommandInfo,
  Constraint,
  ContainerInfo,
  EnvironmentVariable,
  HealthCheckConfig,
  Label,
  LabelConstraint,
  PersistentVolumeConfig,
  PortConfig,
  PreemptionPolicy,
  ResourceConfig,
  RestartPolicy,
  TaskConfig,
} from "./config_types.ts";
import { amount, bool, keyMeta, num, protoEnum, text, textList, uint } from "./_schema_kit.ts";
import { isPlainObject } from "./yaml_load.ts";

export const LabelSchema: z.ZodType<Label> = z.object({ key: text(), value: text().default("") });

export const ResourceConfigSchema: z.ZodType<ResourceConfig> = z.object({
  cpuLimit: amount().default(0),
  memLimitMb: amount().default(0),
  diskLimitMb: amount().default(0),
  fdLimit: uint().default(0),
  gpuLimit: amount().default(0),
});

/**
 * `mesos.v1.Environment.Variable`. Its `type` is VALUE (or UNKNOWN, Mesos's default reading as VALUE), said
 * or not: a variable's value is the text given. A SECRET one (from `secret`) is refused: a job's secrets
 * (`secrets`) are files in the sandbox.
 */
export const EnvironmentVariableSchema: z.ZodType<EnvironmentVariable> = z.object({
  name: text(),
  value: text().default(""),
  type: protoEnum({ UNKNOWN: 0, VALUE: 1, SECRET: 2 }).optional().refine((t) => t !== "SECRET", {
    message: "VALUE (1): variables from secrets are not supported; give the secret in the job's `secrets`, " +
      "which are written as files into the sandbox",
  }),
}).transform(({ name, value }) => ({ name, value }));

const UriSchema = z.object({
  value: text(),
  executable: bool().optional(),
  extract: bool().optional(),
  cache: bool().optional(),
  /** The file's name in the sandbox (Mesos `output_file`). */
  outputFile: text().optional(),
});

/** `mesos.v1.CommandInfo`; `shell` defaults to true as in Mesos. */
export const CommandInfoSchema: z.ZodType<CommandInfo> = z.object({
  shell: bool().default(true),
  value: text().optional(),
  arguments: textList().default([]),
  environment: z.object({ variables: z.array(EnvironmentVariableSchema).default([]) }).prefault({}),
  uris: z.array(UriSchema).default([]),
  user: text().optional(),
});

const portNumber = () => num({ int: true, min: 0, max: 65535 });

/** `mesos.v1.Image`: a Docker image by name, or an AppC image. */
const ImageSchema = z.looseObject({
  type: protoEnum({ APPC: 1, DOCKER: 2 }),
  docker: z.looseObject({ name: text() }).optional(),
  appc: z.looseObject({ name: text() }).optional(),
  cached: bool().optional(),
});

/** `mesos.v1.Volume`: exactly one of a host path, an image or a source is mounted at `containerPath`. */
const VolumeSchema = z.looseObject({
  containerPath: text(),
  hostPath: text().optional(),
  mode: protoEnum({ RW: 1, RO: 2 }).optional(),
  image: ImageSchema.optional(),
  source: z.looseObject({}).optional(),
});

/** `DockerInfo.PortMapping`. */
const PortMappingSchema = z.looseObject({
  hostPort: portNumber(),
  containerPort: portNumber(),
  protocol: text().optional(),
});

/**
 * `mesos.v1.ContainerInfo`: the fields Peloton's files use are checked, any others are kept as given. What a
 * Mesos master refuses at launch is refused here, when the job is created: a Docker container without its
 * image, an image without its name, a volume without exactly one of a host path, an image or a source.
 */
export const ContainerInfoSchema: z.ZodType<ContainerInfo> = z.looseObject({
  type: protoEnum({ DOCKER: 1, MESOS: 2 }),
  docker: z.looseObject({
    image: text().optional(),
    network: protoEnum({ HOST: 1, BRIDGE: 2, NONE: 3, USER: 4 }).optional(),
    parameters: z.array(LabelSchema).optional(),
    forcePullImage: bool().optional(),
    privileged: bool().optional(),
    portMappings: z.array(PortMappingSchema).optional(),
    volumeDriver: text().optional(),
  }).optional(),
  mesos: z.looseObject({ image: ImageSchema.optional() }).optional(),
  volumes: z.array(VolumeSchema).optional(),
  hostname: text().optional(),
}).superRefine((c, ctx) => {
  if (c.type === "DOCKER" && !c.docker?.image) {
    ctx.addIssue({ code: "custom", path: ["docker", "image"], message: "a Docker image, as type is DOCKER" });
  }
  const named = (image: z.infer<typeof ImageSchema> | undefined, path: (string | number)[]) => {
    if (!image) return;
    const kind = image.type === "DOCKER" ? "docker" : "appc";
    if (!image[kind]?.name) {
      ctx.addIssue({
        code: "custom",
        path: [...path, kind, "name"],
        message: `an image name, as type is ${image.type}`,
      });
    }
  };
  named(c.mesos?.image, ["mesos", "image"]);
  (c.volumes ?? []).forEach((v, i) => {
    const given =
      [v.hostPath !== undefined, v.image !== undefined, v.source !== undefined].filter(Boolean).length;
    if (given !== 1) {
      ctx.addIssue({
        code: "custom",
        path: ["volumes", i, "hostPath"],
        message: `exactly one of hostPath, image or source (got ${given})`,
      });
    }
    named(v.image, ["volumes", i, "image"]);
  });
}) as z.ZodType<ContainerInfo>;

/** `mesos.v1.ExecutorInfo`, kept as given apart from `type` (validation needs CUSTOM) and `data`. */
export const ExecutorInfoSchema: z.ZodType<Record<string, unknown>> = z.looseObject({
  type: protoEnum({ UNKNOWN: 0, DEFAULT: 1, CUSTOM: 2 }, { prefixes: ["EXECUTOR_TYPE_"] }).optional(),
  data: text().optional(),
});

// Proto says a zero or missing interval uses Mesos's default, so both read as the default here.
const secondsOr = (fallback: number) => uint().default(0).transform((v) => v === 0 ? fallback : v);

/** v0 `HealthCheckConfig`, also v1alpha's `HealthCheckSpec` (liveness/readiness checks). */
export const HealthCheckConfigSchema: z.ZodType<HealthCheckConfig> = z.object({
  enabled: bool().default(false),
  initialIntervalSecs: secondsOr(15),
  intervalSecs: secondsOr(10),
  maxConsecutiveFailures: secondsOr(3),
  timeoutSecs: secondsOr(20),
  type: protoEnum({ UNKNOWN: 0, COMMAND: 1, HTTP: 2, GRPC: 3 }, { prefixes: ["HEALTH_CHECK_TYPE_"] })
    .default("UNKNOWN"),
  commandCheck: z.object({ command: text().default(""), unshareEnvironments: bool().optional() }).optional(),
  httpCheck: z.object({
    scheme: text().optional(),
    port: portNumber().default(0),
    path: text().optional(),
  }).optional(),
}).register(keyMeta, { aliases: { httpGet: "httpCheck" } });

export const PortConfigSchema: z.ZodType<PortConfig> = z.object({
  name: text().default(""),
  value: portNumber().default(0),
  envName: text().optional(),
});

const LabelConstraintSchema: z.ZodType<LabelConstraint> = z.object({
  kind: protoEnum({ TASK: 1, HOST: 2 }, { prefixes: ["LABEL_CONSTRAINT_KIND_"], aliases: { POD: "TASK" } }),
  condition: protoEnum(
    { LESS_THAN: 1, EQUAL: 2, GREATER_THAN: 3 },
    { prefixes: ["LABEL_CONSTRAINT_CONDITION_", "CONDITION_"] },
  ),
  label: LabelSchema,
  requirement: uint().default(0),
});

const CONSTRAINT_FIELD = {
  LABEL_CONSTRAINT: "labelConstraint",
  AND_CONSTRAINT: "andConstraint",
  OR_CONSTRAINT: "orConstraint",
} as const;
type ConstraintType = keyof typeof CONSTRAINT_FIELD;

const constraintType = protoEnum<ConstraintType>(
  { LABEL_CONSTRAINT: 1, AND_CONSTRAINT: 2, OR_CONSTRAINT: 3 },
  {
    prefixes: ["CONSTRAINT_TYPE_"],
    aliases: { LABEL: "LABEL_CONSTRAINT", AND: "AND_CONSTRAINT", OR: "OR_CONSTRAINT" },
  },
);

interface ConstraintFields {
  type?: ConstraintType;
  labelConstraint?: LabelConstraint;
  andConstraint?: { constraints: Constraint[] };
  orConstraint?: { constraints: Constraint[] };
}

/** The type asked for, or, without one, the type of the one sub-constraint given. */
function constraintTypeOf(c: ConstraintFields): ConstraintType | undefined {
  if (c.type !== undefined) return c.type;
  const given = (Object.keys(CONSTRAINT_FIELD) as ConstraintType[]).filter((t) => c[CONSTRAINT_FIELD[t]]);
  return given.length === 1 ? given[0] : undefined;
}

/** Type and sub-constraint must agree; checked even when a field inside a sub-constraint is malformed. */
function checkConstraintType(c: ConstraintFields, ctx: z.RefinementCtx<ConstraintFields>): void {
  const type = constraintTypeOf(c);
  if (type === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["type"],
      message: "one of LABEL_CONSTRAINT (1), AND_CONSTRAINT (2) or OR_CONSTRAINT (3)",
    });
    return;
  }
  const field = CONSTRAINT_FIELD[type];
  if (c[field] === undefined) {
    ctx.addIssue({
      code: "custom",
      path: [field],
      message: `${field === "labelConstraint" ? "a" : "an"} ${field}, as type is ${type}`,
    });
  }
}

/** Only the type needs to have parsed: which sub-constraints are given is known either way. */
const typeParsed = (payload: z.core.ParsePayload) =>
  !payload.issues.some((iss) => iss.path?.[0] === "type") && isPlainObject(payload.value);

/** v0 `task.Constraint` (and v1alpha `pod.Constraint`): a label constraint or an AND/OR of constraints. */
export const ConstraintSchema: z.ZodType<Constraint> = z.lazy(() =>
  z.object({
    type: constraintType.optional(),
    labelConstraint: LabelConstraintSchema.optional(),
    andConstraint: z.object({ constraints: z.array(ConstraintSchema).default([]) }).optional(),
    orConstraint: z.object({ constraints: z.array(ConstraintSchema).default([]) }).optional(),
  }).superRefine(checkConstraintType, { when: typeParsed }).transform((c): Constraint => {
    // Reached only when every check passed (a pipe stops at any issue): the type's own field is there.
    const type = constraintTypeOf(c)!;
    if (type === "LABEL_CONSTRAINT") return { type, labelConstraint: c.labelConstraint! };
    if (type === "AND_CONSTRAINT") return { type, andConstraint: c.andConstraint! };
    return { type, orConstraint: c.orConstraint! };
  })
);

export const RestartPolicySchema: z.ZodType<RestartPolicy> = z.object({ maxFailures: uint().default(0) });

export const PersistentVolumeConfigSchema: z.ZodType<PersistentVolumeConfig> = z.object({
  containerPath: text(),
  sizeMB: uint().default(0),
});

export const PreemptionPolicySchema: z.ZodType<PreemptionPolicy> = z.object({
  type: protoEnum({ INVALID: 0, PREEMPTIBLE: 1, NON_PREEMPTIBLE: 2 }, { prefixes: ["TYPE_"] }).default(
    "INVALID",
  ),
  killOnPreempt: bool().default(false),
});

/** v0 `task.TaskConfig`; absent sections stay absent, since the instance merge depends on it. */
export const TaskConfigSchema: z.ZodType<TaskConfig> = z.object({
  name: text().optional(),
  labels: z.array(LabelSchema).optional(),
  resource: ResourceConfigSchema.optional(),
  container: ContainerInfoSchema.optional(),
  command: CommandInfoSchema.optional(),
  executor: ExecutorInfoSchema.optional(),
  healthCheck: HealthCheckConfigSchema.optional(),
  ports: z.array(PortConfigSchema).optional(),
  constraint: ConstraintSchema.optional(),
  restartPolicy: RestartPolicySchema.optional(),
  volume: PersistentVolumeConfigSchema.optional(),
  preemptionPolicy: PreemptionPolicySchema.optional(),
  controller: bool().optional(),
  killGracePeriodSeconds: uint().optional(),
  revocable: bool().optional(),
});
