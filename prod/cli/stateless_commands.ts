/** `peloton job stateless ...`: Peloton's v1alpha stateless job commands. */
import { stringify } from "yaml";
import { formatIssues, loadStatelessSpec, normalizeConfigObject } from "../../core/model/load.ts";
import type { Command, CommandContext } from "./command.ts";
import { UsageError, wholeNumber } from "./command.ts";
import { table } from "./format.ts";
import {
  creationTimeRange,
  jobStates,
  OVERRIDE_FLAG,
  pageFooter,
  QUERY_OPTIONS,
  queryPagination,
  seconds,
  updateRunningRefusal,
} from "./update_commands.ts";
import { loadConfigFile, readInput } from "./config_file.ts";
import {
  createOnce,
  jobIdToCreate,
  OPAQUE_FLAG,
  opaqueFlag,
  parseLabels,
  respoolId,
  SECRET_FLAGS,
  secretsFlag,
} from "./job_commands.ts";
import { missingInstance, parseRange } from "./task_commands.ts";
import { parseYamlValue } from "../../core/model/yaml_load.ts";
import type { JobState } from "../../core/model/states.ts";
import { jobStateName } from "../../core/jobmgr/v1alpha_json.ts";

const SVC = "peloton.api.v1alpha.job.stateless.svc.JobService";

function spec(ctx: CommandContext, file: string): Promise<Record<string, unknown> | undefined> {
  return loadConfigFile(ctx, file, loadStatelessSpec) as Promise<Record<string, unknown> | undefined>;
}

/**
 * A workflow's `updateSpec` from BATCH-SIZE and the flags `replace`, `patch` and `rollback` share
 * (--maxInstanceRetries, --maxTolerableInstanceFailures, --start-paused, --in-place, --min-running-seconds,
 * and whichever of --rollbackOnFailure and --start-pods the command has); a bad one is a usage error.
 */
function updateSpecFrom(batch: string, opts: Record<string, unknown>): Record<string, unknown> {
  const minRunning = opts["min-running-seconds"] === undefined
    ? undefined
    : seconds("--min-running-seconds", String(opts["min-running-seconds"]));
  return {
    batchSize: wholeNumber("BATCH-SIZE", batch),
    maxInstanceRetries: wholeNumber("--maxInstanceRetries", String(opts.maxInstanceRetries)),
    maxTolerableInstanceFailures: wholeNumber(
      "--maxTolerableInstanceFailures",
      String(opts.maxTolerableInstanceFailures),
    ),
    rollbackOnFailure: opts.rollbackOnFailure === true,
    startPaused: opts["start-paused"] === true,
    inPlace: opts["in-place"] === true,
    ...(opts["start-pods"] === undefined ? {} : { startPods: opts["start-pods"] === true }),
    ...(minRunning === undefined ? {} : { minRunningSeconds: minRunning }),
  };
}

const isMapping = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * `job stateless patch`'s PATCH, its keys checked against the stateless job spec's as a job file's are: one a
 * typo away from a known key is refused, another unknown key is warned of with its line. A patch that would
 * change no field of the spec (its keys all unknown, its mappings empty) is refused too: sent, it would make
 * a new version of the job identical to the last. Undefined, once it has said why, when refused.
 */
