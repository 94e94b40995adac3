/** `peloton update ...`, `job rolling-*`, `job update|query|delete`, `task start|stop|restart`, `volume ...`. */
import {
  formatIssues,
  loadJobConfig,
  loadUpdateConfig,
  normalizeConfigObject,
} from "../../core/model/load.ts";
import { parseYamlValue } from "../../core/model/yaml_load.ts";
import { STALE_VERSION_MESSAGE } from "../../core/jobmgr/job_api.ts";
import { isTerminalUpdateState, type UpdateState } from "../../core/model/records.ts";
import { JOB_STATES } from "../../core/model/states.ts";
import { JOB_ORDER_PROPERTIES } from "../../core/ports/store.ts";
import type { Command, CommandContext, SortFlags } from "./command.ts";
import { ApiError } from "./client.ts";
import { sortOrder, UsageError, wholeFlag, wholeNumber } from "./command.ts";
import { checkConfig, loadConfigFile, readInput } from "./config_file.ts";
import { table } from "./format.ts";
import {
  OPAQUE_FLAG,
  opaqueFlag,
  parseLabels,
  respoolId,
  SECRET_FLAGS,
  secretsFlag,
} from "./job_commands.ts";
import { parseRange } from "./task_commands.ts";

const JOB = "peloton.api.job.JobManager";
const TASK = "peloton.api.task.TaskManager";
const UPDATE = "peloton.api.v0.update.svc.UpdateService";
const VOLUME = "peloton.api.v0.volume.svc.VolumeService";

/** Peloton's batchPercentage is a double: any number from 0 to 100. */
function percentage(name: string, v: string): number {
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n) || n < 0 || n > 100) {
    throw new UsageError(`${name}: got "${v}", expected a percentage from 0 to 100 (decimals allowed)`);
  }
  return n;
}

/**
 * `-s` job states, checked here because the server filters by them silently, in any case. `v1alpha` takes
 * the stateless JobState names too (`JOB_STATE_KILLED`, `JOB_STATE_INVALID` being v0's UNKNOWN), as
 * Peloton's CLI reads them; the names come back in v0's form.
 */
export function jobStates(v: string, v1alpha = false): string[] {
  return v.split(",").map((s) => s.trim().toUpperCase()).map((s) => {
    const prefixed = v1alpha && s.startsWith("JOB_STATE_");
    const name = prefixed ? s.slice("JOB_STATE_".length) : s;
    const state = prefixed && name === "INVALID" ? "UNKNOWN" : name;
    if (!(state in JOB_STATES) || (prefixed && name === "UNKNOWN")) {
      const names = Object.keys(JOB_STATES).join(", ");
      throw new UsageError(
        `--states: got "${s}", expected one of ${names}` +
          (v1alpha ? ` or a JOB_STATE_ name (JOB_STATE_RUNNING; JOB_STATE_INVALID for UNKNOWN)` : ""),
      );
    }
    return state;
  });
}

/** The flags of `job query` and `job stateless query`, Peloton's. */
export const QUERY_OPTIONS: NonNullable<Command["options"]> = {
  labels: { type: "string", short: "l" },
  respool: { type: "string", short: "r" },
  states: { type: "string", short: "s" },
  owner: { type: "string" },
  name: { type: "string" },
  limit: { type: "string", short: "n", default: "100" },
  offset: { type: "string", short: "o", default: "0" },
  // Peloton's --total (PaginationSpec.maxLimit) defaulted to 100, which made -o 100 and beyond answer
  // nothing; ours caps nothing unless given.
  total: { type: "string", short: "q", default: "0" },
  // Neither flag given leaves the order to the server, which is Peloton's CLI default (creation_time DESC).
  sort: { type: "string", short: "p" },
  sortorder: { type: "string", short: "a" },
};

/**
 * `job query`'s `--sort` and `-a`, as Peloton's CLI defaults them: `--sort` alone sorts descending, `-a`
 * alone by creation_time.
 */
export const JOB_SORT: SortFlags = {
  properties: JOB_ORDER_PROPERTIES,
  order: "DESC",
  property: "creation_time",
};

