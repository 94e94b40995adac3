/**
 * Job secrets (Peloton's secrets management, `docs/user-guide.md` "Secrets Management" and
 * `pkg/jobmgr/jobsvc/handler.go`): a job's Create or Update names secrets, each a path and base64 data; they
 * are stored apart from the job's config (the store's `secret_info`) and written at their path in every
 * task of the job as it launches. Reads answer a job's secrets by id and path, never their data.
 */
import { canonicalBase64 } from "../model/base64.ts";
import type { JobConfig } from "../model/config_types.ts";
import type { SecretRecord } from "../model/records.ts";

/** A secret as a request gives it: v0 `peloton.Secret` (`id`) or v1alpha's (`secretId`). */
export interface SecretInput {
  /** Absent: one is made (Peloton: a new UUID), or, on update, the existing secret at the path is meant. */
  secretId?: string;
  path: string;
  data: string;
}

/** The most a secret may hold, decoded: a key or a certificate chain, not a payload. */
export const MAX_SECRET_BYTES = 1 << 20;
/** The longest secret id and path (the SQL stores' columns: an id is a varchar(255)). */
export const MAX_SECRET_ID = 255;
export const MAX_SECRET_PATH = 4096;

type Body = Record<string, unknown>;

/** A request's `secrets`, checked; each problem names its field. */
export function parseSecrets(
  raw: unknown,
): { ok: true; value: SecretInput[] } | { ok: false; message: string } {
  if (raw === undefined || raw === null) return { ok: true, value: [] };
  if (!Array.isArray(raw)) {
    return { ok: false, message: `secrets: got ${kind(raw)}, expected a list of secrets` };
  }
  const out: SecretInput[] = [];
  /** Each secret's file as the sandbox's components joined (`/etc/a`, `./etc/a` and `etc/a` are one). */
  const files = new Map<string, { index: number; path: string }>();
  for (let i = 0; i < raw.length; i++) {
    const s = raw[i] as Body;
    const at = `secrets[${i}]`;
    if (typeof s !== "object" || s === null || Array.isArray(s)) {
      return { ok: false, message: `${at}: got ${kind(s)}, expected {id, path, value: {data}}` };
    }
    const idField = s.secretId ?? s.id;
    const id = typeof idField === "object" && idField !== null ? (idField as Body).value : idField;
    if (id !== undefined && id !== "" && typeof id !== "string") {
      return { ok: false, message: `${at}.id: got ${kind(id)}, expected {value: "<secret id>"}` };
    }
    if (typeof id === "string" && id.length > MAX_SECRET_ID) {
      return { ok: false, message: `${at}.id: ${id.length} characters, expected at most ${MAX_SECRET_ID}` };
    }
    // Peloton: "secret does not have a path".
    if (typeof s.path !== "string" || s.path.trim() === "") {
      return {
        ok: false,
        message: `${at}.path: got ${JSON.stringify(s.path)}, expected the path to write it at`,
      };
    }
    if (s.path.length > MAX_SECRET_PATH) {
      return {
        ok: false,
        message: `${at}.path: ${s.path.length} characters, expected at most ${MAX_SECRET_PATH}`,
      };
    }
    const problem = secretPathProblem(s.path, files);
    if (problem) return { ok: false, message: `${at}.path: ${problem}` };
    files.set(sandboxFile(s.path), { index: i, path: s.path });
    const given = (s.value as Body | undefined)?.data;
    const data = typeof given === "string" ? canonicalBase64(given) : undefined;
    if (data === undefined) {
      // Never the data itself in the message: it is the secret.
      return { ok: false, message: `${at}.value.data: expected the secret's bytes in base64` };
    }
    const bytes = (data.length / 4) * 3 - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
    if (bytes > MAX_SECRET_BYTES) {
      return { ok: false, message: `${at}.value.data: ${bytes} bytes, expected at most ${MAX_SECRET_BYTES}` };
    }
    out.push({ secretId: id || undefined, path: s.path, data });
  }
  const nested = nestedProblem(files);
  if (nested) return { ok: false, message: nested };
  return { ok: true, value: out };
}

/**
 * Why a task's secrets cannot all be written at these paths (the first problem, naming its `secrets[i].path`),
 * or undefined: the rule `parseSecrets` holds a job's secrets to at create and update, for a backend to hold a
 * launch to as well (the minicluster writes them into the sandbox).
 */
export function secretPathsProblem(paths: readonly string[]): string | undefined {
  const files = new Map<string, { index: number; path: string }>();
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i];
    if (typeof path !== "string" || path.trim() === "") {
      return `secrets[${i}].path: got ${JSON.stringify(path)}, expected the path to write it at`;
    }
    const problem = secretPathProblem(path, files);
    if (problem) return `secrets[${i}].path: ${problem}`;
    files.set(sandboxFile(path), { index: i, path });
  }
  return nestedProblem(files);
}

/**
 * Where a secret lands below the task's sandbox, as the minicluster writes it (prod/minicluster/secrets.ts):
 * an absolute path too (`/etc/app/key` at `<sandbox>/etc/app/key`), empty and `.` components dropped.
 */
function sandboxFile(path: string): string {
  return path.split("/").filter((p) => p !== "" && p !== ".").join("/");
}

/**
 * Why a secret's path cannot be written at every launch, given the files of the secrets before it (by their
 * index), or undefined. Refused here, at create or update, rather than at each launch.
 */
