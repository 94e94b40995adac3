/** Peloton's semantic checks of a v0 JobConfig (`pkg/jobmgr/job/config/validate.go`), plus ours. */

// Unlike Peloton, every violation is reported, not only the first. Ours: DAEMON jobs (which Peloton
// rejected) follow the SERVICE rules, and a BATCH job may not ask for a persistent volume. Each issue
// names the fields it read (`uses`), so a config checked with malformed fields taken out (`gaps`) is only
// judged by the rules whose fields parsed.
import { canonicalBase64 } from "./base64.ts";
import type { JobConfig, TaskConfig } from "./config_types.ts";
import { type Gaps, judged, NO_GAPS, type PathSeg, type RuleIssue } from "./config_issues.ts";
import { mergeTaskConfigs, overridesField } from "./task_merge.ts";
import { ENV_NAME, executorSets, portVariables, PROCESS_ENV } from "./task_env.ts";

/** `max_tasks_per_job` in Peloton's `config/jobmgr/base.yaml`. */
export const DEFAULT_MAX_TASKS_PER_JOB = 100_000;
/** `_maxTaskRetries`: a larger `restartPolicy.maxFailures` is capped, not rejected. */
export const MAX_TASK_RETRIES = 100;

export interface ValidateJobOptions {
  maxTasksPerJob?: number;
  /** Fields that were malformed in the input; rules that read them are skipped. */
  gaps?: Gaps;
}

/** Collects issues; one raised by the default config for many instances is reported once, naming them. */
class IssueSet {
  private readonly byKey = new Map<string, { issue: RuleIssue; instances: number[] }>();

  constructor(private readonly gaps: Gaps) {}

  add(issue: RuleIssue, instance?: number): void {
    if (!judged(issue, this.gaps)) return;
    const key = JSON.stringify([issue.path, issue.expected]);
    const entry = this.byKey.get(key) ?? { issue, instances: [] };
    if (instance !== undefined) entry.instances.push(instance);
    this.byKey.set(key, entry);
  }

  /** `instanceCount` tells when an issue of the default config hits only some instances, worth naming. */
  list(instanceCount: number): RuleIssue[] {
    return [...this.byKey.values()].map(({ issue, instances }) =>
      issue.path[0] === "defaultConfig" && instances.length > 0 && instances.length < instanceCount
        ? { ...issue, expected: `${issue.expected} (${describeInstances(instances)})` }
        : issue
    );
  }
}

/** `instances 1-3, 7`; long lists are cut short. */
function describeInstances(ids: number[]): string {
  const ranges: string[] = [];
  for (let i = 0; i < ids.length; i++) {
    let j = i;
    while (j + 1 < ids.length && ids[j + 1] === ids[j] + 1) j++;
    ranges.push(i === j ? `${ids[i]}` : `${ids[i]}-${ids[j]}`);
    i = j;
  }
  const shown = ranges.length > 4 ? [...ranges.slice(0, 4), "..."] : ranges;
  return `${ids.length === 1 ? "instance" : "instances"} ${shown.join(", ")}`;
}

type Uses = readonly (readonly PathSeg[])[];

function error(path: PathSeg[], expected: string, value?: unknown, uses?: Uses): RuleIssue {
  const issue: RuleIssue = { path, expected, severity: "error" };
  if (value !== undefined) issue.value = value;
  if (uses) issue.uses = uses;
  return issue;
}

/**
 * Fields a job's type makes of no effect, each a warning so the user learns the file does not do what it
 * says: a DAEMON's instanceCount, since it runs one instance on each UP host its constraint matches.
 */
export function ignoredByType(config: JobConfig): RuleIssue[] {
  if (config.type !== "DAEMON" || config.instanceCount === 0) return [];
  return [{
    path: ["instanceCount"],
    value: config.instanceCount,
    expected: "no instanceCount on a DAEMON job: its instances follow its hosts",
    ignored:
      "ignored for a DAEMON job (its instances follow its hosts: one on each UP host its constraint matches)",
    severity: "warning",
    uses: [["type"]],
  }];
}

/** All rule violations of a parsed JobConfig; an empty list means Peloton would accept it. */
export function validateJobConfig(config: JobConfig, opts: ValidateJobOptions = {}): RuleIssue[] {
  const gaps = opts.gaps ?? NO_GAPS;
  const maxTasksPerJob = opts.maxTasksPerJob ?? DEFAULT_MAX_TASKS_PER_JOB;
  const issues = new IssueSet(gaps);
  checkJob(config, maxTasksPerJob, issues);
  const countKnown = !gaps.malformed(["instanceCount"]) && config.instanceCount <= maxTasksPerJob;
  const checked = instancesToCheck(config, countKnown, maxTasksPerJob);
  for (let i = 0; i < checked; i++) checkInstance(config, i, issues);
  for (const id of Object.keys(config.instanceConfig)) {
    const never = "this override is never used";
    if (Number(id) >= config.instanceCount && countKnown) {
      issues.add({
        path: ["instanceConfig", id],
        value: Number(id),
        expected: `an instance id below instanceCount (${config.instanceCount}); ${never}`,
        severity: "warning",
        uses: [["instanceCount"]],
      });
    } else if (Number(id) >= maxTasksPerJob) {
      issues.add({
        path: ["instanceConfig", id],
        value: Number(id),
        expected: `an instance id below ${maxTasksPerJob}, the most instances a job may have; ${never}`,
        severity: "warning",
      });
    }
  }
  return issues.list(checked);
}

