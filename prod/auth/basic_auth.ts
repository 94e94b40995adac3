/** Peloton's basic authentication: users, roles and the procedures each role accepts or rejects. */
import { createHash } from "node:crypto";
import { z } from "zod";
import { rpcError } from "../daemons/http_errors.ts";
import { routeProcedure } from "../../core/api/procedures.ts";
import { readUtf8File } from "../utf8.ts";
import { parseYamlText } from "./yaml_text.ts";
import { describeValue } from "../../core/model/config_issues.ts";
import { closestName as closest } from "../../core/model/_key_normalize.ts";

/**
 * The file `--auth-config` takes (`example/auth/basic/security_example.yaml`'s format). Every value is text,
 * as in Peloton's Go struct: `load` reads a scalar as written (`password: 0123` is "0123").
 */
const configSchema = z.object({
  users: z.array(
    z.object({
      username: z.string().optional(),
      password: z.string().optional(),
      role: z.string(),
    }).strict(),
  ),
  roles: z.array(
    z.object({
      role: z.string().min(1),
      accept: z.array(z.string()).default([]),
      reject: z.array(z.string()).default([]),
    }).strict(),
  ),
  internal_user: z.string().optional(),
}).strict();

export type AuthConfig = z.infer<typeof configSchema>;

interface Role {
  accepts: Map<string, string[]>;
  rejects: Map<string, string[]>;
  all: boolean;
}

export interface Credentials {
  username: string;
  password: string;
}

export type AuthDecision =
  | { ok: true; user: string }
  | { ok: false; status: 401 | 403; message: string };

const MATCH_ALL = "*";

/**
 * Peloton's `SecurityManager` (`pkg/auth/impl/basic`): a user without name and password is the default
 * user of calls that bring no credentials; a procedure is permitted when the role accepts it and does not
 * reject it; rules are `service:Method`, `service:Prefix*`, `service:*` or `*`. As Peloton's
 * `validateConfig`, a file must name its `internal_user`, a user whose role accepts `*` and rejects nothing:
 * the daemons of a cluster send each other their messages with its credentials, and take no others.
 */
export class BasicAuth {
  readonly #users = new Map<string, { digest: string; role: Role }>();
  readonly #defaultRole?: Role;
  readonly internal: Credentials;
  readonly #internalDigest: string;