function secretPathProblem(
  path: string,
  files: ReadonlyMap<string, { index: number; path: string }>,
): string | undefined {
  if (path.includes("\0")) return `got ${JSON.stringify(path)}, expected a path without NUL characters`;
  if (path.split("/").includes("..")) return `got "${path}", expected a path without ".." parts`;
  const file = sandboxFile(path);
  if (file === "") return `got "${path}", expected a path naming a file`;
  // `sec/` would be written as a file named `sec`.
  if (/\/\.?$/.test(path)) return `got "${path}", expected a file's path, not a directory's (it ends in /)`;
  // Below the task's sandbox (an absolute path too, in the minicluster) these are its logs: the secret would
  // be printed.
  if (file === "stdout" || file === "stderr") return `got "${path}", the task's own log file in its sandbox`;
  const same = files.get(file);
  if (same?.path === path) return `"${path}" is given twice`;
  if (same) return `"${path}" is given twice: secrets[${same.index}].path "${same.path}" is the same file`;
  return undefined;
}

/**
 * A secret whose file would be the directory of another's (`sec/a` and `sec/a/b`), as the message naming the
 * later of the two, or undefined. Sorted by components, a file's first successor is below it if any is.
 */
function nestedProblem(files: ReadonlyMap<string, { index: number; path: string }>): string | undefined {
  const sorted = [...files].map(([file, s]) => ({ file, key: file.replaceAll("/", "\0"), ...s }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (let k = 1; k < sorted.length; k++) {
    const dir = sorted[k - 1], below = sorted[k];
    if (!below.file.startsWith(`${dir.file}/`)) continue;
    return below.index > dir.index
      ? `secrets[${below.index}].path: "${below.path}" is below secrets[${dir.index}].path "${dir.path}", ` +
        "a file, not a directory"
      : `secrets[${dir.index}].path: "${dir.path}" is a directory holding secrets[${below.index}].path ` +
        `"${below.path}", not a file`;
  }
  return undefined;
}

/**
 * Why a job's config cannot take secrets, if it cannot: Peloton writes them through the Mesos
 * containerizer's secret volumes, so a Docker container is refused (a task without a container runs under
 * the Mesos containerizer, and the minicluster writes them into its sandbox).
 */
export function secretsConfigProblem(config: JobConfig): string | undefined {
  const type = config.defaultConfig.container?.type;
  if (type !== undefined && type !== "MESOS") {
    return `secrets: the job's defaultConfig.container.type is ${type}; secrets need the Mesos containerizer (MESOS)`;
  }
  return undefined;
}

/** The records a Create stores: ids made with `newId` where the request gave none. */
export function createdSecrets(
  jobId: string,
  given: SecretInput[],
  nowMs: number,
  newId: () => string,
): SecretRecord[] {
  return given.map((s) => ({
    jobId,
    secretId: s.secretId ?? newId(),
    path: s.path,
    data: s.data,
    createdMs: nowMs,
    version: 1,
  }));
}

/**
 * The records an Update stores, or why it is refused. As Peloton's `validateExistingSecretVolumes`: an update
 * of a job with secrets must name every one of them (by id, or by path), so that whoever updates a job can
 * give its new tasks only secrets they hold; their data is replaced, and secrets new to the job are added.
 */
export function updatedSecrets(
  jobId: string,
  existing: readonly SecretRecord[],
  given: SecretInput[],
  nowMs: number,
  newId: () => string,
): { ok: true; changed: SecretRecord[]; all: SecretRecord[] } | { ok: false; message: string } {
  if (existing.length === 0 && given.length === 0) return { ok: true, changed: [], all: [] };
  if (given.length < existing.length) {
    return {
      ok: false,
      message: `secrets: got ${given.length}, expected every one of the job's ${existing.length} secrets ` +
        "(by id or path) with its data, and any new ones",
    };
  }
  const left = new Set(given);
  const changed: SecretRecord[] = [];
  for (const old of existing) {
    const match = given.find((s) => left.has(s) && s.secretId === old.secretId) ??
      given.find((s) => left.has(s) && s.secretId === undefined && s.path === old.path);
    if (!match) {
      return {
        ok: false,
        message: `secrets: missing the job's secret with id ${old.secretId} path ${old.path}`,
      };
    }
    left.delete(match);
    if (match.path !== old.path) {
      return {
        ok: false,
        message:
          `secrets: secret ${old.secretId} is at path ${old.path}, got ${match.path}; a secret keeps its path`,
      };
    }
    if (match.data !== old.data) changed.push({ ...old, data: match.data, version: old.version + 1 });
  }
  for (const s of left) {
    if (s.secretId && existing.some((o) => o.secretId === s.secretId)) {
      return { ok: false, message: `secrets: secret ${s.secretId} is given twice` };
    }
    if (existing.some((o) => o.path === s.path)) {
      return {
        ok: false,
        message: `secrets: path ${s.path} is already the job's secret ${s.secretId ?? ""}`.trim(),
      };
    }
  }
  const added = createdSecrets(jobId, [...left], nowMs, newId);
  changed.push(...added);
  const byId = new Map(existing.map((s) => [s.secretId, s]));
  for (const c of changed) byId.set(c.secretId, c);
  return { ok: true, changed, all: [...byId.values()].sort((a, b) => (a.path < b.path ? -1 : 1)) };
}

/** A job's secrets as reads answer them (Peloton's Get: id and path, never the data). */
export function secretsJson(
  secrets: readonly SecretRecord[],
  api: "v0" | "v1alpha" = "v0",
): Body[] | undefined {
  if (secrets.length === 0) return undefined;
  return secrets.map((s) =>
    api === "v0"
      ? { id: { value: s.secretId }, path: s.path }
      : { secretId: { value: s.secretId }, path: s.path }
  );
}

function kind(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "a list" : typeof v === "string" ? `"${v}"` : typeof v;
}