/**
 * How many instances the per-instance rules look at: never more than a job may have, so a huge
 * instanceCount or instance id costs no more to refuse than a valid job costs to accept.
 */
function instancesToCheck(config: JobConfig, countKnown: boolean, maxTasksPerJob: number): number {
  // A malformed count, or one refused as too large: every instance with an override a job could have, and
  // instance 0 for the default config alone.
  if (!countKnown) {
    let checked = 1;
    for (const id of Object.keys(config.instanceConfig)) {
      if (Number(id) < maxTasksPerJob) checked = Math.max(checked, Number(id) + 1);
    }
    return checked;
  }
  // A daemon's instances follow its hosts: its instanceCount is not used, its default config is.
  return config.type === "DAEMON" ? Math.max(1, config.instanceCount) : config.instanceCount;
}

function checkJob(config: JobConfig, maxTasksPerJob: number, issues: IssueSet): void {
  const { sla, instanceCount, type } = config;
  if (instanceCount === 0 && type !== "DAEMON") {
    issues.add(error(["instanceCount"], "at least 1 instance", 0, [["type"]]));
  }
  if (instanceCount > maxTasksPerJob) {
    issues.add(error(["instanceCount"], `at most ${maxTasksPerJob} instances per job`, instanceCount));
  }
  if (type !== "BATCH") {
    const zero = `0 for a ${type} job`;
    const byType: Uses = [["type"]];
    if (sla.maximumRunningInstances !== 0) {
      issues.add(error(["sla", "maximumRunningInstances"], zero, sla.maximumRunningInstances, byType));
    }
    if (sla.minimumRunningInstances !== 0) {
      issues.add(error(["sla", "minimumRunningInstances"], zero, sla.minimumRunningInstances, byType));
    }
    if (sla.maxRunningTime !== 0) {
      issues.add(error(["sla", "maxRunningTime"], zero, sla.maxRunningTime, byType));
    }
    if (sla.revocable && !sla.preemptible) {
      const why = `true, since sla.revocable is true: a revocable ${type} job must be preemptible`;
      issues.add(error(["sla", "preemptible"], why, false, [["type"], ["sla", "revocable"]]));
    }
  }
  let maxRunning = sla.maximumRunningInstances;
  if (maxRunning > instanceCount) {
    const expected = `at most instanceCount (${instanceCount})`;
    issues.add(error(["sla", "maximumRunningInstances"], expected, maxRunning, [["instanceCount"]]));
  }
  if (maxRunning === 0) maxRunning = instanceCount;
  if (sla.minimumRunningInstances > maxRunning) {
    const bound = sla.maximumRunningInstances === 0 ? "instanceCount" : "sla.maximumRunningInstances";
    issues.add(
      error(
        ["sla", "minimumRunningInstances"],
        `at most ${bound} (${maxRunning})`,
        sla.minimumRunningInstances,
        [["sla", "maximumRunningInstances"], ["instanceCount"]],
      ),
    );
  }
}