/** A query's `PaginationSpec` from `-n`, `-o`, `-q`, `--sort` and `-a`. */
export function queryPagination(
  opts: Record<string, unknown>,
  api: "v0" | "v1alpha" = "v0",
): Record<string, unknown> {
  const orderBy = sortOrder(opts.sort, opts.sortorder, JOB_SORT, api);
  return {
    // At least 1, as task and pod queries take it: -n 0 asked for nothing, and got the server's default.
    limit: wholeFlag("limit", opts.limit, 1),
    offset: wholeNumber("--offset", String(opts.offset)),
    maxLimit: wholeNumber("--total", String(opts.total)) || undefined,
    ...(orderBy.length ? { orderBy } : {}),
  };
}

/** `-k/--keywords k1,k2` (Peloton's): each must appear in a job's name, owner, description or labels. */
export function parseKeywords(v: string): string[] {
  return v.split(",").map((k) => k.trim()).filter(Boolean);
}

/**
 * `-d/--timerange DAYS` (Peloton's): the jobs created within the last DAYS days, up to `nowMs`, as a
 * query's `creationTimeRange`; 0 (its default) is no range.
 */
export function creationTimeRange(
  v: unknown,
  nowMs: number,
): { creationTimeRange?: { min: string; max: string } } {
  const days = wholeNumber("--timerange", String(v), Infinity);
  if (days === 0) return {};
  const min = nowMs - days * 86_400_000;
  if (!Number.isFinite(min) || min < -8.64e15) {
    throw new UsageError(`--timerange: got "${v}", expected a number of days`);
  }
  return {
    creationTimeRange: { min: new Date(min).toISOString(), max: new Date(nowMs).toISOString() },
  };
}

/**
 * The line under a query's table: which matches the page shows, of how many, and the offset of the next
 * page when there is one ("jobs 101-200 of 350; next page: -o 200").
 */
export function pageFooter(
  shown: number,
  pagination: { offset?: number; total?: number } | undefined,
): string {
  const total = pagination?.total ?? shown;
  const offset = pagination?.offset ?? 0;
  if (shown === 0) return total > 0 ? `no jobs at offset ${offset}; ${total} match` : "no jobs match";
  const last = offset + shown;
  return `jobs ${offset + 1}-${last} of ${total}${last < total ? `; next page: -o ${last}` : ""}`;
}

/** An empty list for an unknown job is "not found", not "nothing": Get says which. */
async function ensureJob(ctx: CommandContext, job: string): Promise<void> {
  await ctx.client.call(`${JOB}::Get`, { id: { value: job } });
}

/** `--min-running-seconds`: seconds, decimals allowed. */
export function seconds(name: string, v: string): number {
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n) || n < 0) {
    throw new UsageError(`${name}: got "${v}", expected a number of seconds (0 or more)`);
  }
  return n;
}

/** `-r FROM:TO` given any number of times → `[{from, to}]`. */
function ranges(opt: unknown): { from: number; to?: number }[] | undefined {
  if (opt === undefined) return undefined;
  return (Array.isArray(opt) ? opt : [opt]).map((r) => parseRange(String(r)));
}

type UpdateInfo = {
  updateId: { value: string };
  jobId: { value: string };
  type: string;
  status: { state: string; numTasksDone: number; numTasksRemaining: number; numTasksFailed: number };
  configVersion: number;
  creationTime?: string;
};

function updateRows(list: UpdateInfo[]) {
  return table(
    ["Update ID", "Job", "Type", "State", "Done", "Remaining", "Failed", "Config version", "Created"],
    list.map((u) => [
      u.updateId.value,
      u.jobId.value,
      u.type,
      u.status.state,
      u.status.numTasksDone,
      u.status.numTasksRemaining,
      u.status.numTasksFailed,
      u.configVersion,
      u.creationTime,
    ]),
  );
}

/** Peloton's GetUpdateCacheResponse. */
interface UpdateCache {
  jobId?: { value: string };
  state?: string;
  instancesTotal?: number[];
  instancesDone?: number[];
  instancesCurrent?: number[];
  instancesAdded?: number[];
  instancesUpdated?: number[];
  instancesFailed?: number[];
}

/** Instance ids as ranges, in order: `0-3, 7`. */
function instanceList(ids: number[] = []): string {
  const sorted = [...ids].sort((a, b) => a - b);
  const ranges: string[] = [];
  for (let i = 0; i < sorted.length; i++) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    ranges.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j;
  }
  return ranges.join(", ");
}

async function jobConfigVersion(ctx: CommandContext, job: string): Promise<number> {
  return (await jobRuntime(ctx, job)).configurationVersion;
}