async function readPatch(ctx: CommandContext, file: string): Promise<Record<string, unknown> | undefined> {
  const refuse = (why: string) => {
    ctx.err(`peloton job stateless patch: ${file}: ${why}`);
    return undefined;
  };
  let text: string, patch: unknown;
  try {
    text = await readInput(file);
    patch = parseYamlValue(text);
  } catch (e) {
    return refuse((e as Error).message);
  }
  if (!isMapping(patch)) return refuse("expected the spec fields to change, as a mapping");
  // A patch is a part of a spec: the loader's keys are what counts, not its verdict on a whole spec. Without
  // its rules every unknown key is a warning; with them, a misspelt one is an error at the same path.
  const loose = loadStatelessSpec(text, file, { validate: false });
  const unknown = new Set(loose.warnings.filter((w) => w.value !== undefined).map((w) => w.path));
  const strict = loadStatelessSpec(text, file);
  const typos = strict.ok ? [] : strict.errors.filter((e) => unknown.has(e.path));
  const refused = new Set(typos.map((t) => t.path));
  for (const w of loose.warnings) if (!refused.has(w.path)) ctx.err(`warning: ${w.message}`);
  if (typos.length) {
    ctx.err(formatIssues(typos));
    return undefined;
  }
  // The loader passes over a `key: null` (a merge patch's removal) without looking at the key: with each
  // null read as an empty mapping, an unknown key given one is found too.
  const nullsAsEmpty = (v: unknown): unknown =>
    v === null
      ? {}
      : Array.isArray(v)
      ? v.map(nullsAsEmpty)
      : isMapping(v)
      ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, nullsAsEmpty(x)]))
      : v;
  const unread = new Set(
    normalizeConfigObject("stateless-spec", nullsAsEmpty(patch), file).warnings
      .filter((w) => w.value !== undefined).map((w) => w.path),
  );
  if (!changesAField(patch, "", unread)) {
    const ignored = [...keyPaths(patch, "")].filter((p) => unread.has(p));
    const which = ignored.length ? ` (unknown keys, ignored: ${ignored.join(", ")})` : "";
    return refuse(
      `changes no field of a stateless job spec${which}; expected at least one of its fields ` +
        "(instanceCount, defaultSpec, ...) to set or remove",
    );
  }
  return patch;
}

/** The paths of a patch's keys, as the loader spells them (`defaultSpec.labels`), in the file's order. */
function* keyPaths(patch: Record<string, unknown>, at: string): Generator<string> {
  for (const [key, v] of Object.entries(patch)) {
    const path = at === "" ? key : `${at}.${key}`;
    yield path;
    if (isMapping(v)) yield* keyPaths(v, path);
  }
}

/**
 * Whether a merge patch sets or removes a field of the spec: a value, a list or a null at a path not
 * `ignored`; an empty mapping merges nothing.
 */
function changesAField(patch: Record<string, unknown>, at: string, ignored: Set<string>): boolean {
  return Object.entries(patch).some(([key, v]) => {
    const path = at === "" ? key : `${at}.${key}`;
    if (ignored.has(path)) return false;
    return isMapping(v) ? changesAField(v, path, ignored) : true;
  });
}

/** The options of a rolling update to a new spec (`replace` and `patch`). */
const UPDATE_OPTIONS = {
  maxInstanceRetries: { type: "string", default: "0" },
  maxTolerableInstanceFailures: { type: "string", default: "0" },
  rollbackOnFailure: { type: "boolean", default: false },
  "start-paused": { type: "boolean", default: false },
  "in-place": { type: "boolean", default: false },
  "start-pods": { type: "boolean", default: false },
  "min-running-seconds": { type: "string" },
  ...OPAQUE_FLAG,
} as const;

/**
 * `--jobversion`, checked as the server's GetJob reads it (`<configVersion>-<desiredStateVersion>-<workflowVersion>`,
 * the config version an unsigned integer), so a typo is a usage error before anything is asked.
 */
function entityVersion(v: string, name = "--jobversion"): string {
  const parts = v.split("-");
  if (parts.length !== 3 || !/^\d+$/.test(parts[0]) || !Number.isSafeInteger(Number(parts[0]))) {
    throw new UsageError(
      `${name}: got "${v}", expected an entity version CONFIG-DESIRED-WORKFLOW such as "2-1-1" ` +
        "(CONFIG a whole number)",
    );
  }
  return v;
}

/** The job's current entity version, when the user did not give one. */
async function version(ctx: CommandContext, job: string, given?: string): Promise<string> {
  if (given) return given;
  const res = await ctx.client.call<{ jobInfo: { status: { version: { value: string } } } }>(
    `${SVC}::GetJob`,
    {
      jobId: { value: job },
    },
  );
  return res.jobInfo.status.version.value;
}

/**
 * `[RESPOOL] [ENTITY-VERSION]`: Peloton's replace takes both (`JOB SPEC BATCH-SIZE RESPOOL ENTITY-VERSION`),
 * ours may give the version alone. A pool is a path and starts with "/"; an entity version never does.
 */
