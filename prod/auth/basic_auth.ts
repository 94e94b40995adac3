/** Peloton's basic authentication: users, roles and the procedures each role accepts or rejects. */
import { createHash } from "node:crypto";
import { z } from "zod";
import { rpcError } from "../daemons/http_errors.ts";
import { parseYamlValue } from "../../core/model/yaml_load.ts";
import { readUtf8File } from "../utf8.ts";

/** The file `--auth-config` takes (`example/auth/basic/security_example.yaml`'s format). */
const configSchema = z.object({
  users: z.array(
    z.object({
      username: z.string().optional(),
      password: z.union([z.string(), z.number()]).optional(),
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
 * reject it; rules are `service:Method`, `service:Prefix*`, `service:*` or `*`.
 */
export class BasicAuth {
  readonly #users = new Map<string, { digest: string; role: Role }>();
  readonly #defaultRole?: Role;
  readonly internal?: Credentials;

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
      const password = u.password === undefined ? "" : String(u.password);
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
    if (config.internal_user !== undefined) {
      const u = config.users.find((x) => x.username === config.internal_user);
      if (!u) throw new Error(`internal_user ${config.internal_user} is not defined under users`);
      const role = config.roles.find((r) => r.role === u.role)!;
      if (!(role.accept.length === 1 && role.accept[0] === MATCH_ALL && role.reject.length === 0)) {
        throw new Error(`internal_user ${u.username}: its role must accept * and reject nothing`);
      }
      this.internal = { username: u.username!, password: String(u.password) };
    }
  }

  /** Reads and checks an auth file; errors name the file and the field. */
  static async load(path: string): Promise<BasicAuth> {
    let raw: unknown;
    try {
      raw = parseYamlValue(await readUtf8File(path));
    } catch (e) {
      throw new Error(`Cannot read auth config ${path}: ${(e as Error).message}`);
    }
    const parsed = configSchema.safeParse(raw);
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      throw new Error(`Cannot load auth config ${path}: ${i.path.join(".")}: ${i.message}`);
    }
    try {
      return new BasicAuth(parsed.data);
    } catch (e) {
      throw new Error(`Cannot load auth config ${path}: ${(e as Error).message}`);
    }
  }

  /**
   * Decides a call to `procedures` (the names the call goes by: as sent, canonical, v0-versioned). No
   * credentials: the default user, or 401. Wrong ones: 401. A role that does not permit it: 403, or 401
   * for a caller who brought no credentials (so that it knows to log in).
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
    if (!procedures.length || procedures.some((p) => permitted(role!, p))) return { ok: true, user };
    const who = user ? `user ${user}` : "calls without credentials";
    return {
      ok: false,
      status: user ? 403 : 401,
      message: `${who} may not call ${procedures[0]}`,
    };
  }

  /** Whether `creds` are the internal user's (daemon-to-daemon messages). */
  isInternal(creds: Credentials | undefined): boolean {
    if (!this.internal) return true;
    return creds?.username === this.internal.username && creds.password === this.internal.password;
  }
}

/** Credentials from `Authorization: Basic`, or Peloton's `username`/`password` headers. */
export function credentialsOf(headers: Headers): Credentials | undefined {
  const auth = headers.get("authorization");
  if (auth?.toLowerCase().startsWith("basic ")) {
    try {
      const text = atob(auth.slice(6).trim());
      const colon = text.indexOf(":");
      if (colon >= 0) return { username: text.slice(0, colon), password: text.slice(colon + 1) };
    } catch { /* not base64: treated as no credentials */ }
  }
  const username = headers.get("username") ?? "", password = headers.get("password") ?? "";
  return username || password ? { username, password } : undefined;
}

export function basicHeader(c: Credentials): string {
  return `Basic ${btoa(`${c.username}:${c.password}`)}`;
}

function permitted(role: Role, procedure: string): boolean {
  const sep = procedure.indexOf("::");
  if (sep < 0) return false;
  const service = procedure.slice(0, sep), method = procedure.slice(sep + 2);
  return (role.all || matches(role.accepts, service, method)) && !matches(role.rejects, service, method);
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

/** `peloton.api.job.JobManager` → `peloton.api.v0.job.JobManager`, the names auth files use for v0. */
function versioned(procedure: string): string {
  return procedure.replace(/^peloton\.api\.(job|task|respool)\./, "peloton.api.v0.$1.");
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
  const creds = credentialsOf(headers);
  if (headers.has(HOP_HEADER) && auth.internal && auth.isInternal(creds)) return undefined;
  const asSent = sent.includes("::") || !sent.includes(".") ? sent : sent.replace(/\.(?=[^.]*$)/, "::");
  const names = canonical === undefined
    ? (sent ? [asSent] : [])
    : [...new Set([sent, canonical, versioned(canonical)])];
  const decision = auth.check(creds, names);
  if (decision.ok) return undefined;
  const code = decision.status === 401 ? "unauthenticated" : "permission-denied";
  // In yarpc's wire format, as every other refusal (refused before any handler ran).
  return rpcError(code, decision.message, {
    beforeHandler: true,
    status: decision.status,
    headers: decision.status === 401 ? { "www-authenticate": 'Basic realm="peloton"' } : {},
  });
}