type JobRuntime = { configurationVersion: number; updateID?: { value: string } };

async function jobRuntime(ctx: CommandContext, job: string): Promise<JobRuntime> {
  const res = await ctx.client.call<{ jobInfo: { runtime: JobRuntime } }>(`${JOB}::Get`, {
    id: { value: job },
  });
  return res.jobInfo.runtime;
}

/**
 * The job's update in progress, which a new one would abort: its runtime's workflow, read as Peloton's CLI
 * reads it, when that is an UPDATE that has not ended. Other workflows are left to the job manager: an update
 * takes over a rolling create (starting what it had not), and it refuses to overwrite a rolling restart,
 * start or stop, saying so.
 */
async function updateInProgress(ctx: CommandContext, runtime: JobRuntime): Promise<UpdateInfo | undefined> {
  const id = runtime.updateID?.value;
  if (!id) return undefined;
  let info: UpdateInfo;
  try {
    info = (await ctx.client.call<{ updateInfo: UpdateInfo }>(`${UPDATE}::GetUpdate`, {
      updateId: { value: id },
    })).updateInfo;
  } catch (e) {
    // Ended and cleared between the two reads.
    if (e instanceof ApiError && e.code === "not-found") return undefined;
    throw e;
  }
  return info.type === "UPDATE" && !isTerminalUpdateState(info.status.state as UpdateState)
    ? info
    : undefined;
}

/** Peloton's `-o/--override`: start an update even though another one runs (the job manager aborts that). */
export const OVERRIDE_FLAG = { override: { type: "boolean", short: "o", default: false } } as const;

/** Peloton's refusal of an update while another runs, with what the running one is and how to go on. */
function runningRefusal(command: string, job: string, u: UpdateInfo): string {
  const s = u.status;
  return `peloton ${command}: cannot create a new update as another update is already running: update ` +
    `${u.updateId.value} of job ${job} is ${s.state} (${s.numTasksDone} instances done, ` +
    `${s.numTasksRemaining} remaining); give -o/--override to abort it and start this one, or abort it ` +
    `with \`peloton update abort ${u.updateId.value}\``;
}

/**
 * Peloton's refusal (its CLI's) of `command` writing an update while the job's own update runs, or undefined
 * when none runs: only `-o/--override` may replace it (the job manager then aborts the running one).
 */
export async function updateRunningRefusal(
  ctx: CommandContext,
  command: string,
  job: string,
): Promise<string | undefined> {
  const running = await updateInProgress(ctx, await jobRuntime(ctx, job));
  return running ? runningRefusal(command, job, running) : undefined;
}
/** A rolling restart/start/stop: a workflow over instance ranges in batches. */
function rolling(kind: "restart" | "start" | "stop"): Command {
  return {
    name: `job rolling-${kind}`,
    args: ["JOB", "BATCH-SIZE"],
    summary:
      `${kind} a job's instances in batches of BATCH-SIZE, 0 for all at once (-r FROM:TO to pick instances; --resourceVersion to guard)`,
    options: { range: { type: "string", short: "r", multiple: true }, resourceVersion: { type: "string" } },
    async run(ctx, [job, batch], opts) {
      // Peloton's RestartRequest, StartRequest and StopRequest: the batch size in their own config message,
      // passed as given, as Peloton's CLI does: 0 is every instance at once, as the API has it.
      const body: Record<string, unknown> = {
        id: { value: job },
        [`${kind}Config`]: { batchSize: wholeNumber("BATCH-SIZE", batch) },
        ranges: ranges(opts.range),
      };
      if (opts.resourceVersion !== undefined) {
        body.resourceVersion = wholeNumber(
          "--resourceVersion",
          String(opts.resourceVersion),
          Number.MAX_SAFE_INTEGER,
        );
      }
      const method = kind === "restart" ? "Restart" : kind === "start" ? "Start" : "Stop";
      const guard = body.resourceVersion === undefined ? undefined : {
        flag: "--resourceVersion",
        version: body.resourceVersion as number,
        without: "or leave it out: no version is checked",
      };
      const res = await withVersionHint(
        ctx,
        `job rolling-${kind}`,
        job,
        guard,
        () => ctx.client.call<{ updateID: { value: string } }>(`${JOB}::${method}`, body),
      );
      if (!res) return 1;
      ctx.out(
        ctx.json ? JSON.stringify(res) : `Rolling ${kind} ${res.updateID.value} started for job ${job}`,
      );
      return 0;
    },
  };
}