function respoolAndVersion(rest: string[]): { respool?: string; entityVersion?: string } {
  const [first, second] = rest;
  if (first?.startsWith("/")) return { respool: first, entityVersion: second };
  if (second !== undefined) {
    throw new UsageError(
      `unexpected argument "${second}": expected [RESPOOL] [ENTITY-VERSION], RESPOOL a path starting with /`,
    );
  }
  return { entityVersion: first };
}

function simple(name: string, method: string, summary: string, extra: Command["options"] = {}): Command {
  return {
    name: `job stateless ${name}`,
    args: ["JOB", "ENTITY-VERSION?"],
    summary,
    options: extra,
    async run(ctx, [job, v], opts) {
      const body: Record<string, unknown> = {
        jobId: { value: job },
        version: { value: await version(ctx, job, v) },
      };
      if (opts.force) body.force = true;
      Object.assign(body, opaqueFlag(opts));
      const res = await ctx.client.call<{ version?: { value: string } }>(`${SVC}::${method}`, body);
      ctx.out(
        ctx.json
          ? JSON.stringify(res)
          : `Job ${job}: ${name} done${res.version ? `, new version ${res.version.value}` : ""}`,
      );
      return 0;
    },
  };
}

/** v1alpha `stateless.JobSummary`, as ListJobs and QueryJobs answer it. */
type StatelessSummary = {
  jobId: { value: string };
  name: string;
  owningTeam?: string;
  instanceCount: number;
  status: { state: string; desiredState: string; creationTime?: string; version: { value: string } };
};

/**
 * The summaries as a table: job state names without Peloton's `JOB_STATE_` prefix, and under Owner the owning
 * team, which QueryJobs' owner matches (as Peloton's stateless tables show it).
 */
function summaryTable(jobs: StatelessSummary[]): string {
  const state = (s: string) => s.replace(/^JOB_STATE_/, "");
  return table(
    ["ID", "Name", "Owner", "Instances", "State", "Desired", "Created", "Version"],
    jobs.map((j) => [
      j.jobId.value,
      j.name,
      j.owningTeam,
      j.instanceCount,
      state(j.status.state),
      state(j.status.desiredState),
      j.status.creationTime,
      j.status.version.value,
    ]),
  );
}

