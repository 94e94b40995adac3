/** The `peloton` CLI: Peloton's command shapes over the HTTP API, plus `up` and offline tools. */
import { parseArgs } from "node:util";
import { adminCommands } from "./admin_commands.ts";
import { ApiError, PelotonClient } from "./client.ts";
import {
  closest,
  type Command,
  type CommandContext,
  type OptionSpec,
  OutputClosed,
  OutputFailed,
  unknownFlag,
  UsageError,
} from "./command.ts";
import { daemonCommands } from "./daemon_commands.ts";
import { hostCommands } from "./host_commands.ts";
import { jobCommands } from "./job_commands.ts";
import { jobmgrCommands } from "./jobmgr_commands.ts";
import { podCommands } from "./pod_commands.ts";
import { resmgrCommands } from "./resmgr_commands.ts";
import { respoolCommands } from "./respool_commands.ts";
import { taskCommands } from "./task_commands.ts";
import { miniclusterCommand } from "./minicluster_command.ts";
import { statelessCommands } from "./stateless_commands.ts";
import { upCommand } from "./up_command.ts";
import { updateCommands } from "./update_commands.ts";
import { watchCommands } from "./watch_commands.ts";
import { parseYamlText } from "../auth/yaml_text.ts";
import { readUtf8File } from "../utf8.ts";

export const COMMANDS: Command[] = [
  upCommand,
  ...daemonCommands,
  ...jobCommands,
  ...taskCommands,
  ...podCommands,
  ...respoolCommands,
  ...hostCommands,
  ...resmgrCommands,
  ...jobmgrCommands,
  ...adminCommands,
  ...updateCommands,
  ...statelessCommands,
  ...watchCommands,
  miniclusterCommand,
];

/**
 * Peloton's global flags (`cmd/cli/main.go`), and this CLI's credentials. Their short forms are Peloton's:
 * `-u` and `-v` are the host and resource managers' addresses, not a user; a command's own flag of the same
 * letter wins (Peloton's `-p` is `--sort` or `--id` by command, `up -v` is verbose).
 */
const GLOBAL_OPTIONS: OptionSpec = {
  jobmgr: { type: "string", short: "m" },
  json: { type: "boolean", short: "j", default: false },
  help: { type: "boolean", short: "h", default: false },
  timeout: { type: "string", short: "t" },
  hostmgr: { type: "string", short: "u" },
  resmgr: { type: "string", short: "v" },
  username: { type: "string" },
  password: { type: "string" },
  "basic-auth-config": { type: "string" },
  basicAuthConfig: { type: "string" },
  clusterName: { type: "string", short: "e" },
  zkservers: { type: "string", short: "z", multiple: true },
  zkroot: { type: "string" },
};

/** Global options that take a value: their values are not command words. */
const VALUED = Object.entries(GLOBAL_OPTIONS).filter(([, o]) => o.type === "string").flatMap((
  [name, o],
) => [`--${name}`, ...(o.short ? [`-${o.short}`] : [])]);

/** A command's options and the global ones, a global short flag left out where the command has its own. */
function optionsOf(command: Command): OptionSpec {
  const own = command.options ?? {};
  const shorts = new Set(Object.values(own).map((o) => o.short).filter(Boolean));
  const global = Object.entries(GLOBAL_OPTIONS).filter(([name]) => !(name in own)).map((
    [name, { short, ...o }],
  ) => [name, short && !shorts.has(short) ? { ...o, short } : o]);
  return { ...Object.fromEntries(global), ...own };
}

/**
 * The longest `-t/--timeout`: the server waits a day at most for any call, and a longer wait would not fit
 * the client's own timer (2^31-1 ms, which fires at once when exceeded).
 */
const MAX_TIMEOUT_MS = 86_400_000;

/** Peloton's `-t/--timeout` as Go writes a duration (`20s`, `500ms`, `1m30s`), in milliseconds. */
export function goDurationMs(name: string, v: string): number {
  const unitMs: Record<string, number> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1e3, m: 6e4, h: 36e5 };
  const parts = [...v.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy)];
  const ms = parts.reduce((sum, [, n, unit]) => sum + Number(n) * unitMs[unit], 0);
  if (!parts.length || parts.map((p) => p[0]).join("") !== v || !(ms >= 1)) {
    throw new UsageError(
      `${name}: got "${v}", expected a duration of 1ms or more such as 20s, 500ms or 1m30s`,
    );
  }
  if (ms > MAX_TIMEOUT_MS) {
    throw new UsageError(
      `${name}: got "${v}", expected at most 24h (the server waits a day at most for a call)`,
    );
  }
  return Math.round(ms);
}