function checkInstance(config: JobConfig, i: number, issues: IssueSet): void {
  const override = config.instanceConfig[i];
  const task = mergeTaskConfigs(config.defaultConfig, override);
  // Blame the config the merged value came from, so the message points at the line to fix.
  const at = (field: keyof TaskConfig, ...rest: PathSeg[]): PathSeg[] =>
    override && overridesField(override, field)
      ? ["instanceConfig", String(i), field, ...rest]
      : ["defaultConfig", field, ...rest];
  // Either config could have given the merged value: a rule reads the field in both.
  const from = (field: keyof TaskConfig, ...rest: PathSeg[]): PathSeg[][] => [
    ["defaultConfig", field, ...rest],
    ["instanceConfig", String(i), field, ...rest],
  ];
  const add = (issue: RuleIssue) => issues.add(issue, i);
  const { type, sla } = config;

  const customExecutor = task.executor?.type === "CUSTOM";
  task.ports?.forEach((p, j) => {
    if (p.name === "") add(error(at("ports", j, "name"), "a port name", p.name, from("ports", j, "name")));
    if (p.value === 0 && !p.envName && !customExecutor) {
      const why = `an envName for dynamic port "${p.name}" (value 0 is picked at launch)`;
      const uses = [
        ...from("ports", j, "value"),
        ...from("ports", j, "envName"),
        ...from("executor", "type"),
      ];
      add(error(at("ports", j, "envName"), why, p.envName, uses));
    }
    // Ours (Peloton's validator only wants names): ports are allocated by name and passed in the env var
    // their envName names, so a repeated one leaves a port never allocated or two ports one value.
    const ports = task.ports ?? [];
    const k = ports.findIndex((q) => q.name === p.name);
    if (p.name !== "" && k < j) {
      const why = `a port name used once (ports[${k}] is also named "${p.name}")`;
      const uses = [...from("ports", j, "name"), ...from("ports", k, "name")];
      add(error(at("ports", j, "name"), why, p.name, uses));
    }
    const e = ports.findIndex((q) => q.envName === p.envName);
    if (p.envName && e < j) {
      const why = `an envName used once (ports[${e}] also sets ${p.envName})`;
      const uses = [...from("ports", j, "envName"), ...from("ports", e, "envName")];
      add(error(at("ports", j, "envName"), why, p.envName, uses));
    }
    if (p.envName) checkEnvName(task, j, p.envName, at, from, add);
    if (ENV_NAME.test(p.name) && !portVariables(p.name).includes(p.name)) {
      // Peloton exports only envName; the agents here also export the name, but never over such a variable.
      const as = [...(p.envName ? [p.envName] : []), ...portVariables(p.name)].join(" and ");
      const why = "a port name the task's environment does not use; " +
        `exported as ${as} only, not as ${p.name}, which the task relies on`;
      add({ ...error(at("ports", j, "name"), why, p.name, from("ports", j, "name")), severity: "warning" });
    }
    // A host gives a static port once: a task asking for it twice fits no host, and would wait for good.
    const v = ports.findIndex((q) => q.value === p.value);
    if (p.value && v < j) {
      const why = `a static port asked for once (ports[${v}] also asks for ${p.value})`;
      const uses = [...from("ports", j, "value"), ...from("ports", v, "value")];
      add(error(at("ports", j, "value"), why, p.value, uses));
    }
  });
  // The executor's variables go over the task's own (`agent.ts`, `mesos_convert.ts`): the value is lost.
  task.command?.environment.variables.forEach((v, k) => {
    if (!executorSets(v.name)) return;
    const path = at("command", "environment", "variables", k, "name");
    add({
      path,
      value: v.name,
      expected: "a variable the executor does not set itself",
      ignored: `replaced: the executor sets ${v.name} in every task, over the task's own`,
      severity: "warning",
      uses: from("command", "environment", "variables", k, "name"),
    });
  });
  if (task.command === undefined) {
    add(
      error(
        at("command"),
        "a command: every instance needs one once instanceConfig is merged over defaultConfig",
        undefined,
        from("command"),
      ),
    );
  } else if (!task.command.value) {
    // A command with nothing to run (`command: {}`) fails every launch of the task, for ever: refused as a
    // missing one is.
    add(
      error(
        at("command", "value"),
        "the command to run: every instance needs one once instanceConfig is merged over defaultConfig",
        task.command.value,
        from("command", "value"),
      ),
    );
  }
  if (task.controller && i !== 0) {
    add(error(at("controller"), "false: only instance 0 may be a controller", true, from("controller")));
  }
  const byType = (field: keyof TaskConfig, ...rest: PathSeg[]) => [["type"], ...from(field, ...rest)];
  if (type === "BATCH") {
    if (task.healthCheck) {
      add(error(at("healthCheck"), "no healthCheck on a BATCH job", task.healthCheck, byType("healthCheck")));
    }
    if (task.executor) {
      add(error(at("executor"), "no executor on a BATCH job", task.executor, byType("executor")));
    }
  } else {
    if (task.preemptionPolicy?.killOnPreempt) {
      const uses = byType("preemptionPolicy", "killOnPreempt");
      add(error(at("preemptionPolicy", "killOnPreempt"), `false for a ${type} job`, true, uses));
    }
    if (task.executor && task.executor.type !== "CUSTOM") {
      const why = "CUSTOM (2), the only executor type supported";
      add(error(at("executor", "type"), why, task.executor.type, byType("executor", "type")));
    }
    if (task.executor && !task.executor.data) {
      add(error(at("executor", "data"), "executor data", task.executor.data, byType("executor", "data")));
    } else if (
      task.executor &&
      !(typeof task.executor.data === "string" && canonicalBase64(task.executor.data) !== undefined)
    ) {
      // Bytes, as Peloton's proto has them: Mesos would refuse the launch (TASK_ERROR) on every host.
      const why = "the executor's data in base64 (bytes, as Peloton's ExecutorInfo.data)";
      add(error(at("executor", "data"), why, task.executor.data, byType("executor", "data")));
    }
    // An enabled check that cannot run leaves the task HEALTH_UNKNOWN for good, and a rolling update waiting on
    // it for ever (Peloton sends such a check nowhere either).
    const hc = task.healthCheck;
    if (hc?.enabled) {
      const uses = (
        ...rest: PathSeg[]
      ) => [...from("healthCheck", "enabled"), ...from("healthCheck", ...rest)];
      if (hc.type === "GRPC") {
        const why = "COMMAND or HTTP: a GRPC check is run by no agent, and the task would never be healthy";
        add(error(at("healthCheck", "type"), why, "GRPC", uses("type")));
      } else if (hc.type === "HTTP") {
        if (!hc.httpCheck) {
          add(
            error(
              at("healthCheck", "httpCheck"),
              "an httpCheck (port, path) for an HTTP check",
              undefined,
              uses(),
            ),
          );
        }
      } else if (!hc.commandCheck?.command) {
        const why = "a command to run for the enabled check (or type HTTP with an httpCheck)";
        add(
          error(
            at("healthCheck", "commandCheck", "command"),
            why,
            hc.commandCheck?.command,
            uses("commandCheck"),
          ),
        );
      }
    }
  }
  const policy = task.preemptionPolicy?.type ?? "INVALID";
  if (
    policy !== "INVALID" && (policy === "PREEMPTIBLE") !== sla.preemptible && i < sla.minimumRunningInstances
  ) {
    const why =
      `no preemption override below sla.minimumRunningInstances (${sla.minimumRunningInstances}): ` +
      "one gang would mix preemptible and non-preemptible tasks";
    const uses = [
      ...from("preemptionPolicy", "type"),
      ["sla", "preemptible"],
      ["sla", "minimumRunningInstances"],
    ];
    add(error(at("preemptionPolicy", "type"), why, policy, uses));
  }
  const maxFailures = task.restartPolicy?.maxFailures ?? 0;
  if (maxFailures > MAX_TASK_RETRIES) {
    add({
      path: at("restartPolicy", "maxFailures"),
      value: maxFailures,
      expected: `at most ${MAX_TASK_RETRIES}; capped at ${MAX_TASK_RETRIES}`,
      severity: "warning",
      uses: from("restartPolicy", "maxFailures"),
    });
  }
}