export const statelessCommands: Command[] = [
  {
    name: "job stateless list",
    args: [],
    summary: "list every job's v1alpha summary, newest first (JobService::ListJobs)",
    async run(ctx) {
      const res = await ctx.client.call<{ jobs: StatelessSummary[] }>(`${SVC}::ListJobs`, {});
      ctx.out(ctx.json ? JSON.stringify(res, null, 2) : summaryTable(res.jobs));
      return 0;
    },
  },
  {
    name: "job stateless query",
    args: [],
    summary: "find jobs by -l labels k=v,..., -r respool path, -k keywords, -s states, --owner, --name " +
      "(a part, any case); -n limit, -o offset, -q total; --sort creation_time|completion_time|name|owner|" +
      "state (comma-separated), -a ASC|DESC (DESC; newest first without either); -d/--timerange DAYS: created " +
      "within the last DAYS days (JobService::QueryJobs)",
    options: {
      ...QUERY_OPTIONS,
      keywords: { type: "string", short: "k" },
      timerange: { type: "string", short: "d", default: "0" },
    },
    async run(ctx, _args, opts) {
      const spec: Record<string, unknown> = {
        pagination: queryPagination(opts, "v1alpha"),
        ...creationTimeRange(opts.timerange, Date.now()),
      };
      if (opts.labels) spec.labels = parseLabels(String(opts.labels));
      // v1alpha's QuerySpec names the pool by its path; the job manager looks it up.
      if (opts.respool) spec.respool = { value: String(opts.respool) };
      if (opts.keywords) spec.keywords = String(opts.keywords).split(",").map((k) => k.trim());
      // v0's UNKNOWN is v1alpha's JOB_STATE_INVALID, as the server (and Peloton's) name the states.
      if (opts.states) {
        spec.jobStates = jobStates(String(opts.states), true).map((s) => jobStateName(s as JobState));
      }
      if (opts.owner) spec.owner = String(opts.owner);
      if (opts.name) spec.name = String(opts.name);
      const res = await ctx.client.call<
        { records: StatelessSummary[]; pagination: { offset: number; total: number } }
      >(`${SVC}::QueryJobs`, { spec });
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else ctx.out(`${summaryTable(res.records)}\n${pageFooter(res.records.length, res.pagination)}`);
      return 0;
    },
  },
  {
    name: "job stateless create",
    args: ["RESPOOL", "SPEC", "BATCH-SIZE"],
    summary: "create a stateless job from a v1alpha spec; its pods start BATCH-SIZE at a time (0: all); " +
      "--start-paused: none until `workflow resume`; --maxInstanceRetries, --maxTolerableInstanceFailures: " +
      "the rolling start fails after so many; --opaque-data: kept with the start's workflow; " +
      "--secret-path P --secret-data D: a secret written at P in each pod; -i ID: the job's id (a new " +
      "random UUID without it; a create left unanswered is sent again with -i ID, which cannot make a " +
      "second job)",
    options: {
      jobID: { type: "string", short: "i" },
      "start-paused": { type: "boolean", default: false },
      maxInstanceRetries: { type: "string", default: "0" },
      maxTolerableInstanceFailures: { type: "string", default: "0" },
      ...OPAQUE_FLAG,
      ...SECRET_FLAGS,
    },
    async run(ctx, [respool, file, batch], opts) {
      const secrets = secretsFlag(opts);
      // Peloton's CreateSpec; checked before anything is read or asked.
      const createSpec = {
        batchSize: wholeNumber("BATCH-SIZE", batch),
        maxInstanceRetries: wholeNumber("--maxInstanceRetries", String(opts.maxInstanceRetries)),
        maxTolerableInstanceFailures: wholeNumber(
          "--maxTolerableInstanceFailures",
          String(opts.maxTolerableInstanceFailures),
        ),
        startPaused: opts["start-paused"] === true,
      };
      const s = await spec(ctx, file);
      if (!s) return 1;
      const id = await respoolId(ctx, respool);
      const jobId = jobIdToCreate(opts);
      const body: Record<string, unknown> = {
        jobId: { value: jobId },
        spec: { ...s, respoolId: { value: id } },
        createSpec,
      };
      Object.assign(body, opaqueFlag(opts));
      if (secrets) body.secrets = secrets;
      const res = await createOnce(
        ctx,
        "job stateless create",
        jobId,
        "job stateless get",
        () =>
          ctx.client.call<{ jobId: { value: string }; version: { value: string } }>(
            `${SVC}::CreateJob`,
            body,
          ),
      );
      if (!res) return 1;
      ctx.out(
        ctx.json ? JSON.stringify(res) : `Job ${res.jobId.value} created, version ${res.version.value}`,
      );
      return 0;
    },
  },
  {
    name: "job stateless get",
    args: ["JOB"],
    summary: "show a stateless job's spec and status; --summaryonly: its summary alone; --jobversion " +
      "ENTITY-VERSION: the spec of that config version (Peloton's GetJob options)",
    options: {
      summaryonly: { type: "boolean", default: false },
      jobversion: { type: "string" },
    },
    async run(ctx, [job], opts) {
      const body: Record<string, unknown> = { jobId: { value: job } };
      if (opts.summaryonly === true) body.summaryOnly = true;
      // An empty --jobversion is none, as Peloton's CLI sends no version for "".
      if (opts.jobversion) body.version = { value: entityVersion(String(opts.jobversion)) };
      const res = await ctx.client.call<{ jobInfo?: unknown; summary?: unknown }>(`${SVC}::GetJob`, body);
      ctx.out(ctx.json ? JSON.stringify(res, null, 2) : stringify(res.summary ?? res.jobInfo).trimEnd());
      return 0;
    },
  },
  {
    name: "job stateless replace",
    args: ["JOB", "SPEC", "BATCH-SIZE", "RESPOOL?", "ENTITY-VERSION?"],
    summary:
      "rolling update to a new spec (--maxInstanceRetries, --maxTolerableInstanceFailures, --rollbackOnFailure, --start-paused, --in-place, --start-pods: stopped pods start on the new spec, --min-running-seconds); RESPOOL (Peloton's form; it must be the job's pool) and ENTITY-VERSION may be left out, the job's current ones are used; refused while another update of the job runs, unless -o/--override",
    options: { ...UPDATE_OPTIONS, ...OVERRIDE_FLAG },
    async run(ctx, [job, file, batch, ...rest], opts) {
      const { respool, entityVersion } = respoolAndVersion(rest);
      // Checked before the server is asked anything: a bad argument is a usage error whether or not it answers.
      const updateSpec = updateSpecFrom(batch, opts);
      const s = await spec(ctx, file);
      if (!s) return 1;
      // Peloton's CLI puts the pool's id in the spec; the server refuses one other than the job's.
      if (respool !== undefined) s.respoolId = { value: await respoolId(ctx, respool) };
      const entity = await version(ctx, job, entityVersion);
      // As Peloton's CLI: the job's update in progress first, which only -o/--override may replace.
      const refused = opts.override === true
        ? undefined
        : await updateRunningRefusal(ctx, "job stateless replace", job);
      if (refused) {
        ctx.err(refused);
        return 1;
      }
      const res = await ctx.client.call<{ version: { value: string } }>(`${SVC}::ReplaceJob`, {
        jobId: { value: job },
        version: { value: entity },
        spec: s,
        updateSpec,
        ...opaqueFlag(opts),
      });
      ctx.out(ctx.json ? JSON.stringify(res) : `Job ${job} replaced, new version ${res.version.value}`);
      return 0;
    },
  },
  {
    name: "job stateless patch",
    args: ["JOB", "PATCH", "BATCH-SIZE", "ENTITY-VERSION?"],
    summary:
      "rolling update to the job's spec with the fields of PATCH (YAML or JSON) changed: PatchJob, an " +
      "RFC 7386 merge patch (objects merge, lists such as containers and values replace, null removes); the " +
      "flags of replace; ENTITY-VERSION may be left out, the job's current one is used; refused while " +
      "another update of the job runs, unless -o/--override",
    options: { ...UPDATE_OPTIONS, ...OVERRIDE_FLAG },
    async run(ctx, [job, file, batch, given], opts) {
      const updateSpec = updateSpecFrom(batch, opts);
      const patch = await readPatch(ctx, file);
      if (!patch) return 1;
      // As replace: a running update is aborted by the patch's own only with -o/--override.
      const refused = opts.override === true
        ? undefined
        : await updateRunningRefusal(ctx, "job stateless patch", job);
      if (refused) {
        ctx.err(refused);
        return 1;
      }
      const res = await ctx.client.call<{ version: { value: string } }>(`${SVC}::PatchJob`, {
        jobId: { value: job },
        version: { value: await version(ctx, job, given && entityVersion(given, "ENTITY-VERSION")) },
        spec: patch,
        updateSpec,
        ...opaqueFlag(opts),
      });
      ctx.out(ctx.json ? JSON.stringify(res) : `Job ${job} patched, new version ${res.version.value}`);
      return 0;
    },
  },
  {
    name: "job stateless rollback",
    args: ["JOB", "BATCH-SIZE", "ENTITY-VERSION"],
    summary: "roll a stateless job back to the spec of an earlier ENTITY-VERSION (as `get` lists it): a " +
      "rolling update to that spec, BATCH-SIZE pods at a time (--maxInstanceRetries, " +
      "--maxTolerableInstanceFailures, --start-paused, --in-place, --start-pods, --min-running-seconds)",
    options: {
      maxInstanceRetries: { type: "string", default: "0" },
      maxTolerableInstanceFailures: { type: "string", default: "0" },
      "start-paused": { type: "boolean", default: false },
      "in-place": { type: "boolean", default: false },
      "start-pods": { type: "boolean", default: false },
      "min-running-seconds": { type: "string" },
      ...OPAQUE_FLAG,
    },
    async run(ctx, [job, batch, target], opts) {
      // As Peloton's StatelessRollbackJobAction: the spec at ENTITY-VERSION (GetJob with that version),
      // then a ReplaceJob with it at the job's current entity version, never rolling back on failure.
      const updateSpec = updateSpecFrom(batch, opts);
      const wanted = Number(entityVersion(target, "ENTITY-VERSION").split("-")[0]);
      const current = await ctx.client.call<{ summary: StatelessSummary }>(`${SVC}::GetJob`, {
        jobId: { value: job },
        summaryOnly: true,
      });
      const at = current.summary.status.version.value;
      const configNow = Number(at.split("-")[0]);
      // Peloton would start an update to the spec the job already runs (or fail to find a later one):
      // refused here, before anything changes, saying which versions can be rolled back to.
      if (!(wanted >= 1 && wanted < configNow)) {
        const which = wanted === configNow ? "the job's current one" : "not an earlier one";
        const why = configNow <= 1
          ? `job ${job} has no earlier configuration to roll back to (it is at config version ${configNow}, ` +
            `entity version ${at})`
          : `config version ${wanted} is ${which}; job ${job} is at ${at}, expected an entity version of ` +
            `config version 1 to ${configNow - 1}`;
        ctx.err(`peloton job stateless rollback: ENTITY-VERSION: got "${target}": ${why}`);
        return 1;
      }
      const old = await ctx.client.call<{ jobInfo: { spec: Record<string, unknown> } }>(`${SVC}::GetJob`, {
        jobId: { value: job },
        version: { value: target },
      });
      const { revision: _, ...spec } = old.jobInfo.spec;
      const res = await ctx.client.call<{ version: { value: string } }>(`${SVC}::ReplaceJob`, {
        jobId: { value: job },
        version: { value: at },
        spec,
        updateSpec,
        ...opaqueFlag(opts),
      });
      ctx.out(
        ctx.json
          ? JSON.stringify(res)
          : `Job ${job} rolling back to config version ${wanted}, new version ${res.version.value}`,
      );
      return 0;
    },
  },
  {
    name: "job stateless restart",
    args: ["JOB", "ENTITY-VERSION?"],
    summary:
      "rolling restart of a stateless job's pods (-r FROM:TO, --batch-size N, --in-place, --opaque-data)",
    options: {
      range: { type: "string", short: "r", multiple: true },
      "batch-size": { type: "string", default: "0" },
      "in-place": { type: "boolean", default: false },
      ...OPAQUE_FLAG,
    },
    async run(ctx, [job, v], opts) {
      // Every argument checked before the version is asked for.
      const restartSpec = {
        batchSize: wholeNumber("--batch-size", String(opts["batch-size"])),
        ranges: opts.range ? (opts.range as string[]).map(parseRange) : undefined,
        inPlace: opts["in-place"] === true,
      };
      const res = await ctx.client.call<{ version: { value: string } }>(`${SVC}::RestartJob`, {
        jobId: { value: job },
        version: { value: await version(ctx, job, v) },
        restartSpec,
        ...opaqueFlag(opts),
      });
      ctx.out(ctx.json ? JSON.stringify(res) : `Job ${job} restarting, new version ${res.version.value}`);
      return 0;
    },
  },
  {
    name: "job stateless replace-diff",
    args: ["JOB", "SPEC", "RESPOOL?", "ENTITY-VERSION?"],
    summary:
      "what a replace with SPEC would do, changing nothing: the instances it would add, remove, update and leave (JobService::GetReplaceJobDiff)",
    async run(ctx, [job, file, ...rest]) {
      const { respool, entityVersion } = respoolAndVersion(rest);
      const s = await spec(ctx, file);
      if (!s) return 1;
      if (respool !== undefined) s.respoolId = { value: await respoolId(ctx, respool) };
      type Ranges = { from: number; to: number }[];
      const res = await ctx.client.call<Record<string, Ranges>>(`${SVC}::GetReplaceJobDiff`, {
        jobId: { value: job },
        version: { value: await version(ctx, job, entityVersion) },
        spec: s,
      });
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        // Ranges come with `to` inclusive, as Peloton's answer has them.
        const text = (r: Ranges = []) =>
          r.map((x) => x.from === x.to ? `${x.from}` : `${x.from}-${x.to}`).join(", ");
        ctx.out(
          [
            ["added", res.instancesAdded],
            ["removed", res.instancesRemoved],
            ["updated", res.instancesUpdated],
            ["unchanged", res.instancesUnchanged],
          ].map(([what, r]) => `${what}: ${text(r as Ranges) || "none"}`).join("\n"),
        );
      }
      return 0;
    },
  },
  {
    name: "job stateless cache",
    args: ["JOB"],
    summary:
      "show the job's spec and status as the job manager holds them in memory (JobService::GetJobCache)",
    async run(ctx, [job]) {
      const res = await ctx.client.call(`${SVC}::GetJobCache`, { jobId: { value: job } });
      ctx.out(JSON.stringify(res, null, 2));
      return 0;
    },
  },
  {
    name: "job stateless refresh",
    args: ["JOB"],
    summary: "run the job's and its pods' goal-state actions again (JobService::RefreshJob)",
    async run(ctx, [job]) {
      await ctx.client.call(`${SVC}::RefreshJob`, { jobId: { value: job } });
      ctx.out(ctx.json ? "{}" : `Job ${job}: refresh requested`);
      return 0;
    },
  },
  simple("stop", "StopJob", "stop every pod of a stateless job"),
  simple("start", "StartJob", "start a stopped stateless job's pods"),
  simple("delete", "DeleteJob", "delete a stateless job (-f to stop it first)", {
    force: { type: "boolean", short: "f" },
  }),
  {
    name: "job stateless workflow events",
    args: ["JOB", "INSTANCE"],
    summary:
      "an instance's steps in the job's current or last workflow, newest first; --limit N: the newest " +
      "N (JobService::GetWorkflowEvents)",
    options: { limit: { type: "string", default: "0" } },
    async run(ctx, [job, inst], opts) {
      const instanceId = wholeNumber("INSTANCE", inst);
      const res = await ctx.client.call<
        { events: { state: string; type: string | number; timestamp: string }[] }
      >(
        `${SVC}::GetWorkflowEvents`,
        { jobId: { value: job }, instanceId, limit: wholeNumber("--limit", String(opts.limit)) },
      );
      // The server answers an instance the job does not have with no events, as one the workflow left alone:
      // asked which, as `task events` is told.
      const missing = res.events.length ? undefined : await missingInstance(ctx, job, instanceId);
      if (missing) {
        ctx.err(`peloton job stateless workflow events: ${missing}`);
        return 1;
      }
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      // Peloton's columns and enum names.
      else {
        ctx.out(table(
          ["Workflow State", "Workflow Type", "Timestamp"],
          res.events.map((e) => [e.state, String(e.type), e.timestamp]),
        ));
      }
      return 0;
    },
  },
  {
    name: "job stateless list-updates",
    args: ["JOB"],
    summary: "the job's workflows, newest first, at most --limit (10; 0: all); --instance-events adds each " +
      "instance's events, the newest --instance-events-limit of them (0: all) (JobService::ListJobWorkflows)",
    options: {
      limit: { type: "string", default: "10" },
      "instance-events": { type: "boolean", default: false },
      "instance-events-limit": { type: "string", default: "0" },
    },
    async run(ctx, [job], opts) {
      const body: Record<string, unknown> = {
        jobId: { value: job },
        updatesLimit: wholeNumber("--limit", String(opts.limit)),
      };
      // Checked even without --instance-events, which it goes with: a bad value is a mistake either way.
      const eventsLimit = wholeNumber("--instance-events-limit", String(opts["instance-events-limit"]));
      if (opts["instance-events"] === true) {
        body.instanceEvents = true;
        body.instanceEventsLimit = eventsLimit;
      }
      const res = await ctx.client.call<{ workflowInfos: unknown[] }>(`${SVC}::ListJobWorkflows`, body);
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else if (!res.workflowInfos.length) ctx.out("No update for job");
      // As Peloton's CLI: each workflow, newest first, under its index.
      else ctx.out(res.workflowInfos.map((w, i) => `Index ${i}:\n${stringify(w).trimEnd()}`).join("\n"));
      return 0;
    },
  },
  simple(
    "workflow pause",
    "PauseJobWorkflow",
    "pause the job's current workflow (--opaque-data)",
    OPAQUE_FLAG,
  ),
  simple(
    "workflow resume",
    "ResumeJobWorkflow",
    "resume the job's current workflow (--opaque-data)",
    OPAQUE_FLAG,
  ),
  simple(
    "workflow abort",
    "AbortJobWorkflow",
    "abort the job's current workflow (--opaque-data)",
    OPAQUE_FLAG,
  ),
];