/**
 * The call timeout (`-t`, else $TIMEOUT, else Peloton's 20 s); Peloton's ZooKeeper flags are refused, as
 * this CLI finds no daemon through ZooKeeper.
 */
function timeoutOf(values: Record<string, unknown>, io: CliIo): number {
  for (const flag of ["clusterName", "zkservers", "zkroot"]) {
    if (values[flag] !== undefined) {
      throw new UsageError(
        `--${flag}: not supported: this CLI finds no daemon through ZooKeeper; give the address of any ` +
          "daemon (each answers every call) with -m/--jobmgr URL or $JOBMGR_URL",
      );
    }
  }
  if (values.timeout !== undefined) return goDurationMs("-t/--timeout", String(values.timeout));
  const env = io.env("TIMEOUT");
  return env === undefined ? 20_000 : goDurationMs("$TIMEOUT", env);
}

/**
 * The daemon to call (`-m/--jobmgr`, else $JOBMGR_URL, else the default) as `http(s)://host:port`: Peloton's
 * `host:port` is taken as http. Anything the client would not reach as given is refused naming where it came
 * from: an empty value, another scheme, credentials, or a path, query or fragment (the client adds `/api/v1`
 * itself, so a URL ending in it would call `/api/v1/api/v1` and be answered "not found").
 */
