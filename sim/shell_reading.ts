/**
 * How the simulator reads a task's shell command for its run time and exit code (`readCommand`): a small
 * interpreter of what `sh -c` would do, timing only what the shell itself does, so Peloton's job files run
 * unchanged in a simulated cluster.
 */
import type { ContainerInfo } from "../core/model/config_types.ts";
import type { LaunchSpec } from "../core/ports/host_backend.ts";

/** What the simulator reads of a task's command (`readCommand`). */
export interface CommandReading {
  /** The sleeps it certainly runs, in ms; Infinity for one that never ends (`sleep infinity`, `while :`). */
  durationMs: number;
  /** The `exit K` it certainly reaches, else its last command's status (0 where unknown). */
  exitCode: number;
  /**
   * What it runs that the simulator cannot time or decide, as written ("./run.sh", "sleep $T: an operand
   * it cannot read"); empty when the reading is exact. Of one that never ends, only what could end it.
   */
  unread: string[];
}

/**
 * Reads a task's command as `sh -c` would run it, timing only what the shell itself does: GNU `sleep`
 * (operands summed, decimals, exponents, suffixes s/m/h/d, `infinity`; `$VAR` and `${VAR:-N}` from
 * `env` and the script's own assignments), builtins that take no time (echo, printf, true, false, :, cd,
 * export, test, ...), `exit`, and the control flow around them: if/case, &&/||, pipelines, subshells,
 * background jobs and `wait`, loops (an endless `while :`/`while true`/`until false` never ends, a `for`
 * over listed words repeats its body). A program it cannot time (`./run.sh`, `python ...`) takes no time
 * and its status is unknown; a sleep or exit under a condition it cannot decide is not taken. Both are in
 * `unread`. With `shell: false` the command is the program and its arguments, as Mesos runs it.
 */
export function readCommand(
  command: Pick<LaunchSpec["command"], "shell" | "value" | "arguments">,
  env: Readonly<Record<string, string>> = {},
): CommandReading {
  const sh = new ShellState(env);
  let exitCode = 0, endless = false;
  try {
    if (command.shell === false) {
      const fields = [command.value ?? "", ...command.arguments];
      exitCode = runCommand(fields, fields.join(" "), sh, true) ?? 0;
    } else exitCode = run(parseShell(command.value ?? ""), sh, true) ?? 0;
  } catch (e) {
    if (e instanceof ShellStop) exitCode = e.code;
    else if (e instanceof Endless) endless = true;
    else if (e instanceof ShellSyntaxError) sh.note(`a command it cannot parse (${e.message})`);
    else if (e instanceof TooLong) sh.note(`a command that runs more than ${MAX_STEPS} commands`);
    else throw e;
  }
  const unread = sh.unread.filter((u) => !endless || u.stops).map((u) => u.text);
  return { durationMs: endless ? Infinity : sh.timeMs, exitCode, unread: [...new Set(unread)] };
}

/**
 * The variables a task's command sees that a job sets: its `command.environment`, and a Docker container's
 * `env` parameters over them (Peloton's example jobs set `SLEEP_SECONDS` so), as the minicluster gives them.
 */
export function commandEnv(
  env: Readonly<Record<string, string>> = {},
  container?: ContainerInfo,
): Record<string, string> {
  const out = { ...env };
  if (container?.type !== "DOCKER") return out;
  for (const p of container.docker?.parameters ?? []) {
    const at = p.key === "env" ? p.value.indexOf("=") : -1;
    if (at > 0) out[p.value.slice(0, at)] = p.value.slice(at + 1);
  }
  return out;
}

/** GNU sleep's operand in seconds (strtod's number, then s, m, h or d), or undefined if it refuses it. */
export function sleepSeconds(operand: string): number | undefined {
  const m = SLEEP_OPERAND.exec(operand);
  if (!m) return undefined;
  const n = m[2] !== undefined ? parseInt(m[2], 16) : m[3] !== undefined ? Infinity : Number(m[1]);
  // "-0" is 0; any other negative interval is refused.
  if (!(n >= 0) || (m[0].trimStart().startsWith("-") && n !== 0)) return undefined;
  return n * (SLEEP_UNITS[m[4]] ?? 1);
}

/** A decimal (`5`, `.5`, `1e3`), a hexadecimal integer or inf(inity), then an optional unit. */
const SLEEP_OPERAND = new RegExp(
  String.raw`^\s*[-+]?(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|0[xX]([0-9a-fA-F]+)` +
    String.raw`|([iI][nN][fF](?:[iI][nN][iI][tT][yY])?))([smhd]?)$`,
);
const SLEEP_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Builtins that take no time and always succeed, as far as a task's run time and exit code go. */
const INSTANT = new Set(
  ": true echo printf cd pwd set shift umask trap ulimit hash type alias unalias".split(" "),
);
/** Builtins that take no time but whose status depends on what the simulator does not have (files, input). */
const UNDECIDED = new Set(["test", "[", "[[", "read"]);
/** Loops are followed this many rounds at most before their count is taken as unknown. */
const MAX_ROUNDS = 10_000;
/** A command is followed this many steps at most before it is taken as one it cannot read. */
const MAX_STEPS = 10_000;

