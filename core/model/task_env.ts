/** The variables a task's environment relies on, and the ones its ports are exported in. */

/**
 * Variables the executors set in every task's environment over the task's own (Peloton's `task_builder.go`
 * the first three; here `prod/minicluster/agent.ts` and `prod/mesos/mesos_convert.ts` all of them): a port
 * exported under one of these names would be overwritten, and the task would never learn its port.
 */
export const EXECUTOR_ENV: ReadonlySet<string> = new Set([
  "PELOTON_JOB_ID",
  "PELOTON_INSTANCE_ID",
  "PELOTON_TASK_ID",
  "PELOTON_VOLUME_PATH",
  "PELOTON_MINICLUSTER_DATA_DIR",
  "HOST",
]);
/** Mesos agents set `MESOS_SANDBOX`, `MESOS_TASK_ID` and more for every task. */
export const EXECUTOR_ENV_PREFIX = "MESOS_";

/**
 * Variables a task's shell and programs find in the environment they inherit: a port number in one of them
 * breaks the task (`PATH=31002`: "ls: not found").
 */
export const PROCESS_ENV: ReadonlySet<string> = new Set([
  "PATH",
  "HOME",
  "PWD",
  "SHELL",
  "USER",
  "LOGNAME",
  "TMPDIR",
  "IFS",
  "ENV",
  "LD_LIBRARY_PATH",
  "LD_PRELOAD",
]);

/** Whether the executor sets `name` in every task, over whatever the task or a port set. */
export function executorSets(name: string): boolean {
  return EXECUTOR_ENV.has(name) || name.startsWith(EXECUTOR_ENV_PREFIX);
}

/** Whether a port may not be exported in `name`: the executor's own, or one the task's processes rely on. */
export function reservedForTask(name: string): boolean {
  return executorSets(name) || PROCESS_ENV.has(name);
}

/** A name a shell can read as a variable. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `PORT_<NAME>`: the port's name upper case, other characters as `_`. */
export function portEnvName(name: string): string {
  return `PORT_${name.toUpperCase().replace(/[^A-Z0-9_]/g, "_")}`;
}

/**
 * The variables the agents here export a port in besides its envName: `PORT_<NAME>`, and the port's name
 * itself when that is a variable name no task relies on (a port named `PATH` is `PORT_PATH` only).
 */
export function portVariables(name: string): string[] {
  const vars = [portEnvName(name)];
  if (ENV_NAME.test(name) && !reservedForTask(name)) vars.push(name);
  return vars;
}

/** Each port's variables (`portVariables`) and its number. */
export function portEnv(ports: Record<string, number>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, port] of Object.entries(ports)) {
    for (const v of portVariables(name)) env[v] = String(port);
  }
  return env;
}