  constructor(config: AuthConfig) {
    const roles = new Map<string, Role>();
    for (const r of config.roles) {
      if (roles.has(r.role)) throw new Error(`role ${r.role} is defined more than once`);
      for (const rule of [...r.accept, ...r.reject]) validateRule(rule);
      roles.set(r.role, {
        accepts: ruleMap(r.accept),
        rejects: ruleMap(r.reject),
        all: r.accept.includes(MATCH_ALL),
      });
    }
    let defaultRole: Role | undefined;
    for (const u of config.users) {
      const role = roles.get(u.role);
      if (!role) throw new Error(`user ${u.username ?? "(default)"} has undefined role ${u.role}`);
      const password = u.password ?? "";
      if (!u.username && !password) {
        if (defaultRole) throw new Error("more than one default user (no username and password) is defined");
        defaultRole = role;
        continue;
      }
      if (!u.username) throw new Error(`a user with a password has no username (role ${u.role})`);
      if (!password) throw new Error(`user ${u.username} has no password`);
      if (this.#users.has(u.username)) throw new Error(`user ${u.username} is defined more than once`);
      this.#users.set(u.username, { digest: digest(password), role });
    }
    this.#defaultRole = defaultRole;
    // Without it the daemons could not tell each other's messages from anyone's, nor send theirs.
    if (!config.internal_user) {
      throw new Error(
        "internal_user: missing; name the user the daemons authenticate to each other as, one with a " +
          "username, a password and a role that accepts * and rejects nothing",
      );
    }
    const u = config.users.find((x) => x.username === config.internal_user);
    if (!u) throw new Error(`internal_user ${config.internal_user} is not defined under users`);
    const role = config.roles.find((r) => r.role === u.role)!;
    if (!(role.accept.length === 1 && role.accept[0] === MATCH_ALL && role.reject.length === 0)) {
      throw new Error(`internal_user ${u.username}: its role must accept * and reject nothing`);
    }
    this.internal = { username: u.username!, password: u.password! };
    this.#internalDigest = digest(u.password!);
  }

  /** Reads and checks an auth file; errors name the file and the field. */
  static async load(path: string): Promise<BasicAuth> {
    let raw: unknown;
    try {
      raw = parseYamlText(await readUtf8File(path));
    } catch (e) {
      throw new Error(`Cannot read auth config ${path}: ${(e as Error).message}`);
    }
    const problems = raw === null || raw === undefined
      ? ["the file is empty; expected users:, roles: and internal_user:"]
      : fieldProblems(configSchema, raw);
    if (problems.length) throw new Error(`Cannot load auth config ${path}: ${listProblems(problems)}`);
    const parsed = configSchema.parse(raw);
    try {
      return new BasicAuth(parsed);
    } catch (e) {
      throw new Error(`Cannot load auth config ${path}: ${(e as Error).message}`);
    }
  }

  /**
   * Decides a call to `procedures`, every name the call goes by (as sent, canonical, v0-versioned, short):
   * permitted when the role accepts one of them and rejects none, so that no alias gets around a reject
   * rule. No credentials: the default user, or 401. Wrong ones: 401. A role that does not permit it: 403, or
   * 401 for a caller who brought no credentials (so that it knows to log in).
   */
  check(creds: Credentials | undefined, procedures: string[]): AuthDecision {
    let role: Role | undefined, user = "";
    if (!creds || (!creds.username && !creds.password)) {
      role = this.#defaultRole;
      if (!role) return { ok: false, status: 401, message: "credentials are required" };
    } else {
      const u = this.#users.get(creds.username);
      if (!u || !creds.password || u.digest !== digest(creds.password)) {
        return { ok: false, status: 401, message: "invalid Username/Password combination" };
      }
      role = u.role;
      user = creds.username;
    }
    // No procedure named (no Rpc-Procedure header): the caller is only authenticated.
    if (!procedures.length || permitted(role, procedures)) return { ok: true, user };
    const who = user ? `user ${user}` : "calls without credentials";
    return {
      ok: false,
      status: user ? 403 : 401,
      message: `${who} may not call ${procedures[0]}`,
    };
  }

  /** Whether `creds` are the internal user's (daemon-to-daemon messages); none never are. */
  isInternal(creds: Credentials | undefined): boolean {
    if (!creds?.username || !creds.password) return false;
    return creds.username === this.internal.username && digest(creds.password) === this.#internalDigest;
  }
}

/**
 * Credentials from `Authorization: Basic` (RFC 7617 with charset UTF-8, as browsers, curl and the CLI send
 * them; bytes that are not UTF-8 are read as Latin-1, as older clients sent them), or Peloton's
 * `username`/`password` headers (their bytes read the same way, as Peloton's Go server compares them).
 * Undefined for none, and for an `Authorization` header that cannot be read (`authorizationProblem` says why).
 */
export function credentialsOf(headers: Headers): Credentials | undefined {
  const basic = basicCredentials(headers);
  if (basic !== undefined) return typeof basic === "string" ? undefined : basic;
  const username = utf8Text(headers.get("username") ?? ""),
    password = utf8Text(headers.get("password") ?? "");
  return username || password ? { username, password } : undefined;
}

/**
 * Why the `Authorization` header cannot be read as Basic credentials, or undefined (none, or well formed).
 * Such a request brought credentials that are wrong, not none: it is refused, never the default user's.
 */
export function authorizationProblem(headers: Headers): string | undefined {
  const basic = basicCredentials(headers);
  return typeof basic === "string" ? `Authorization header: ${basic}` : undefined;
}

/** The `Authorization` header's credentials; what is wrong with it; or undefined when there is none. */
function basicCredentials(headers: Headers): Credentials | string | undefined {
  const auth = headers.get("authorization");
  if (auth === null) return undefined;
  const [scheme, ...rest] = auth.trim().split(/\s+/);
  if (scheme.toLowerCase() !== "basic") {
    // The scheme alone is named, never what follows it (a token, a password).
    const named = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,32}$/.test(scheme) ? `"${scheme}"` : "not a token";
    return `the scheme is ${named}, expected Basic base64(user:password)`;
  }
  if (rest.length === 0) return "Basic credentials are missing, expected base64(user:password)";
  const text = basicText(rest.join(""));
  if (text === undefined) return "Basic credentials are not base64, expected base64(user:password)";
  const colon = text.indexOf(":");
  if (colon < 0) return 'Basic credentials have no ":" between the user and the password';
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

/** `user:password` as UTF-8 in base64 (RFC 7617's charset UTF-8), for an `Authorization` header. */
export function basicHeader(c: Credentials): string {
  const bytes = new TextEncoder().encode(`${c.username}:${c.password}`);
  return `Basic ${btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""))}`;
}

/** The text of a basic token; undefined when it is not base64. */
function basicText(token: string): string | undefined {
  try {
    return utf8Text(atob(token));
  } catch {
    return undefined;
  }
}

/** Bytes held one a character (as `atob` and HTTP header values give them) read as UTF-8, else as they are. */
function utf8Text(binary: string): string {
  // deno-lint-ignore no-control-regex
  if (/^[\x00-\x7f]*$/.test(binary) || /[^\x00-\xff]/.test(binary)) return binary;
  try {
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return binary;
  }
}

/** Accepted under one of the call's names and rejected under none of them. */
function permitted(role: Role, procedures: string[]): boolean {
  const split = procedures.map((p) => {
    const sep = p.indexOf("::");
    return sep < 0 ? undefined : [p.slice(0, sep), p.slice(sep + 2)] as const;
  });
  if (split.some((sm) => sm && matches(role.rejects, sm[0], sm[1]))) return false;
  return split.some((sm) => sm && (role.all || matches(role.accepts, sm[0], sm[1])));
}

function matches(rules: Map<string, string[]>, service: string, method: string): boolean {
  if (rules.has(MATCH_ALL)) return true;
  return (rules.get(service) ?? []).some((r) =>
    r === MATCH_ALL || (r.endsWith(MATCH_ALL) ? method.startsWith(r.slice(0, -1)) : r === method)
  );
}

function ruleMap(rules: string[]): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const r of rules) {
    if (r === MATCH_ALL) {
      m.set(MATCH_ALL, [MATCH_ALL]);
      continue;
    }
    const [service, method] = r.split(":");
    m.set(service, [...(m.get(service) ?? []), method]);
  }
  return m;
}