function taskControl(kind: "start" | "stop" | "restart"): Command {
  return {
    name: `task ${kind}`,
    args: ["JOB"],
    summary: `${kind} a job's tasks now (all, or -r FROM:TO ranges)`,
    options: { range: { type: "string", short: "r", multiple: true } },
    async run(ctx, [job], opts) {
      const method = kind === "start" ? "Start" : kind === "stop" ? "Stop" : "Restart";
      // Instances out of range come back as an error (Stop's and Start's) and nothing is done; Restart's
      // is its own `outOfRange` field, as Peloton has it.
      const res = await ctx.client.call<
        Record<string, number[] | undefined> & { outOfRange?: { message?: string } }
      >(`${TASK}::${method}`, { jobId: { value: job }, ranges: ranges(opts.range) });
      if (res.outOfRange) {
        ctx.err(`peloton task ${kind}: ${res.outOfRange.message ?? `instances out of range of job ${job}`}`);
        return 1;
      }
      const done = res.startedInstanceIds ?? res.stoppedInstanceIds ?? res.restartedInstanceIds ?? [];
      const invalid = res.invalidInstanceIds ?? [];
      ctx.out(
        ctx.json
          ? JSON.stringify(res)
          : `Instances ${kind === "stop" ? "stopping" : kind + "ed"}: ${done.join(", ") || "none"}`,
      );
      if (!invalid.length) return 0;
      ctx.err(`peloton task ${kind}: job ${job} no longer has instances ${invalid.join(", ")} (removed)`);
      return 1;
    },
  };
}

function updateControl(kind: "pause" | "resume" | "abort" | "rollback"): Command {
  return {
    name: `update ${kind}`,
    args: ["UPDATE-ID"],
    summary: kind === "rollback" ? "roll an update back" : `${kind} an update (--opaque-data)`,
    options: kind === "rollback" ? {} : OPAQUE_FLAG,
    async run(ctx, [id], opts) {
      const method = kind[0].toUpperCase() + kind.slice(1) + "Update";
      await ctx.client.call(`${UPDATE}::${method}`, { updateId: { value: id }, ...opaqueFlag(opts) });
      ctx.out(ctx.json ? "{}" : `Update ${id}: ${kind} requested`);
      return 0;
    },
  };
}

/** What `update create` sends for a flag the user left out (without --update-config). */
const UPDATE_FLAG_DEFAULTS = {
  maxInstanceAttempts: 0,
  maxFailureInstances: 0,
  rollbackOnFailure: false,
  startPaused: false,
  inPlace: false,
} as const;

/** `update create`'s flags: each with the UpdateConfig field it sets and how its value is read. */
const UPDATE_FLAGS: [flag: string, field: string, read: (name: string, v: string) => number | boolean][] = [
  ["maxattempts", "maxInstanceAttempts", (name, v) => wholeNumber(name, v)],
  ["maxfailureInstances", "maxFailureInstances", (name, v) => wholeNumber(name, v)],
  ["rollbackOnFailure", "rollbackOnFailure", () => true],
  ["start-paused", "startPaused", () => true],
  ["in-place", "inPlace", () => true],
  ["batch-percentage", "batchPercentage", percentage],
  ["min-running-seconds", "minRunningSeconds", seconds],
];

/** An UpdateConfig field the command line sets: its value, and the argument or flag that gave it. */
type GivenFields = Record<string, { value: number | boolean; by: string }>;

/** The UpdateConfig fields BATCH-SIZE and the flags the user gave set; a bad value is a usage error. */
function updateFlags(batch: string, opts: Record<string, unknown>): GivenFields {
  const given: GivenFields = { batchSize: { value: wholeNumber("BATCH-SIZE", batch), by: "BATCH-SIZE" } };
  for (const [flag, field, read] of UPDATE_FLAGS) {
    if (opts[flag] !== undefined) {
      given[field] = { value: read(`--${flag}`, String(opts[flag])), by: `--${flag}` };
    }
  }
  return given;
}

/**
 * `update create --update-config FILE`: Peloton's UpdateConfig, its warnings printed as a job file's are.
 * Undefined, once it has said why, when the file is invalid or sets a field to other than what BATCH-SIZE or
 * a flag sets it to: neither silently wins.
 */