/** `exit`, `return`, `break` or `continue` reached for certain: unwinds to what it ends. */
class ShellStop {
  constructor(
    readonly kind: "exit" | "return" | "break" | "continue",
    readonly code: number,
    readonly levels = 1,
  ) {}
}
/** The shell certainly runs forever from here (an endless loop, `sleep infinity`, a `wait` for one). */
class Endless {}
class ShellSyntaxError extends Error {}
/** The command ran more than `MAX_STEPS` commands: the reader stops following it there. */
class TooLong {}

/** The shell as the reader follows it: elapsed time, variables, what it could not read. */
class ShellState {
  timeMs = 0;
  /** A variable's value; null when it was set to what the reader cannot know. Absent: not set. */
  vars: Map<string, string | null>;
  functions = new Map<string, ShellNode>();
  /** `$?`. */
  status: number | undefined = 0;
  /** When the background jobs started so far end; what they run that it could not read, until a `wait`. */
  backgroundEndMs = 0;
  backgroundUnread: { text: string; stops: boolean }[] = [];
  unread: { text: string; stops: boolean }[] = [];
  /**
   * How many loops around an `exit` or `break` met under a condition it cannot decide it may leave (an
   * exit: all): those loops may end, so none of them is taken as endless.
   */
  mayLeave = 0;
  depth = 0;
  /** Commands followed so far (`MAX_STEPS`). */
  steps = 0;
  constructor(env: Readonly<Record<string, string>>) {
    this.vars = new Map(Object.entries(env));
  }
  /** Records what it could not read; `stops` when it may end the shell or a loop early. */
  note(text: string, stops = false): void {
    this.unread.push({ text, stops });
  }
  set(name: string, value: string | null, certain: boolean): void {
    this.vars.set(name, certain || this.vars.get(name) === value ? value : null);
  }
}

type ShellNode =
  | { kind: "simple"; words: string[]; text: string }
  | { kind: "list"; items: { node: ShellNode; background: boolean }[] }
  | { kind: "and-or"; first: ShellNode; rest: { op: string; node: ShellNode }[] }
  | { kind: "pipeline"; negated: boolean; commands: ShellNode[] }
  | { kind: "if"; arms: { cond: ShellNode; body: ShellNode }[]; otherwise?: ShellNode }
  | { kind: "loop"; until: boolean; cond: ShellNode; body: ShellNode; text: string }
  | { kind: "for"; name: string; words?: string[]; body: ShellNode }
  | { kind: "case"; word: string; arms: { patterns: string[]; body: ShellNode }[] }
  | { kind: "group"; subshell: boolean; body: ShellNode }
  | { kind: "function"; name: string; body: ShellNode };

/** Parsed scripts by text: a job's tasks share their command, and a plan's runs their jobs'. */
const PARSED = new Map<string, ShellNode | ShellSyntaxError>();

function parseShell(script: string): ShellNode {
  let tree = PARSED.get(script);
  if (!tree) {
    try {
      tree = new ShellParser(script).script();
    } catch (e) {
      if (!(e instanceof ShellSyntaxError)) throw e;
      tree = e;
    }
    if (PARSED.size >= 4096) PARSED.clear();
    PARSED.set(script, tree);
  }
  if (tree instanceof ShellSyntaxError) throw tree;
  return tree;
}

interface ShellToken {
  op: boolean;
  text: string;
  start: number;
  end: number;
}

/** Longest first, so `&&` is not read as two `&`. */
const OPERATORS = "&& || ;; &>> &> >> <<- << <& >& <> >| ; & | ( ) < >".split(" ");
const REDIRECTIONS = new Set("&>> &> >> <<- << <& >& <> >| < >".split(" "));
/** Reserved words that end a list; met where a command should start, they end it. */
const CLOSERS = new Set(["then", "elif", "else", "fi", "do", "done", "esac", "}"]);