/** Peloton's rule syntax: `*`, or `service:method` with [A-Za-z0-9.] services and a trailing `*` at most. */
function validateRule(rule: string): void {
  if (rule === MATCH_ALL) return;
  const parts = rule.split(":");
  const ok = parts.length === 2 && /^[A-Za-z0-9.]+$/.test(parts[0]) &&
    /^(\*|[A-Za-z]*\*?)$/.test(parts[1]) && parts[1] !== "";
  if (!ok) {
    throw new Error(`rule "${rule}" has an unexpected format, expected service:Method, service:Prefix* or *`);
  }
}

/** Passwords are kept as SHA-256 digests, as Peloton did, so a memory dump does not show them. */
function digest(password: string): string {
  return createHash("sha256").update(password).digest("hex");
}

const HOP_HEADER = "x-peloton-hop";
/** The challenge of a 401: RFC 7617's charset tells a browser to send the credentials as UTF-8. */
export const WWW_AUTHENTICATE = 'Basic realm="peloton", charset="UTF-8"';

/**
 * The procedure an HTTP endpoint beside the API is checked as: sandbox files are what BrowseSandbox points
 * to; adding a minicluster agent is an operator's act no Peloton role names, so only a role that accepts
 * every call (`*`) may.
 */
export function endpointProcedure(path: string): string | undefined {
  if (path.startsWith("/sandbox/")) return "peloton.api.task.TaskManager::BrowseSandbox";
  if (path === "/admin/agents") return "peloton.minicluster.Admin::AddAgent";
  return undefined;
}

/**
 * Every name a routed procedure is served under, the canonical first: its v0-versioned name
 * (`peloton.api.v0.job.JobManager::Get`, the names auth files use for v0) and its short one
 * (`JobManager::Get`), each kept only if it routes to the same procedure.
 */
export function procedureAliases(canonical: string): string[] {
  const sep = canonical.indexOf("::");
  if (sep < 0) return [canonical];
  const service = canonical.slice(0, sep), method = canonical.slice(sep + 2);
  const candidates = [
    service.replace(/^peloton\.api\.(job|task|respool)\./, "peloton.api.v0.$1."),
    service.slice(service.lastIndexOf(".") + 1),
  ].map((s) => `${s}::${method}`);
  const same = candidates.filter((p) => routeProcedure(p)?.procedure === canonical);
  return [...new Set([canonical, ...same])];
}

/**
 * The HTTP answer refusing an API call, or undefined when it may go on. `sent` is the procedure as the
 * client named it, `canonical` as routed, none when no daemon serves it: that call is checked too, under the
 * name it was sent by, so that a caller learns nothing of what is served unless it may call it (401 or 403
 * before 501). A call another daemon forwarded with the internal user's credentials was checked where it
 * came in.
 */