async function updateConfigFile(
  ctx: CommandContext,
  file: string,
  given: GivenFields,
): Promise<Record<string, unknown> | undefined> {
  const text = await readInput(file);
  const loaded = checkConfig(ctx, text, file, loadUpdateConfig) as Record<string, unknown> | undefined;
  if (!loaded) return undefined;
  // The fields the file itself sets, by their canonical names: the loader gives the others their defaults.
  const inFile = normalizeConfigObject("update", parseYamlValue(text), file).value as Record<string, unknown>;
  const clashes = Object.entries(given).filter(([field, g]) => field in inFile && loaded[field] !== g.value);
  for (const [field, g] of clashes) {
    const both = `${g.by} gives ${g.value}, ${file} gives ${loaded[field]}`;
    ctx.err(
      `peloton update create: ${field}: ${both}; where the command line and --update-config both set a ` +
        "field they must agree",
    );
  }
  return clashes.length ? undefined : loaded;
}

/** A configuration version the user gave, the flag it came by, and what leaving the flag out does. */
interface GivenVersion {
  flag: string;
  version: number;
  without: string;
}

/**
 * Runs `call`. When the server refuses the version the user gave as not the job's current one (Peloton's
 * exact message, which its clients match on, is printed as it came), the flag and the job's current
 * configuration version are said too, and the result is undefined.
 */
async function withVersionHint<T>(
  ctx: CommandContext,
  command: string,
  job: string,
  given: GivenVersion | undefined,
  call: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await call();
  } catch (e) {
    const stale = e instanceof ApiError && e.code === "invalid-argument" &&
      e.detail === STALE_VERSION_MESSAGE;
    if (!given || !stale) throw e;
    ctx.err(`peloton ${command}: ${e.message}`);
    const current = await jobConfigVersion(ctx, job).catch(() => undefined);
    const which = current === undefined ? "" : `, ${current}`;
    ctx.err(
      `peloton ${command}: ${given.flag}: got ${given.version}, expected job ${job}'s current configuration ` +
        `version${which} (${given.without})`,
    );
    return undefined;
  }
}

