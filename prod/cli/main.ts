/** The `peloton` CLI: Peloton's command shapes over the HTTP API, plus `up` and offline tools. */
import { parseArgs } from "node:util";
import { parse as parseYaml } from "yaml";
import { adminCommands } from "./admin_commands.ts";
import { ApiError, PelotonClient } from "./client.ts";
import { type Command, type CommandContext, UsageError } from "./command.ts";
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

const GLOBAL_OPTIONS = {
  jobmgr: { type: "string", short: "m" },
  json: { type: "boolean", short: "j", default: false },
  help: { type: "boolean", short: "h", default: false },
  username: { type: "string", short: "u" },
  password: { type: "string", short: "p" },
  "basic-auth-config": { type: "string" },
} as const;

/** Global options that take a value: their values are not command words. */
const VALUED = ["-m", "--jobmgr", "-u", "--username", "-p", "--password", "--basic-auth-config"];

function usageOf(c: Command): string {
  const opts = Object.entries(c.options ?? {}).map(([name, o]) =>
    `[${o.short ? `-${o.short}/` : ""}--${name}${o.type === "string" ? " VALUE" : ""}]`
  );
  return [`peloton ${c.name}`, ...c.args, ...opts].join(" ");
}

export function helpText(): string {
  return [
    "usage: peloton [-m/--jobmgr URL] [-j/--json] COMMAND ...",
    "  -m/--jobmgr URL   server to talk to (default $JOBMGR_URL or http://127.0.0.1:5392)",
    "  -j/--json         print full JSON responses",
    "  -u/--username U, -p/--password P   basic-auth credentials (default $PELOTON_USERNAME, $PELOTON_PASSWORD)",
    "  --basic-auth-config FILE           credentials from a YAML file with username and password",
    "                                     (Peloton's --basicAuthConfig; default $BASIC_AUTH_CONFIG)",
    "",
    ...COMMANDS.flatMap((c) => [`  ${usageOf(c)}`, `      ${c.summary}`]),
  ].join("\n");
}

/** Finds the command named by the leading words of argv (flags may come anywhere). */
function findCommand(argv: string[]): { command?: Command; words: string[] } {
  const words = argv.filter((a, i) => !a.startsWith("-") && !(i > 0 && VALUED.includes(argv[i - 1])));
  for (const n of [4, 3, 2, 1]) {
    const name = words.slice(0, n).join(" ");
    const command = COMMANDS.find((c) => c.name === name);
    if (command) return { command, words: words.slice(0, n) };
  }
  return { words };
}

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
  env: (name: string) => string | undefined;
  /** Yes/no questions (`job stop --owner` before stopping what matched); none means no. */
  confirm?: (question: string) => Promise<boolean>;
  /** Ctrl-C handling for commands that run until stopped (`watch pod`); none leaves SIGINT's default. */
  onInterrupt?: (handler: () => void) => () => void;
}

/** Runs the CLI; returns the exit code (0 ok, 1 failed, 2 bad usage). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const { command, words } = findCommand(argv);
  if (!command) {
    if (argv.length === 0 || argv.includes("-h") || argv.includes("--help")) {
      io.out(helpText());
      return argv.length ? 0 : 2;
    }
    io.err(`peloton: unknown command "${words.slice(0, 2).join(" ")}"\n\n${helpText()}`);
    return 2;
  }
  let parsed;
  try {
    // Drop the command's own words (their first occurrences) and parse the rest.
    const rest = [...argv];
    for (const w of words) rest.splice(rest.indexOf(w), 1);
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: { ...GLOBAL_OPTIONS, ...command.options },
    });
  } catch (e) {
    io.err(`peloton ${command.name}: ${(e as Error).message}\nusage: ${usageOf(command)}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(`usage: ${usageOf(command)}\n  ${command.summary}`);
    return 0;
  }
  const required = command.args.filter((a) => !a.endsWith("?")).length;
  // A last argument `NAME...` takes one or more.
  const most = command.args.at(-1)?.endsWith("...") ? Infinity : command.args.length;
  if (positionals.length < required || positionals.length > most) {
    const missing = command.args.slice(positionals.length).join(" ");
    const why = positionals.length < required
      ? `missing ${missing}`
      : `unexpected argument "${positionals[command.args.length]}"`;
    io.err(`peloton ${command.name}: ${why}\nusage: ${usageOf(command)}`);
    return 2;
  }
  const url = String(values.jobmgr ?? io.env("JOBMGR_URL") ?? "http://127.0.0.1:5392");
  let credentials;
  try {
    credentials = await credentialsFrom(values, io);
  } catch (e) {
    io.err(`peloton ${command.name}: ${(e as Error).message}`);
    return 2;
  }
  const ctx: CommandContext = {
    client: new PelotonClient({ url: url.includes("://") ? url : `http://${url}`, credentials }),
    json: values.json === true,
    out: io.out,
    err: io.err,
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

/** Flags first, then a `--basic-auth-config` file, then the environment. */
async function credentialsFrom(
  values: Record<string, unknown>,
  io: CliIo,
): Promise<{ username: string; password: string } | undefined> {
  let username = values.username as string | undefined ?? io.env("PELOTON_USERNAME");
  let password = values.password as string | undefined ?? io.env("PELOTON_PASSWORD");
  const file = values["basic-auth-config"] as string | undefined ?? io.env("BASIC_AUTH_CONFIG");
  if (file && (username === undefined || password === undefined)) {
    let raw: { username?: unknown; password?: unknown };
    try {
      raw = parseYaml(await Deno.readTextFile(file)) as typeof raw;
    } catch (e) {
      throw new Error(`--basic-auth-config: cannot read ${file}: ${(e as Error).message}`);
    }
    username ??= raw?.username === undefined ? undefined : String(raw.username);
    password ??= raw?.password === undefined ? undefined : String(raw.password);
  }
  if (username === undefined && password === undefined) return undefined;
  return { username: username ?? "", password: password ?? "" };
}

if (import.meta.main) {
  const code = await runCli(Deno.args, {
    out: console.log,
    err: console.error,
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