export function authorizeCall(
  auth: BasicAuth | undefined,
  headers: Headers,
  sent: string,
  canonical: string | undefined,
): Response | undefined {
  if (!auth) return undefined;
  const malformed = authorizationProblem(headers);
  if (malformed) {
    return rpcError("unauthenticated", malformed, {
      beforeHandler: true,
      status: 401,
      headers: { "www-authenticate": WWW_AUTHENTICATE },
    });
  }
  const creds = credentialsOf(headers);
  if (headers.has(HOP_HEADER) && auth.isInternal(creds)) return undefined;
  const asSent = sent.includes("::") || !sent.includes(".") ? sent : sent.replace(/\.(?=[^.]*$)/, "::");
  // As sent first, so that a refusal names the call as its caller knows it.
  const names = canonical === undefined
    ? (sent ? [asSent] : [])
    : [...new Set([asSent, ...procedureAliases(canonical)])];
  const decision = auth.check(creds, names);
  if (decision.ok) return undefined;
  const code = decision.status === 401 ? "unauthenticated" : "permission-denied";
  // In yarpc's wire format, as every other refusal (refused before any handler ran).
  return rpcError(code, decision.message, {
    beforeHandler: true,
    status: decision.status,
    headers: decision.status === 401 ? { "www-authenticate": WWW_AUTHENTICATE } : {},
  });
}

const TYPE_NAMES: Record<string, string> = {
  object: "a mapping",
  record: "a mapping",
  array: "a list",
  tuple: "a list",
  string: "text",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
};

/**
 * Every problem of a small config file's `value` (an auth file, `--agents-file`) against its zod `schema`,
 * one line each naming its field path (`users.1.role`), the value given and what was expected; an unknown
 * key named with the keys known there and, one a typo away from a known key, a did-you-mean. `top` prefixes
 * each path (`agents` for a file that is a bare list of agents).
 */
export function fieldProblems(schema: z.ZodType, value: unknown, top?: string): string[] {
  const parsed = schema.safeParse(value);
  if (parsed.success) return [];
  const name = (path: readonly PropertyKey[]) =>
    [...(top ? [top] : []), ...path.map(String)].join(".") || "(top level)";
  return parsed.error.issues.flatMap((i) => {
    if (i.code === "unrecognized_keys") {
      const known = keysAt(schema, i.path);
      return i.keys.map((key) => {
        const meant = closest(key, known);
        return `${name([...i.path, key])}: unknown key${meant ? `; did you mean ${meant}?` : ""} ` +
          `(known keys: ${known.join(", ")})`;
      });
    }
    const at = valueAt(value, i.path);
    const got = at === undefined ? "missing" : `got ${describeValue(at)}`;
    return [`${name(i.path)}: ${got}, expected ${expectedOf(i)}`];
  });
}

/** Problems as one line (one problem) or a line each, indented under the line that leads them. */
export function listProblems(problems: string[]): string {
  return problems.length === 1 ? problems[0] : `${problems.length} problems:\n  ${problems.join("\n  ")}`;
}

function expectedOf(i: z.core.$ZodIssue): string {
  switch (i.code) {
    case "invalid_type":
      return TYPE_NAMES[i.expected] ?? i.expected;
    case "too_small":
      if (i.origin === "array") return `at least ${i.minimum} item${Number(i.minimum) === 1 ? "" : "s"}`;
      if (i.origin === "string") {
        return `at least ${i.minimum} character${Number(i.minimum) === 1 ? "" : "s"}`;
      }
      return `${i.inclusive ? "at least" : "more than"} ${i.minimum}`;
    case "too_big":
      if (i.origin === "array") return `at most ${i.maximum} items`;
      return `${i.inclusive ? "at most" : "less than"} ${i.maximum}`;
    default:
      return i.message.replace(/^Invalid input: expected /, "");
  }
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const seg of path) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<PropertyKey, unknown>)[seg];
  }
  return at;
}

/** The keys the object schema at `path` knows (through lists, optional and default values). */
function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  // Optional, default and nullable wrappers hold the schema they wrap as `innerType`.
  const unwrap = (t: z.core.$ZodType | undefined): z.core.$ZodType | undefined => {
    while (t && "innerType" in t._zod.def) t = t._zod.def.innerType as z.core.$ZodType;
    return t;
  };
  let at = unwrap(schema);
  for (const seg of path) {
    const def: z.core.$ZodTypeDef | undefined = at?._zod.def;
    if (def?.type === "object") at = unwrap((def as z.core.$ZodObjectDef).shape[String(seg)]);
    else if (def?.type === "array") at = unwrap((def as z.core.$ZodArrayDef).element);
    else return [];
  }
  const def: z.core.$ZodTypeDef | undefined = at?._zod.def;
  return def?.type === "object" ? Object.keys((def as z.core.$ZodObjectDef).shape) : [];
}