/** Splits a script into words (quotes and expansions kept as written) and operators; skips here-documents. */
function lexShell(src: string): ShellToken[] {
  const out: ShellToken[] = [];
  const heredocs: { delimiter: string; tabs: boolean }[] = [];
  let i = 0, delimiterTabs: boolean | undefined;
  while (i < src.length) {
    const c = src[i];
    if (c === " " || c === "\t" || c === "\r") i++;
    else if (c === "\\" && src[i + 1] === "\n") i += 2;
    else if (c === "#") { while (i < src.length && src[i] !== "\n") i++; }
    else if (c === "\n") {
      out.push({ op: true, text: "\n", start: i, end: ++i });
      for (const h of heredocs.splice(0)) i = afterHeredoc(src, i, h.delimiter, h.tabs);
    } else {
      const op = OPERATORS.find((o) => src.startsWith(o, i));
      if (op) {
        out.push({ op: true, text: op, start: i, end: i += op.length });
        if (op === "<<" || op === "<<-") delimiterTabs = op === "<<-";
        continue;
      }
      const start = i;
      while (i < src.length && !" \t\r\n;&|()<>".includes(src[i])) i = afterQuoted(src, i);
      const text = src.slice(start, i);
      // A redirection's file descriptor (`2>&1`) is part of the redirection.
      if (/^\d+$/.test(text) && (src[i] === "<" || src[i] === ">")) continue;
      if (delimiterTabs !== undefined) {
        heredocs.push({ delimiter: text.replace(/['"\\]/g, ""), tabs: delimiterTabs });
        delimiterTabs = undefined;
      }
      out.push({ op: false, text, start, end: i });
    }
  }
  return out;
}

function afterHeredoc(src: string, i: number, delimiter: string, tabs: boolean): number {
  while (i < src.length) {
    let end = src.indexOf("\n", i);
    if (end < 0) end = src.length;
    const line = src.slice(i, end);
    i = end + 1;
    if ((tabs ? line.replace(/^\t+/, "") : line) === delimiter) break;
  }
  return i;
}

/** The index after the character, quoted string or expansion at `i`. */
function afterQuoted(src: string, i: number): number {
  const c = src[i];
  if (c === "\\") return i + 2;
  if (c === "'") {
    const end = src.indexOf("'", i + 1);
    if (end < 0) throw new ShellSyntaxError("a ' without its closing quote");
    return end + 1;
  }
  if (c === '"' || c === "`") {
    for (i++; src[i] !== c;) {
      if (i >= src.length) throw new ShellSyntaxError(`a ${c} without its closing quote`);
      if (src[i] === "\\") i += 2;
      else i = c === '"' && src[i] === "$" ? afterQuoted(src, i) : i + 1;
    }
    return i + 1;
  }
  if (c === "$" && (src[i + 1] === "(" || src[i + 1] === "{")) {
    const open = src[i + 1], close = open === "(" ? ")" : "}";
    let depth = 1;
    for (i += 2; i < src.length;) {
      if (src[i] === close && --depth === 0) return i + 1;
      if (src[i] === open) depth++;
      i = "'\"`\\$".includes(src[i]) ? afterQuoted(src, i) : i + 1;
    }
    throw new ShellSyntaxError(`a $${open} without its closing ${close}`);
  }
  return i + 1;
}

/** The POSIX shell grammar's commands, lists, pipelines and compound commands; redirections are skipped. */
class ShellParser {
  readonly #tokens: ShellToken[];
  #at = 0;
  constructor(readonly src: string) {
    this.#tokens = lexShell(src);
  }

  script(): ShellNode {
    const tree = this.#list(new Set());
    const left = this.#peek();
    if (left) throw new ShellSyntaxError(`unexpected ${JSON.stringify(left.text)}`);
    return tree;
  }

  #peek(): ShellToken | undefined {
    return this.#tokens[this.#at];
  }
  #isOp(text: string): boolean {
    const t = this.#peek();
    return t !== undefined && t.op && t.text === text;
  }
  #isWord(text: string): boolean {
    const t = this.#peek();
    return t !== undefined && !t.op && t.text === text;
  }
  #expect(text: string): void {
    const t = this.#peek();
    if (!t || t.text !== text) {
      throw new ShellSyntaxError(
        `expected ${JSON.stringify(text)}, got ${t ? JSON.stringify(t.text) : "the end"}`,
      );
    }
    this.#at++;
  }
  #newlines(): void {
    while (this.#isOp("\n")) this.#at++;
  }

  /** Commands up to one of `ends` (a reserved word), `)`, `;;` or the end. */
  #list(ends: Set<string>): ShellNode {
    const items: { node: ShellNode; background: boolean }[] = [];
    for (;;) {
      this.#newlines();
      const t = this.#peek();
      if (!t || (t.op && (t.text === ")" || t.text === ";;")) || (!t.op && ends.has(t.text))) break;
      const node = this.#andOr();
      const background = this.#isOp("&");
      items.push({ node, background });
      if (background || this.#isOp(";") || this.#isOp("\n")) this.#at++;
      else break;
    }
    return items.length === 1 && !items[0].background ? items[0].node : { kind: "list", items };
  }

  #andOr(): ShellNode {
    const first = this.#pipeline();
    const rest: { op: string; node: ShellNode }[] = [];
    while (this.#isOp("&&") || this.#isOp("||")) {
      const op = this.#tokens[this.#at++].text;
      this.#newlines();
      rest.push({ op, node: this.#pipeline() });
    }
    return rest.length ? { kind: "and-or", first, rest } : first;
  }

  #pipeline(): ShellNode {
    const negated = this.#isWord("!");
    if (negated) this.#at++;
    const commands = [this.#command()];
    while (this.#isOp("|")) {
      this.#at++;
      this.#newlines();
      commands.push(this.#command());
    }
    return commands.length === 1 && !negated ? commands[0] : { kind: "pipeline", negated, commands };
  }

  #command(): ShellNode {
    const t = this.#peek();
    if (!t) throw new ShellSyntaxError("expected a command, got the end");
    if (t.op && t.text === "(") {
      this.#at++;
      const body = this.#list(new Set());
      this.#expect(")");
      return this.#redirected({ kind: "group", subshell: true, body });
    }
    if (t.op && !REDIRECTIONS.has(t.text)) throw new ShellSyntaxError(`unexpected ${JSON.stringify(t.text)}`);
    if (!t.op && CLOSERS.has(t.text)) throw new ShellSyntaxError(`unexpected ${JSON.stringify(t.text)}`);
    switch (t.op ? "" : t.text) {
      case "{": {
        this.#at++;
        const body = this.#list(new Set(["}"]));
        this.#expect("}");
        return this.#redirected({ kind: "group", subshell: false, body });
      }
      case "if":
        return this.#redirected(this.#if());
      case "while":
      case "until": {
        this.#at++;
        const cond = this.#list(new Set(["do"]));
        this.#expect("do");
        const body = this.#list(new Set(["done"]));
        this.#expect("done");
        const text = this.src.slice(t.start, this.#tokens[this.#at - 1].end);
        return this.#redirected({ kind: "loop", until: t.text === "until", cond, body, text });
      }
      case "for":
        return this.#redirected(this.#for());
      case "case":
        return this.#redirected(this.#case());
    }
    return this.#simple();
  }

  #if(): ShellNode {
    const arms: { cond: ShellNode; body: ShellNode }[] = [];
    let otherwise: ShellNode | undefined;
    do {
      this.#at++; // `if` or `elif`
      const cond = this.#list(new Set(["then"]));
      this.#expect("then");
      arms.push({ cond, body: this.#list(new Set(["elif", "else", "fi"])) });
    } while (this.#isWord("elif"));
    if (this.#isWord("else")) {
      this.#at++;
      otherwise = this.#list(new Set(["fi"]));
    }
    this.#expect("fi");
    return { kind: "if", arms, otherwise };
  }

  #for(): ShellNode {
    this.#at++;
    const name = this.#word();
    this.#newlines();
    let words: string[] | undefined;
    if (this.#isWord("in")) {
      this.#at++;
      words = [];
      while (this.#peek() && !this.#peek()!.op) words.push(this.#word());
    }
    if (this.#isOp(";")) this.#at++;
    this.#newlines();
    this.#expect("do");
    const body = this.#list(new Set(["done"]));
    this.#expect("done");
    return { kind: "for", name, words, body };
  }

  #case(): ShellNode {
    this.#at++;
    const word = this.#word();
    this.#newlines();
    this.#expect("in");
    const arms: { patterns: string[]; body: ShellNode }[] = [];
    for (this.#newlines(); !this.#isWord("esac"); this.#newlines()) {
      if (this.#isOp("(")) this.#at++;
      const patterns = [this.#word()];
      while (this.#isOp("|")) this.#at++, patterns.push(this.#word());
      this.#expect(")");
      arms.push({ patterns, body: this.#list(new Set(["esac"])) });
      if (this.#isOp(";;")) this.#at++;
    }
    this.#at++;
    return { kind: "case", word, arms };
  }

  #word(): string {
    const t = this.#peek();
    if (!t || t.op) {
      throw new ShellSyntaxError(`expected a word, got ${t ? JSON.stringify(t.text) : "the end"}`);
    }
    this.#at++;
    return t.text;
  }

  /** A simple command (its words; redirections skipped), or a function's definition `name() body`. */
  #simple(): ShellNode {
    const words: string[] = [];
    const start = this.#peek()!.start;
    let end = start;
    for (let t = this.#peek(); t; t = this.#peek()) {
      if (t.op && REDIRECTIONS.has(t.text)) {
        this.#at++;
        end = this.#tokens[this.#at]?.end ?? end;
        this.#word();
      } else if (!t.op) {
        words.push(t.text);
        end = t.end;
        this.#at++;
      } else if (t.text === "(" && words.length === 1) {
        this.#at++;
        this.#expect(")");
        this.#newlines();
        return { kind: "function", name: words[0], body: this.#command() };
      } else break;
    }
    return { kind: "simple", words, text: this.src.slice(start, end) };
  }

  /** A compound command's redirections (`done < file`, `} > log`): skipped. */
  #redirected(node: ShellNode): ShellNode {
    while (this.#peek()?.op && REDIRECTIONS.has(this.#peek()!.text)) {
      this.#at++;
      this.#word();
    }
    return node;
  }
}

type Status = number | undefined;

/** Runs a node; `certain` says whether it certainly runs (a branch the reader cannot decide does not). */
function run(node: ShellNode, sh: ShellState, certain: boolean): Status {
  // Every task launch reads its command: a script that loops long over literal words must not stall a run.
  if (++sh.steps > MAX_STEPS) throw new TooLong();
  const status = runNode(node, sh, certain);
  sh.status = status;
  return status;
}

function runNode(node: ShellNode, sh: ShellState, certain: boolean): Status {
  switch (node.kind) {
    case "simple":
      return runSimple(node.words, node.text, sh, certain);
    case "list": {
      let status: Status = 0;
      for (const item of node.items) {
        status = item.background ? background(item.node, sh, certain) : run(item.node, sh, certain);
      }
      return status;
    }
    case "and-or": {
      let status = run(node.first, sh, certain), sure = certain;
      for (const { op, node: next } of node.rest) {
        // `a && b` runs b when a succeeds, `a || b` when it fails; with a's status unknown, b may run.
        if (status !== undefined && (op === "&&") !== (status === 0)) continue;
        if (status === undefined) sure = false;
        status = run(next, sh, sure);
        if (!sure) status = undefined;
      }
      return status;
    }
    case "pipeline": {
      // Its commands run side by side, each in a subshell; it ends when the last of them does.
      const startMs = sh.timeMs;
      let endMs = startMs, status: Status = 0;
      for (const c of node.commands) {
        sh.timeMs = startMs;
        status = node.commands.length === 1 ? run(c, sh, certain) : subshell(c, sh, certain);
        endMs = Math.max(endMs, sh.timeMs);
      }
      sh.timeMs = endMs;
      return node.negated && status !== undefined ? Number(status === 0) : status;
    }
    case "if": {
      let sure = certain;
      for (const arm of node.arms) {
        const c = run(arm.cond, sh, sure);
        if (c === undefined) sure = false;
        if (c === 0 && sure) return run(arm.body, sh, true);
        if (!sure) run(arm.body, sh, false);
      }
      if (node.otherwise) {
        return sure ? run(node.otherwise, sh, true) : (run(node.otherwise, sh, false), undefined);
      }
      return sure ? 0 : undefined;
    }
    case "loop":
      return runLoop(node, sh, certain);
    case "for":
      return runFor(node, sh, certain);
    case "case":
      return runCase(node, sh, certain);
    case "group":
      return node.subshell ? subshell(node.body, sh, certain) : run(node.body, sh, certain);
    case "function":
      sh.functions.set(node.name, node.body);
      return 0;
  }
}

function runCase(node: Extract<ShellNode, { kind: "case" }>, sh: ShellState, certain: boolean): Status {
  const value = expandWord(node.word, sh, certain).fields?.join(" ");
  let sure = certain && value !== undefined;
  for (const arm of node.arms) {
    for (const p of sure ? arm.patterns : []) {
      const pattern = expandWord(p, sh, true).fields?.join(" ");
      if (pattern === undefined) sure = false;
      else if (globRegExp(pattern).test(value!)) return run(arm.body, sh, true);
    }
    if (!sure) run(arm.body, sh, false);
  }
  return sure ? 0 : undefined;
}

/** Runs in a subshell: its variables and an `exit` in it stay there; its time is the shell's. */
function subshell(node: ShellNode, sh: ShellState, certain: boolean): Status {
  const vars = new Map(sh.vars), functions = new Map(sh.functions);
  try {
    return run(node, sh, certain);
  } catch (e) {
    if (e instanceof ShellStop) return e.code;
    throw e;
  } finally {
    sh.vars = vars;
    sh.functions = functions;
  }
}

/** `node &`: the shell goes on at once; a later `wait` waits for it (and counts what it could not read). */
function background(node: ShellNode, sh: ShellState, certain: boolean): Status {
  const startMs = sh.timeMs, unread = sh.unread;
  sh.unread = [];
  let endMs: number;
  try {
    subshell(node, sh, certain);
    endMs = sh.timeMs;
  } catch (e) {
    if (!(e instanceof Endless)) throw e;
    endMs = Infinity;
  }
  if (certain) sh.backgroundEndMs = Math.max(sh.backgroundEndMs, endMs);
  sh.backgroundUnread.push(...sh.unread);
  sh.unread = unread;
  sh.timeMs = startMs;
  return 0;
}

function runLoop(node: Extract<ShellNode, { kind: "loop" }>, sh: ShellState, certain: boolean): Status {
  const seen = new Set<string>();
  let status: Status = 0;
  for (let round = 0;; round++) {
    const c = run(node.cond, sh, certain);
    const goes = c === undefined || !certain ? undefined : (c === 0) !== node.until;
    if (goes === false) return status;
    if (goes === undefined || round >= MAX_ROUNDS) {
      // It runs an unknown number of times, maybe none: none of its body is taken.
      sh.note(`${shorten(node.text)}${certain ? ": a loop it cannot count" : UNDECIDED_NOTE}`);
      withinLoop(sh, () => run(node.body, sh, false));
      return undefined;
    }
    // The condition met again with the variables as in an earlier round: it goes on for ever.
    const state = JSON.stringify([...sh.vars]);
    if (seen.has(state)) throw new Endless();
    seen.add(state);
    const { value: jump, mayEnd } = withinLoop(sh, () => loopBody(node.body, sh));
    if (mayEnd) {
      sh.note(`${shorten(node.text)}: a loop that ends only under a condition it cannot decide`, true);
      return undefined;
    }
    if (jump === "break") return 0;
    if (jump !== "continue") status = jump;
  }
}

/** Runs a loop's body; `mayEnd` when an exit or break in it under an undecided condition may end it. */
function withinLoop<T>(sh: ShellState, body: () => T): { value: T; mayEnd: boolean } {
  const outer = sh.mayLeave;
  sh.mayLeave = 0;
  const value = body();
  const left = sh.mayLeave;
  sh.mayLeave = Math.max(outer, left - 1);
  return { value, mayEnd: left > 0 };
}

/** A loop's body, certainly run once: its status, or the `break`/`continue` that ended it. */
function loopBody(body: ShellNode, sh: ShellState): Status | "break" | "continue" {
  try {
    return run(body, sh, true);
  } catch (e) {
    if (!(e instanceof ShellStop) || (e.kind !== "break" && e.kind !== "continue")) throw e;
    if (e.levels > 1) throw new ShellStop(e.kind, 0, e.levels - 1);
    return e.kind;
  }
}

function runFor(node: Extract<ShellNode, { kind: "for" }>, sh: ShellState, certain: boolean): Status {
  // Without `in` it goes over the positional parameters: `sh -c` has none.
  const words = node.words?.map((w) => expandWord(w, sh, certain)) ?? [];
  const values = words.some((w) => w.fields === undefined || w.glob)
    ? undefined
    : words.flatMap((w) => w.fields!);
  if (!certain || values === undefined || values.length > MAX_ROUNDS) {
    const loop = `for ${node.name}${node.words ? ` in ${node.words.join(" ")}` : ""}`;
    sh.note(`${shorten(loop)}${certain ? ": a loop it cannot count" : UNDECIDED_NOTE}`);
    sh.set(node.name, null, false);
    withinLoop(sh, () => run(node.body, sh, false));
    return undefined;
  }
  let status: Status = 0;
  for (const value of values) {
    sh.set(node.name, value, true);
    const jump = loopBody(node.body, sh);
    if (jump === "break") return 0;
    if (jump !== "continue") status = jump;
  }
  return status;
}

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

function runSimple(words: string[], text: string, sh: ShellState, certain: boolean): Status {
  if (words[0] === "export" || words[0] === "readonly" || words[0] === "local") {
    for (const w of words.slice(1)) if (ASSIGNMENT.test(w)) assign(w, sh, certain);
    return 0;
  }
  let k = 0;
  for (; k < words.length && ASSIGNMENT.test(words[k]); k++);
  const fields: (string | undefined)[] = [];
  for (const w of words.slice(k)) {
    const x = expandWord(w, sh, certain);
    if (x.fields === undefined) fields.push(undefined);
    else fields.push(...x.fields);
  }
  // Assignments before a command are its environment only, and its words are expanded before them.
  if (fields.length === 0) {
    for (const w of words.slice(0, k)) assign(w, sh, certain);
  }
  return runCommand(fields, text, sh, certain);
}

function assign(word: string, sh: ShellState, certain: boolean): void {
  const eq = word.indexOf("=");
  const value = expandWord(word.slice(eq + 1), sh, certain).fields;
  sh.set(word.slice(0, eq), value === undefined ? null : value.join(" "), certain);
}

const UNDECIDED_NOTE = " (only under a condition it cannot decide)";

/** A command of expanded fields (undefined: one the reader cannot expand); `text` as written, for notes. */
function runCommand(fields: (string | undefined)[], text: string, sh: ShellState, certain: boolean): Status {
  if (fields.length === 0) return 0;
  const [name, ...args] = fields;
  if (name === undefined) {
    sh.note(shorten(text));
    return undefined;
  }
  // `/bin/sleep 5` is `sleep 5`.
  const program = name.slice(name.lastIndexOf("/") + 1);
  if (INSTANT.has(program)) return 0;
  if (UNDECIDED.has(program)) return undefined;
  switch (program) {
    case "false":
      return 1;
    case "unset":
      for (const a of args) if (a !== undefined) certain ? sh.vars.delete(a) : sh.set(a, null, false);
      return 0;
    case "sleep":
      return sleep(args, text, sh, certain);
    case "wait":
      if (certain) {
        if (sh.backgroundEndMs === Infinity) throw new Endless();
        sh.timeMs = Math.max(sh.timeMs, sh.backgroundEndMs);
      }
      sh.unread.push(...sh.backgroundUnread.splice(0));
      return 0;
    case "exit":
    case "return":
    case "break":
    case "continue":
      return leave(program, args, text, sh, certain);
    case "exec": {
      if (args.length === 0) return 0;
      const status = runCommand(args, text.replace(/^exec\s+/, ""), sh, certain);
      if (certain) throw new ShellStop("exit", status ?? 0);
      return status;
    }
    case "nohup":
    case "command":
    case "time":
      return runCommand(args, text.replace(/^\S+\s+/, ""), sh, certain);
    case "sh":
    case "bash":
    case "dash":
      if (args[0] === "-c" && args[1] !== undefined) {
        try {
          return subshell(parseShell(args[1]), sh, certain);
        } catch (e) {
          if (!(e instanceof ShellSyntaxError)) throw e;
        }
      }
  }
  const body = sh.functions.get(name);
  if (body) return callFunction(body, text, sh, certain);
  sh.note(shorten(text));
  return undefined;
}

/** `exit`, `return`, `break` or `continue`: it happens only where the reader is sure it runs. */
function leave(
  name: "exit" | "return" | "break" | "continue",
  args: (string | undefined)[],
  text: string,
  sh: ShellState,
  certain: boolean,
): Status {
  const loop = name === "break" || name === "continue";
  const operand = args.length ? args[0] : String(loop ? 1 : sh.status ?? 0);
  const n = operand !== undefined && /^\d+$/.test(operand) ? Number(operand) : undefined;
  if (n === undefined) sh.note(`${shorten(text)}: an operand it cannot read`, !loop);
  if (!certain) {
    if (!loop) sh.note(`${shorten(text)}${UNDECIDED_NOTE}`, true);
    if (name !== "continue") sh.mayLeave = Math.max(sh.mayLeave, loop ? n ?? 1 : Infinity);
    return undefined;
  }
  if (loop) throw new ShellStop(name, 0, Math.max(1, n ?? 1));
  throw new ShellStop(name === "return" && sh.depth > 0 ? "return" : "exit", (n ?? 0) & 255);
}

function callFunction(body: ShellNode, text: string, sh: ShellState, certain: boolean): Status {
  if (sh.depth >= 100) {
    sh.note(`${shorten(text)}: a function that calls itself too deep to follow`, true);
    return undefined;
  }
  sh.depth++;
  try {
    return run(body, sh, certain);
  } catch (e) {
    if (e instanceof ShellStop && e.kind === "return") return e.code;
    throw e;
  } finally {
    sh.depth--;
  }
}

function sleep(args: (string | undefined)[], text: string, sh: ShellState, certain: boolean): Status {
  if (args.length === 0) {
    sh.note(`${shorten(text)}: no operand`);
    return 1;
  }
  let seconds = 0;
  for (const a of args) {
    if (a === undefined) {
      sh.note(`${shorten(text)}: an operand it cannot read`);
      return undefined;
    }
    const s = sleepSeconds(a);
    if (s === undefined) {
      // GNU sleep refuses the whole command then, and sleeps not at all.
      sh.note(`${shorten(text)}: ${JSON.stringify(a)} is no interval GNU sleep reads`);
      return 1;
    }
    seconds += s;
  }
  if (!certain) {
    sh.note(`${shorten(text)}${UNDECIDED_NOTE}`);
    return 0;
  }
  if (seconds === Infinity) throw new Endless();
  sh.timeMs += seconds * 1000;
  return 0;
}

function shorten(text: string): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > 60 ? `${one.slice(0, 57)}...` : one;
}

/** A word's fields after expansion and quote removal; undefined when it needs what the reader lacks. */
function expandWord(
  word: string,
  sh: ShellState,
  certain: boolean,
): { fields: string[] | undefined; glob: boolean } {
  const fields: string[] = [];
  let cur = "", quoted = false, known = true, glob = false;
  const split = (value: string) => {
    const parts = value.split(/[ \t\n]+/);
    cur += parts[0];
    for (const p of parts.slice(1)) {
      if (cur || quoted) fields.push(cur);
      cur = p, quoted = false;
    }
  };
  for (let i = 0; i < word.length;) {
    const c = word[i];
    if (c === "\\") {
      cur += word[i + 1] ?? "", quoted = true, i += 2;
    } else if (c === "'") {
      const end = word.indexOf("'", i + 1);
      cur += word.slice(i + 1, end), quoted = true, i = end + 1;
    } else if (c === '"') {
      quoted = true;
      for (i++; i < word.length && word[i] !== '"';) {
        if (word[i] === "\\" && '$`"\\\n'.includes(word[i + 1])) cur += word[i + 1], i += 2;
        else if (word[i] === "$" || word[i] === "`") {
          const x = expansion(word, i, sh, certain);
          if (x.value === undefined) known = false;
          else cur += x.value;
          i = x.end;
        } else cur += word[i++];
      }
      i++;
    } else if (c === "$" || c === "`") {
      const x = expansion(word, i, sh, certain);
      if (x.value === undefined) known = false;
      else split(x.value);
      i = x.end;
    } else {
      if (c === "*" || c === "?" || c === "[") glob = true;
      cur += c, i++;
    }
  }
  if (cur || quoted) fields.push(cur);
  return { fields: known ? fields : undefined, glob };
}

/** The value of the expansion at `i` (`$X`, `${X:-d}`, `$(cmd)`, `` `cmd` ``, `$((n))`), if known. */
function expansion(
  word: string,
  i: number,
  sh: ShellState,
  certain: boolean,
): { value?: string; end: number } {
  if (word[i] === "`") {
    let end = i + 1;
    while (end < word.length && word[end] !== "`") end += word[end] === "\\" ? 2 : 1;
    substitute(word.slice(i + 1, end).replace(/\\([$`\\])/g, "$1"), sh, certain);
    return { end: end + 1 };
  }
  const next = word[i + 1];
  if (next === "(" || next === "{") {
    const end = afterQuoted(word, i);
    const inner = word.slice(i + 2, end - 1);
    // Arithmetic is not followed: its value is unknown.
    if (next === "(" && inner.startsWith("(")) return { end };
    if (next === "(") return substitute(inner, sh, certain), { end };
    return { value: parameter(inner, sh, certain), end };
  }
  const name = /^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9?#@*$!-])/.exec(word.slice(i + 1))?.[0];
  if (!name) return { value: "$", end: i + 1 };
  return { value: special(name, sh) ?? lookup(name, sh), end: i + 1 + name.length };
}

/** `$?`, `$#`, `$@`, `$0`...: `sh -c` has no positional parameters. */
function special(name: string, sh: ShellState): string | undefined {
  if (name === "?") return sh.status === undefined ? undefined : String(sh.status);
  if (name === "#") return "0";
  if (name === "@" || name === "*" || /^[1-9]$/.test(name)) return "";
  if (name === "0") return "sh";
  return undefined;
}

function lookup(name: string, sh: ShellState): string | undefined {
  return sh.vars.get(name) ?? undefined;
}

/** `${X}`, `${X:-d}`, `${X-d}`, `${X:=d}`, `${X:+d}`, `${#X}`; others (patterns) are unknown. */
function parameter(inner: string, sh: ShellState, certain: boolean): string | undefined {
  if (inner.startsWith("#")) {
    const v = sh.vars.get(inner.slice(1));
    return typeof v === "string" ? String(v.length) : undefined;
  }
  const m = /^([A-Za-z_][A-Za-z0-9_]*|[0-9?#@*$!-])(?:(:?)([-=+?])([\s\S]*))?$/.exec(inner);
  if (!m) return undefined;
  const [, name, colon, op, rest] = m;
  const fixed = special(name, sh);
  const v = fixed !== undefined ? fixed : sh.vars.has(name) ? sh.vars.get(name)! : undefined;
  if (!op) return v ?? undefined;
  // A variable set to an unknown value: whether it is set, or empty, is unknown too.
  if (v === null) return undefined;
  const set = v !== undefined && (!colon || v !== "");
  const other = () => expandWord(rest, sh, certain).fields?.join(" ");
  switch (op) {
    case "-":
      return set ? v : other();
    case "=": {
      if (set) return v;
      const d = other();
      sh.set(name, d ?? null, certain);
      return d;
    }
    case "+":
      return set ? other() : "";
    default:
      return set ? v : undefined;
  }
}

/** A command substitution runs its command in a subshell; its output is unknown to the reader. */
function substitute(script: string, sh: ShellState, certain: boolean): void {
  try {
    subshell(parseShell(script), sh, certain);
  } catch (e) {
    if (!(e instanceof ShellSyntaxError)) throw e;
    sh.note(`$(${shorten(script)}): a command it cannot parse (${e.message})`);
  }
}

/** A case pattern (`*`, `?`, `[a-z]`, `[!x]`) as a regular expression matching a whole word. */
function globRegExp(pattern: string): RegExp {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*") re += "[\\s\\S]*";
    else if (c === "?") re += "[\\s\\S]";
    else if (c === "[" && pattern.indexOf("]", i + 2) > 0) {
      const end = pattern.indexOf("]", i + 2);
      const body = pattern.slice(i + 1, end).replace(/^!/, "^").replace(/[\\\]]/g, "\\$&");
      re += `[${body}]`;
      i = end;
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}