/**
 * Ours: the variable a port's envName names is set over the task's own environment (`task_build.ts`), and the
 * executor's variables over both, so an envName either already uses loses one value without a word: the
 * task finds the executor's value where it looks for its port, or a port number where it set a variable.
 */
function checkEnvName(
  task: TaskConfig,
  j: number,
  envName: string,
  at: (field: keyof TaskConfig, ...rest: PathSeg[]) => PathSeg[],
  from: (field: keyof TaskConfig, ...rest: PathSeg[]) => PathSeg[][],
  add: (issue: RuleIssue) => void,
): void {
  const refuse = (why: string, ...uses: PathSeg[][]) =>
    add(
      error(at("ports", j, "envName"), `an envName ${why}`, envName, [
        ...from("ports", j, "envName"),
        ...uses,
      ]),
    );
  if (executorSets(envName)) {
    return refuse(`the executor does not set itself (it sets ${envName} in every task, over the port)`);
  }
  if (PROCESS_ENV.has(envName)) {
    const why = `the task's processes do not rely on (${envName} is the process environment's own, which ` +
      "the port would replace)";
    return refuse(why);
  }
  const ports = task.ports ?? [];
  // The port's own PORT_<NAME> or name holds the same number: no clash.
  const k = ports.findIndex((q, i) => i !== j && portVariables(q.name).includes(envName));
  if (k >= 0) {
    const why = `no other port is exported in (ports[${k}] "${ports[k].name}" is exported as ${envName} too)`;
    return refuse(why, ...from("ports", k, "name"));
  }
  const v = (task.command?.environment.variables ?? []).findIndex((e) => e.name === envName);
  if (v >= 0) {
    const why = `the task's environment does not set (it sets ${envName} too, which the port would replace)`;
    return refuse(why, ...from("command", "environment", "variables", v, "name"));
  }
}

/** The config with every `restartPolicy.maxFailures` capped at MAX_TASK_RETRIES, as Peloton stores it. */
export function capRestartPolicies(config: JobConfig): JobConfig {
  const cap = (t: TaskConfig): TaskConfig =>
    t.restartPolicy && t.restartPolicy.maxFailures > MAX_TASK_RETRIES
      ? { ...t, restartPolicy: { ...t.restartPolicy, maxFailures: MAX_TASK_RETRIES } }
      : t;
  const instanceConfig = Object.fromEntries(
    Object.entries(config.instanceConfig).map(([k, t]) => [k, cap(t)]),
  );
  return { ...config, defaultConfig: cap(config.defaultConfig), instanceConfig };
}