export function jobmgrUrl(values: Record<string, unknown>, io: CliIo): string {
  const given = values.jobmgr as string | undefined;
  const env = io.env("JOBMGR_URL");
  if (given === undefined && env === undefined) return DEFAULT_JOBMGR_URL;
  const source = given !== undefined ? "-m/--jobmgr" : "$JOBMGR_URL";
  const raw = (given ?? env)!.trim();
  const refuse = (why: string) =>
    new UsageError(
      `${source}: got "${given ?? env}", expected a daemon's address as http://host:port or host:port${why}`,
    );
  if (raw === "") throw refuse("");
  let url: URL;
  try {
    url = new URL(raw.includes("://") ? raw : `http://${raw}`);
  } catch {
    throw refuse("");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw refuse(` (http or https, not ${url.protocol})`);
  }
  if (url.username || url.password) throw refuse(" (credentials go in --username and --password)");
  if (url.pathname !== "/" || url.search || url.hash || /[?#]/.test(raw)) {
    throw refuse(" with no path (the CLI adds /api/v1 itself)");
  }
  return url.origin;
}

const DEFAULT_JOBMGR_URL = "http://127.0.0.1:5392";

/**
 * `-u/--hostmgr` and `-v/--resmgr` are accepted, as Peloton's, but every call goes to the one address
 * `-m/--jobmgr` names, which passes it on to the daemon it is for: said on stderr, so nothing is silently
 * dropped (and `-u` is not mistaken for the user it was in earlier versions of this CLI).
 */
function ignoredAddresses(values: Record<string, unknown>, url: string): string[] {
  const flags = [
    { name: "hostmgr", short: "u", daemon: "host", also: "; the user is --username" },
    { name: "resmgr", short: "v", daemon: "resource", also: "" },
  ];
  return flags.filter((f) => values[f.name] !== undefined).map((f) =>
    `peloton: -${f.short}/--${f.name} ${values[f.name]} ignored: every call goes to ${url} (-m/--jobmgr), ` +
    `which passes ${f.daemon} manager calls on${f.also}`
  );
}

/**
 * `peloton job create RESPOOL FILE [-i/--jobID VALUE] ...`; with `defaults` (for --help), each flag's default
 * where it has one, as the global flags' help gives theirs. A switch is off unless given, so says none.
 */
function usageOf(c: Command, defaults = false): string {
  const opts = Object.entries(c.options ?? {}).map(([name, o]) => {
    const given = defaults && typeof o.default === "string" && o.default !== ""
      ? ` (default ${o.default})`
      : "";
    return `[${o.short ? `-${o.short}/` : ""}--${name}${o.type === "string" ? " VALUE" : ""}${given}]`;
  });
  return [`peloton ${c.name}`, ...c.args, ...opts].join(" ");
}

export function helpText(): string {
  return [
    "usage: peloton [-m/--jobmgr URL] [-j/--json] [-t/--timeout 20s] COMMAND ...",
    "  -m/--jobmgr URL   server to talk to, http://host:port or host:port (default $JOBMGR_URL or",
    "                    http://127.0.0.1:5392): any daemon, which passes a call on to the daemon it is for",
    "  -j/--json         print full JSON responses",
    "  -t/--timeout D    how long a call may take, as Go writes a duration: 20s, 500ms, 1m30s; at most 24h",
    "                    (default $TIMEOUT or 20s)",
    "  -u/--hostmgr URL, -v/--resmgr URL  Peloton's; accepted and ignored (said on stderr): calls go to -m",
    "  --basic-auth-config FILE           credentials from a YAML file with username and password",
    "                                     (also --basicAuthConfig, Peloton's; default $BASIC_AUTH_CONFIG)",
    "  --username U, --password P         credentials that win over the file (ps shows them to other users)",
    "  $PELOTON_USERNAME, $PELOTON_PASSWORD  credentials when neither flags nor a file give any",
    "  -e/--clusterName, -z/--zkservers, --zkroot: Peloton's ZooKeeper discovery, refused: use -m",
    "  A command's own short flag wins over a global one: -p is --sort (job|task|pod query) or --id",
    "  (pod logs|events-v1alpha), -o is --override (update create, job stateless replace), up -v is verbose.",
    "  A flag is given once; -r (task start|stop|restart, job rolling-*, job stateless restart) and -l",
    "  (watch pod|job) may be given again, as in Peloton's CLI.",
    "",
    ...COMMANDS.flatMap((c) => [`  ${usageOf(c, true)}`, `      ${c.summary}`]),
  ].join("\n");
}

/** Every group of commands (`job`, `job stateless workflow`, `resmgr tasks`): the leading words of a longer name. */
const GROUPS = new Set(COMMANDS.flatMap((c) => {
  const words = c.name.split(" ");
  return words.slice(1).map((_, i) => words.slice(0, i + 1).join(" "));
}));

/** The words that may follow a group: its commands' and subgroups' next words, in the order of COMMANDS. */
function subcommandsOf(group: string): string[] {
  const within = COMMANDS.filter((c) => c.name.startsWith(`${group} `));
  return [...new Set(within.map((c) => c.name.slice(group.length + 1).split(" ")[0]))];
}

/**
 * Finds the command named by the leading words of argv (flags may come anywhere); `group` when the words go
 * further into a group than any command they name (`resmgr tasks`, `resmgr tasks bogus`: not the daemon
 * `resmgr` with an argument), `next` the word after it that names none of its commands.
 */
function findCommand(
  argv: string[],
): { command?: Command; words: string[]; group?: string; next?: string } {
  const words = argv.filter((a, i) => !a.startsWith("-") && !(i > 0 && VALUED.includes(argv[i - 1])));
  const deepest = (named: (name: string) => boolean) =>
    [4, 3, 2, 1].find((n) => n <= words.length && named(words.slice(0, n).join(" "))) ?? 0;
  const n = deepest((name) => COMMANDS.some((c) => c.name === name));
  const g = deepest((name) => GROUPS.has(name));
  if (g > n) return { words, group: words.slice(0, g).join(" "), next: words[g] };
  if (!n) return { words };
  const name = words.slice(0, n).join(" ");
  return { command: COMMANDS.find((c) => c.name === name), words: words.slice(0, n) };
}

/** The first words of the commands (`up`, `job`, `respool`), in the order of COMMANDS. */
const FIRST_WORDS = [...new Set(COMMANDS.map((c) => c.name.split(" ")[0]))];

/**
 * The command or group mistyped `words` likely meant, each word matched among those that may stand there
 * (`jbo qeury`: `job query`), as far as one is close; the words after a command are its arguments.
 */
function meantCommand(words: string[]): string | undefined {
  let meant = "";
  for (const word of words) {
    const valid = meant === "" ? FIRST_WORDS : subcommandsOf(meant);
    const w = valid.includes(word) ? word : closest(word, valid);
    if (w === undefined) break;
    meant = meant === "" ? w : `${meant} ${w}`;
    if (!GROUPS.has(meant)) break;
  }
  return meant || undefined;
}

/**
 * What is wrong with argv that names no command: a word that is none (with the command it is closest to), or
 * no word at all and perhaps a mistyped global flag (`peloton --hlep`).
 */
function noCommand(argv: string[], words: string[]): string {
  if (!words.length) {
    try {
      parseArgs({ args: argv, allowPositionals: true, strict: true, options: GLOBAL_OPTIONS });
    } catch (e) {
      return parseProblem(e as Error, GLOBAL_OPTIONS);
    }
    return "expected a COMMAND";
  }
  // `-p PASSWORD` before the command (this CLI's old form) makes the password read as the command.
  const hint = argv.includes("-p") ? " (-p is not the password: give --password P)" : "";
  const meant = meantCommand(words);
  return `unknown command "${words.slice(0, 2).join(" ")}"${hint}` +
    (meant ? `; did you mean \`peloton ${meant}\`?` : "");
}

/**
 * What is wrong with `peloton GROUP [WORD]`: no command, or one the group does not have; `alone` says what
 * the group's words do by themselves when they are a command too (`peloton jobmgr`, the daemon).
 */
function groupProblem(group: string, next: string | undefined, alone = ""): string {
  const expected = `expected one of ${subcommandsOf(group).join(", ")}${alone}`;
  const meant = next === undefined ? undefined : closest(next, subcommandsOf(group));
  const hint = meant ? `; did you mean \`peloton ${group} ${meant}\`?` : "";
  const what = next === undefined ? expected : `unknown command "${group} ${next}", ${expected}${hint}`;
  return `peloton ${group}: ${what}\n(peloton ${group} -h lists their usage)`;
}

/** `peloton GROUP -h`: the usage of each of the group's commands. */
function groupHelp(group: string): string {
  const within = COMMANDS.filter((c) => c.name.startsWith(`${group} `));
  return within.flatMap((c) => [`  ${usageOf(c, true)}`, `      ${c.summary}`]).join("\n");
}

/**
 * Peloton's CLI (kingpin) refuses a flag given twice unless it takes several values (`-r` on `task stop`),
 * and so does this one, rather than keep the last value and drop the others unsaid.
 */
function refuseRepeats(tokens: { kind: string; name?: string }[], options: OptionSpec): void {
  const times = new Map<string, number>();
  for (const t of tokens) if (t.kind === "option" && t.name) times.set(t.name, (times.get(t.name) ?? 0) + 1);
  for (const [name, n] of times) {
    const o = options[name];
    if (n < 2 || !o || o.multiple) continue;
    const flag = `${o.short ? `-${o.short}/` : ""}--${name}`;
    const why = o.type === "string" ? "it takes one value" : "give it once";
    throw new UsageError(`${flag}: given ${n === 2 ? "twice" : `${n} times`}; ${why}`);
  }
}

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
  /** Raw bytes to stdout, unchanged (`task logs` of a file that need not be text). */
  write?: (bytes: Uint8Array) => Promise<void>;
  env: (name: string) => string | undefined;
  /** Yes/no questions (`job stop --owner` before stopping what matched); none means no. */
  confirm?: (question: string) => Promise<boolean>;
  /** Ctrl-C handling for commands that run until stopped (`watch pod`); none leaves SIGINT's default. */
  onInterrupt?: (handler: () => void) => () => void;
}