export const updateCommands: Command[] = [
  {
    name: "update create",
    args: ["JOB", "CONFIG", "BATCH-SIZE", "RESPOOL?"],
    summary:
      "roll a service job to a new config in batches (--maxattempts, --maxfailureInstances, --rollbackOnFailure, --start-paused, --in-place, --opaque-data; an instance without a health check counts as updated after --min-running-seconds RUNNING, default 10); RESPOOL, as in Peloton, must be the job's pool; refused while another update of the job runs, unless -o/--override; --update-config FILE: Peloton's whole UpdateConfig (YAML or JSON), BATCH-SIZE and the flags given setting their fields too: where both set one they must agree, or nothing is sent; -c/--configuration-version: the job's config version the update is to replace (default: its current one)",
    options: {
      "configuration-version": { type: "string", short: "c" },
      ...OVERRIDE_FLAG,
      // No defaults: a flag the user gave is told from one left out, which --update-config may then set.
      maxattempts: { type: "string" },
      maxfailureInstances: { type: "string" },
      rollbackOnFailure: { type: "boolean" },
      "start-paused": { type: "boolean" },
      "in-place": { type: "boolean" },
      "batch-percentage": { type: "string" },
      "min-running-seconds": { type: "string" },
      "update-config": { type: "string" },
      ...OPAQUE_FLAG,
    },
    async run(ctx, [job, file, batch, respool], opts) {
      const config = await loadConfigFile(ctx, file, loadJobConfig);
      if (!config) return 1;
      const given = updateFlags(batch, opts);
      let updateConfig: Record<string, unknown> = { ...UPDATE_FLAG_DEFAULTS };
      if (opts["update-config"] !== undefined) {
        const fromFile = await updateConfigFile(ctx, String(opts["update-config"]), given);
        if (!fromFile) return 1;
        updateConfig = fromFile;
      }
      for (const [field, { value }] of Object.entries(given)) updateConfig[field] = value;
      const asked = opts["configuration-version"];
      // A uint64 in Peloton's ChangeLog; JSON numbers are exact up to 2^53.
      const version = asked === undefined
        ? undefined
        : wholeNumber("--configuration-version", String(asked), Number.MAX_SAFE_INTEGER);
      // Peloton's form names the pool, and its CLI sends the pool's id in the config: the server refuses
      // one other than the job's, as a job cannot move to another pool in an update. Looked up once every
      // argument is checked, so that a bad one is a usage error whether or not the server answers.
      const respoolID = respool === undefined ? undefined : { value: await respoolId(ctx, respool) };
      // As Peloton's CLI: the job's update in progress first, which only -o/--override may replace.
      const runtime = await jobRuntime(ctx, job);
      const running = opts.override === true ? undefined : await updateInProgress(ctx, runtime);
      if (running) {
        ctx.err(runningRefusal("update create", job, running));
        return 1;
      }
      const res = await withVersionHint(
        ctx,
        "update create",
        job,
        version === undefined ? undefined : {
          flag: "-c/--configuration-version",
          version,
          without: "or leave -c out: the job's current one is used",
        },
        () =>
          ctx.client.call<{ updateID: { value: string } }>(`${UPDATE}::CreateUpdate`, {
            jobId: { value: job },
            jobConfig: {
              ...config,
              changeLog: { version: version ?? runtime.configurationVersion },
              ...(respoolID ? { respoolID } : {}),
            },
            updateConfig,
            ...opaqueFlag(opts),
          }),
      );
      if (!res) return 1;
      ctx.out(ctx.json ? JSON.stringify(res) : `Update ${res.updateID.value} created`);
      return 0;
    },
  },
  {
    name: "update get",
    args: ["UPDATE-ID"],
    summary: "show an update's state and progress",
    async run(ctx, [id]) {
      const res = await ctx.client.call<{ updateInfo: UpdateInfo }>(`${UPDATE}::GetUpdate`, {
        updateId: { value: id },
      });
      ctx.out(ctx.json ? JSON.stringify(res, null, 2) : updateRows([res.updateInfo]));
      return 0;
    },
  },
  {
    name: "update cache",
    args: ["UPDATE-ID"],
    summary: "show an update as the job manager holds it in memory: its job, state and the instances it " +
      "takes, has done, is at, adds, updates and failed; an update that has ended is not-found " +
      "(UpdateService::GetUpdateCache; debug)",
    async run(ctx, [id]) {
      const res = await ctx.client.call<UpdateCache>(`${UPDATE}::GetUpdateCache`, {
        updateId: { value: id },
      });
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        const lists = [
          res.instancesTotal,
          res.instancesDone,
          res.instancesCurrent,
          res.instancesAdded,
          res.instancesUpdated,
          res.instancesFailed,
        ];
        ctx.out(table(
          ["Job", "State", "Instances", "Done", "Current", "Added", "Updated", "Failed"],
          [[res.jobId?.value, res.state, ...lists.map(instanceList)]],
        ));
      }
      return 0;
    },
  },
  {
    name: "update list",
    args: ["JOB"],
    summary: "list a job's updates, newest first",
    async run(ctx, [job]) {
      const res = await ctx.client.call<{ updateInfo: UpdateInfo[] }>(`${UPDATE}::ListUpdates`, {
        jobID: { value: job },
      });
      if (res.updateInfo.length === 0) await ensureJob(ctx, job);
      ctx.out(ctx.json ? JSON.stringify(res, null, 2) : updateRows(res.updateInfo));
      return 0;
    },
  },
  updateControl("pause"),
  updateControl("resume"),
  updateControl("abort"),
  updateControl("rollback"),
  rolling("restart"),
  rolling("start"),
  rolling("stop"),
  taskControl("start"),
  taskControl("stop"),
  taskControl("restart"),
  {
    name: "job update",
    args: ["JOB", "CONFIG"],
    summary: "resize a job (elastic jobs): grow or shrink instanceCount; added instances go through " +
      "admission, and a smaller count stops the instances past it (it says which; Peloton allowed growth only); " +
      "--secret-path P --secret-data D adds a secret or replaces its data (a job's secrets must all be named)",
    options: SECRET_FLAGS,
    async run(ctx, [job, file], opts) {
      const secrets = secretsFlag(opts);
      const loaded = loadJobConfig(await readInput(file), file);
      if (!loaded.ok) {
        ctx.err(formatIssues(loaded.errors));
        return 1;
      }
      const version = await jobConfigVersion(ctx, job);
      const res = await ctx.client.call<{ message: string }>(`${JOB}::Update`, {
        id: { value: job },
        config: { ...loaded.value, changeLog: { version } },
        secrets,
      });
      ctx.out(ctx.json ? JSON.stringify(res) : res.message);
      return 0;
    },
  },
  {
    name: "job query",
    args: [],
    summary:
      "find jobs by -l labels k=v,..., -r respool, -k keywords k1,k2 (each in the name, owner, description " +
      "or labels, any case), -s states, --owner (the owning team), --name (a part, any case), -d/--timerange " +
      "DAYS (created within the last DAYS days; 0, the default, any time); -n limit, -o offset, -q total; " +
      "-p/--sort creation_time|completion_time|name|owner|state (comma-separated), -a ASC|DESC (DESC; newest " +
      "first without either)",
    options: {
      ...QUERY_OPTIONS,
      keywords: { type: "string", short: "k" },
      timerange: { type: "string", short: "d", default: "0" },
    },
    async run(ctx, _args, opts) {
      const spec: Record<string, unknown> = {
        pagination: queryPagination(opts),
        ...creationTimeRange(opts.timerange, Date.now()),
      };
      if (opts.keywords) spec.keywords = parseKeywords(String(opts.keywords));
      if (opts.labels) spec.labels = parseLabels(String(opts.labels));
      if (opts.states) spec.jobStates = jobStates(String(opts.states));
      if (opts.owner) spec.owner = String(opts.owner);
      if (opts.name) spec.name = String(opts.name);
      type Summary = {
        id: { value: string };
        name: string;
        owningTeam?: string;
        type: string;
        instanceCount: number;
        runtime: { state: string; creationTime: string; completionTime?: string };
      };
      // Summaries carry all the table shows; the full configs (task configs and all) are left out.
      const res = await ctx.client.call<
        { results: Summary[]; pagination?: { offset: number; total: number } }
      >(
        `${JOB}::Query`,
        // As Peloton's CLI: the pool's id goes in `respoolID` (v0's `spec.respool` is a path).
        {
          spec,
          summaryOnly: true,
          ...(opts.respool ? { respoolID: { value: await respoolId(ctx, String(opts.respool)) } } : {}),
        },
      );
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        // The Owner column is the owning team, which --owner matches, as Peloton's `job query` table shows it.
        ctx.out(table(
          ["ID", "Name", "Owner", "Type", "Instances", "State", "Created", "Completed"],
          res.results.map((
            r,
          ) => [
            r.id.value,
            r.name,
            r.owningTeam,
            r.type,
            r.instanceCount,
            r.runtime.state,
            r.runtime.creationTime,
            r.runtime.completionTime,
          ]),
        ));
        ctx.out(pageFooter(res.results.length, res.pagination));
      }
      return 0;
    },
  },
  {
    name: "job delete",
    args: ["JOB"],
    summary: "delete a finished job and everything stored about it",
    async run(ctx, [job]) {
      await ctx.client.call(`${JOB}::Delete`, { id: { value: job } });
      ctx.out(ctx.json ? "{}" : `Job ${job} deleted`);
      return 0;
    },
  },
  {
    name: "volume list",
    args: ["JOB"],
    summary: "list a stateful job's persistent volumes",
    async run(ctx, [job]) {
      type Vol = {
        id: { value: string };
        instanceId: number;
        hostname: string;
        sizeMB: number;
        containerPath: string;
        state: string;
      };
      const res = await ctx.client.call<{ volumes: Record<string, Vol> }>(`${VOLUME}::ListVolumes`, {
        jobId: { value: job },
      });
      if (Object.keys(res.volumes).length === 0) await ensureJob(ctx, job);
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        ctx.out(table(
          ["Volume ID", "Instance", "Host", "Size", "Path", "State"],
          Object.values(res.volumes).map((
            v,
          ) => [v.id.value, v.instanceId, v.hostname, `${v.sizeMB} MB`, v.containerPath, v.state]),
        ));
      }
      return 0;
    },
  },
  {
    name: "volume delete",
    args: ["VOLUME"],
    summary: "delete a persistent volume whose task is stopped",
    async run(ctx, [id]) {
      await ctx.client.call(`${VOLUME}::DeleteVolume`, { id: { value: id } });
      ctx.out(ctx.json ? "{}" : `Volume ${id} deleted`);
      return 0;
    },
  },
];