/**
 * The commands that serve until stopped (`up`, the daemons, `minicluster`): a reader of their stdout that
 * goes away does not stop them, as it stops a command printing an answer; their logs go to stderr.
 */
const SERVERS = new Set<Command>([upCommand, ...daemonCommands, miniclusterCommand]);

/**
 * Runs the CLI; returns the exit code (0 ok, 1 failed, 2 bad usage). A reader of stdout that goes away
 * (`io.out` or `io.write` throwing OutputClosed) ends it there, quietly, exit 0, as `task list | head` has
 * always ended.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    return await runCommand(argv, io);
  } catch (e) {
    if (e instanceof OutputClosed) return 0;
    if (e instanceof OutputFailed) {
      io.err(`peloton: cannot write its output: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

/** `-h`/`--help` given anywhere in argv. */
const helpAsked = (argv: string[]) => argv.includes("-h") || argv.includes("--help");

async function runCommand(argv: string[], io: CliIo): Promise<number> {
  const { command, words, group, next } = findCommand(argv);
  if (group !== undefined) {
    // `peloton job -h` lists the group's commands; `peloton job stauts -h` names the word that is none.
    if (helpAsked(argv) && next === undefined) {
      io.out(`peloton ${group} commands:\n${groupHelp(group)}`);
      return 0;
    }
    io.err(groupProblem(group, next));
    return 2;
  }
  if (!command) {
    // `peloton -h` is the help; `peloton jbo status -h` names the word that is no command, as without -h.
    if (helpAsked(argv) && !words.length) {
      io.out(helpText());
      return 0;
    }
    // No command at all is a failing invocation: its usage goes to stderr, as any other's.
    io.err(argv.length ? `peloton: ${noCommand(argv, words)}\n\n${helpText()}` : helpText());
    return 2;
  }
  let parsed;
  const options = optionsOf(command);
  try {
    // Drop the command's own words (their first occurrences) and parse the rest.
    const rest = [...argv];
    for (const w of words) rest.splice(rest.indexOf(w), 1);
    parsed = parseArgs({ args: rest, allowPositionals: true, strict: true, options, tokens: true });
    refuseRepeats(parsed.tokens, options);
  } catch (e) {
    io.err(`peloton ${command.name}: ${parseProblem(e as Error, options)}\nusage: ${usageOf(command)}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const required = command.args.filter((a) => !a.endsWith("?")).length;
  // A last argument `NAME...` takes one or more.
  const most = command.args.at(-1)?.endsWith("...") ? Infinity : command.args.length;
  if (positionals.length > most && GROUPS.has(command.name)) {
    // `peloton jobmgr throttled-pod`: a mistyped command of the group, not an argument of the daemon.
    io.err(
      groupProblem(
        command.name,
        positionals[command.args.length],
        `, or none to run peloton ${command.name}`,
      ),
    );
    return 2;
  }
  // `-h` shows the usage, but not of words the command would refuse (`peloton up foo -h`), as without it.
  if (values.help && positionals.length <= most) {
    io.out(`usage: ${usageOf(command, true)}\n  ${command.summary}`);
    // `peloton jobmgr -h`: the daemon, and the commands of the group it names too.
    if (GROUPS.has(command.name)) io.out(`peloton ${command.name} commands:\n${groupHelp(command.name)}`);
    return 0;
  }
  if (positionals.length < required || positionals.length > most) {
    const missing = command.args.slice(positionals.length).join(" ");
    const why = positionals.length < required
      ? `missing ${missing}`
      : `unexpected argument "${positionals[command.args.length]}"`;
    io.err(`peloton ${command.name}: ${why}\nusage: ${usageOf(command)}`);
    return 2;
  }
  let url = DEFAULT_JOBMGR_URL, credentials, timeoutMs;
  try {
    // An offline command calls nothing, so the address it is not going to use is not checked.
    if (!command.offline) url = jobmgrUrl(values, io);
    timeoutMs = timeoutOf(values, io);
    credentials = await credentialsFrom(values, io);
  } catch (e) {
    io.err(`peloton ${command.name}: ${(e as Error).message}`);
    return 2;
  }
  if (!command.offline) ignoredAddresses(values, url).forEach((line) => io.err(line));
  const ctx: CommandContext = {
    client: new PelotonClient({ url, credentials, timeoutMs }),
    json: values.json === true,
    out: SERVERS.has(command) ? keepServing(io.out, io.err) : io.out,
    err: io.err,
    write: io.write,
    confirm: io.confirm,
    onInterrupt: io.onInterrupt,
  };
  try {
    return await command.run(ctx, positionals, values);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`peloton ${command.name}: ${e.message}`);
      return 2;
    }
    if (e instanceof ApiError) {
      io.err(`peloton ${command.name}: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

/** `out` for a command that serves until stopped: a line its reader is no longer there for is dropped. */
function keepServing(out: (line: string) => void, err: (line: string) => void): (line: string) => void {
  let said = false;
  return (line) => {
    try {
      out(line);
    } catch (e) {
      if (!(e instanceof OutputClosed) && !(e instanceof OutputFailed)) throw e;
      // Its stdout carries its start line only: a full disk there says so once, and it serves on.
      if (e instanceof OutputFailed && !said) {
        err(`peloton: cannot write to stdout (${e.message}); serving on`);
      }
      said = true;
    }
  };
}

/**
 * parseArgs' complaint, said for people: an unknown flag with the one of `options` it is closest to; `-p`,
 * the password in earlier versions of this CLI, is no option of a command without one of its own.
 */
function parseProblem(e: Error, options: OptionSpec): string {
  if (/Unknown option '-p'/.test(e.message)) {
    return "-p: not an option of this command (Peloton's -p is --sort or --id where a command has one); " +
      "credentials are --basic-auth-config FILE, $PELOTON_USERNAME/$PELOTON_PASSWORD or --username/--password";
  }
  return unknownFlag(e, Object.keys(options)) ?? e.message;
}

type Credentials = { username: string; password: string };

/** The keys of a `--basic-auth-config` file, as Peloton's CLI reads it. */
const CREDENTIAL_KEYS = ["username", "password"];

/**
 * Credentials come whole from the first source that gives any: `--username` and `--password`, then the
 * `--basic-auth-config` file (`$BASIC_AUTH_CONFIG` its default, as Peloton's CLI has it), then
 * `$PELOTON_USERNAME` and `$PELOTON_PASSWORD`. A user from one and a password from another would be
 * nobody's; a source giving one of the two is an error naming it. `--password` is warned about: `ps` shows it.
 */
async function credentialsFrom(values: Record<string, unknown>, io: CliIo): Promise<Credentials | undefined> {
  const flags = pair(values.username as string | undefined, values.password as string | undefined, [
    "--username",
    "--password",
  ]);
  if (flags) {
    io.err(
      "peloton: warning: --password is visible to other users of this machine (ps); give it in a " +
        "--basic-auth-config FILE (or $BASIC_AUTH_CONFIG) or $PELOTON_USERNAME/$PELOTON_PASSWORD instead",
    );
    return flags;
  }
  const file = (values["basic-auth-config"] ?? values.basicAuthConfig) as string | undefined ??
    io.env("BASIC_AUTH_CONFIG");
  if (file) return await credentialsFile(file);
  return pair(io.env("PELOTON_USERNAME"), io.env("PELOTON_PASSWORD"), [
    "$PELOTON_USERNAME",
    "$PELOTON_PASSWORD",
  ]);
}

/** Both of a source's values, none, or an error naming the one given without the other. */
function pair(
  username: string | undefined,
  password: string | undefined,
  [user, pass]: [string, string],
): Credentials | undefined {
  if (username === undefined && password === undefined) return undefined;
  if (username === undefined) {
    throw new Error(`${pass} is ${given(pass)} without ${user}; give both, or neither`);
  }
  if (password === undefined) {
    throw new Error(`${user} is ${given(user)} without ${pass}; give both, or neither`);
  }
  return { username, password };
}

const given = (source: string) => source.startsWith("$") ? "set" : "given";

/** A `--basic-auth-config` file: `username:` and `password:`, each the text written, and nothing else. */
async function credentialsFile(file: string): Promise<Credentials> {
  let raw: unknown;
  try {
    // Each value as written (`password: 0123` is "0123"), as Peloton's Go client reads it into a string.
    raw = parseYamlText(await readUtf8File(file));
  } catch (e) {
    throw new Error(`--basic-auth-config: cannot read ${file}: ${(e as Error).message}`);
  }
  const known = `(known keys: ${CREDENTIAL_KEYS.join(", ")})`;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new Error(`--basic-auth-config: ${file}: expected a mapping of username and password ${known}`);
  }
  const problems = Object.keys(raw).filter((k) => !CREDENTIAL_KEYS.includes(k)).map((key) => {
    const meant = closest(key, CREDENTIAL_KEYS);
    return `${file}: ${key}: unknown key${meant ? `; did you mean ${meant}?` : ""} ${known}`;
  });
  const fields = raw as Record<string, unknown>;
  for (const key of CREDENTIAL_KEYS) {
    if (fields[key] === undefined || fields[key] === null) {
      problems.push(`${file}: ${key}: missing, expected text`);
    }
  }
  if (problems.length) throw new Error(`--basic-auth-config: ${problems.join("; ")}`);
  return { username: String(fields.username), password: String(fields.password) };
}

/** What a failed write to stdout means for the command: its reader gone (EPIPE), or another failure. */
function outputError(e: unknown): Error {
  if (e instanceof Deno.errors.BrokenPipe) return new OutputClosed();
  return e instanceof Error ? new OutputFailed(e.message) : new OutputFailed(String(e));
}

/**
 * A line to stdout, all of it (console.log would drop a failure unsaid): OutputClosed once its reader has
 * gone, OutputFailed for another failure (a full disk; a stdout its reader set non-blocking and let fill,
 * where how much of a write went out is not told).
 */
function printLine(line: string): void {
  const bytes = new TextEncoder().encode(`${line}\n`);
  try {
    for (let at = 0; at < bytes.length;) at += Deno.stdout.writeSync(bytes.subarray(at));
  } catch (e) {
    throw outputError(e);
  }
}

/** Bytes to stdout, as `printLine` writes a line. */
async function writeBytes(bytes: Uint8Array): Promise<void> {
  try {
    for (let at = 0; at < bytes.length;) at += await Deno.stdout.write(bytes.subarray(at));
  } catch (e) {
    throw outputError(e);
  }
}

/** This project's root, the folder of deno.json, where `deno task` starts its tasks. */
const PROJECT_ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname).replace(/\/$/, "");

/**
 * Run through `deno task peloton` (the README's alias), the CLI starts in the folder of deno.json, this
 * project's root: it goes back to the folder `deno task` was run in, so that relative paths (files read and
 * written, `--data-dir`) are the caller's. That folder is the `deno task` process's own working directory
 * (`parent`: it runs tasks in the root without leaving its own), not $INIT_CWD, which `deno task` leaves as an
 * outer npm script set it. Started otherwise (its parent no `deno`, or elsewhere than the root), it stays.
 * Nothing here reads a file by a path relative to the root.
 */
export function callerDir(
  cwd: string,
  parent: { exe: string; cwd: string } | undefined,
  root = PROJECT_ROOT,
): string | undefined {
  if (!parent || cwd.replace(/\/$/, "") !== root || !/(^|\/)deno(\.exe)?$/.test(parent.exe)) return undefined;
  return parent.cwd !== "" && parent.cwd !== cwd ? parent.cwd : undefined;
}

/** The parent process's executable and working directory, where the system says them (Linux's /proc). */
function parentProcess(): { exe: string; cwd: string } | undefined {
  try {
    return {
      exe: Deno.readLinkSync(`/proc/${Deno.ppid}/exe`),
      cwd: Deno.readLinkSync(`/proc/${Deno.ppid}/cwd`),
    };
  } catch {
    // Elsewhere: deno task's $INIT_CWD, which an outer npm script may have set instead.
    const init = Deno.env.get("INIT_CWD");
    return init ? { exe: "deno", cwd: init } : undefined;
  }
}

if (import.meta.main) {
  const caller = callerDir(Deno.cwd(), parentProcess());
  try {
    if (caller !== undefined) Deno.chdir(caller);
  } catch (e) {
    console.error(
      `peloton: cannot go to the folder deno task was run in, ${caller}: ${(e as Error).message}; relative ` +
        `paths are read from ${Deno.cwd()}`,
    );
  }
  const code = await runCli(Deno.args, {
    out: printLine,
    err: console.error,
    write: writeBytes,
    env: (n) => Deno.env.get(n),
    // Deno's confirm() reads y/N from a terminal; with no terminal to ask, the answer is no.
    confirm: (q) => Promise.resolve(Deno.stdin.isTerminal() && confirm(q)),
    onInterrupt: (handler) => {
      Deno.addSignalListener("SIGINT", handler);
      return () => Deno.removeSignalListener("SIGINT", handler);
    },
  });
  Deno.exit(code);
}
