/**
 * posix_spawn(3) through libc with POSIX_SPAWN_SETSID: a task process that leads its own session and process
 * group, started without forking Deno and without exec'ing `setsid(1)` first.
 */

/**
 * The slice of libc this needs (glibc 2.29 or later for `posix_spawn_file_actions_addchdir_np`). Pointers
 * into buffers this module owns are passed as addresses (`usize`), which costs no pointer objects.
 */
const SYMBOLS = {
  // The calling thread waits until the child has exec'd (about 0.1 ms), so spawning belongs in a worker.
  posix_spawn: { parameters: ["usize", "usize", "usize", "buffer", "usize", "usize"], result: "i32" },
  posix_spawnattr_init: { parameters: ["buffer"], result: "i32" },
  posix_spawnattr_setflags: { parameters: ["buffer", "i16"], result: "i32" },
  posix_spawnattr_setsigmask: { parameters: ["buffer", "buffer"], result: "i32" },
  posix_spawnattr_setsigdefault: { parameters: ["buffer", "buffer"], result: "i32" },
  posix_spawn_file_actions_init: { parameters: ["usize"], result: "i32" },
  posix_spawn_file_actions_destroy: { parameters: ["usize"], result: "i32" },
  posix_spawn_file_actions_addopen: { parameters: ["usize", "i32", "buffer", "i32", "u32"], result: "i32" },
  posix_spawn_file_actions_addchdir_np: { parameters: ["usize", "usize"], result: "i32" },
  posix_spawn_file_actions_addclosefrom_np: { parameters: ["usize", "i32"], result: "i32", optional: true },
  sigemptyset: { parameters: ["buffer"], result: "i32" },
  sigaddset: { parameters: ["buffer", "i32"], result: "i32" },
  waitpid: { parameters: ["i32", "buffer", "i32"], result: "i32" },
  kill: { parameters: ["i32", "i32"], result: "i32" },
  strerror: { parameters: ["i32"], result: "pointer" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

// Linux (x86-64 and arm64) values.
const POSIX_SPAWN_SETSIGDEF = 0x04;
const POSIX_SPAWN_SETSIGMASK = 0x08;
const POSIX_SPAWN_SETSID = 0x80;
const O_RDONLY = 0;
const O_WRONLY = 1;
const SIGPIPE = 13;
const WNOHANG = 1;
const ECHILD = 10;

// Larger than glibc's posix_spawnattr_t (336 bytes), posix_spawn_file_actions_t (80) and sigset_t (128), so a
// libc with bigger ones still writes inside the buffer.
const ATTR_BYTES = 1024;
const ACTIONS_BYTES = 256;
const SIGSET_BYTES = 256;

/** Linux signal numbers, for reporting how a process ended the way `Deno.Command` does. */
const SIGNALS: (Deno.Signal | undefined)[] = [
  undefined,
  "SIGHUP",
  "SIGINT",
  "SIGQUIT",
  "SIGILL",
  "SIGTRAP",
  "SIGABRT",
  "SIGBUS",
  "SIGFPE",
  "SIGKILL",
  "SIGUSR1",
  "SIGSEGV",
  "SIGUSR2",
  "SIGPIPE",
  "SIGALRM",
  "SIGTERM",
  "SIGSTKFLT",
  "SIGCHLD",
  "SIGCONT",
  "SIGSTOP",
  "SIGTSTP",
  "SIGTTIN",
  "SIGTTOU",
  "SIGURG",
  "SIGXCPU",
  "SIGXFSZ",
  "SIGVTALRM",
  "SIGPROF",
  "SIGWINCH",
  "SIGIO",
  "SIGPWR",
  "SIGSYS",
];

const encoder = new TextEncoder();

/** A C string in a buffer of its own. */
function cString(s: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(new ArrayBuffer(s.length * 3 + 1));
  const { written } = encoder.encodeInto(s, bytes);
  return bytes.subarray(0, written + 1);
}

function address(bytes: Uint8Array): number {
  return Number(Deno.UnsafePointer.value(Deno.UnsafePointer.of(bytes)));
}

/** Bytes of the reused slot: a usual task's arguments and environment fit; a bigger one gets its own. */
const SLOT_BYTES = 16 * 1024;
const PID_AT = ACTIONS_BYTES;
const POINTERS_AT = PID_AT + 8;

/**
 * The memory of one posix_spawn call: its file actions, the pid it writes, then `argv` and `envp` (arrays of
 * pointers, each ending in NULL) and the strings they point to. A `new ArrayBuffer` never moves (a small
 * typed array may), and reusing one spares the collector an external buffer per task.
 */
class Slot {
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly words: Uint32Array<ArrayBuffer>;
  readonly pid: Int32Array<ArrayBuffer>;
  readonly base: number;

  constructor(size: number) {
    const buffer = new ArrayBuffer(size);
    this.bytes = new Uint8Array(buffer);
    this.words = new Uint32Array(buffer);
    this.pid = new Int32Array(buffer, PID_AT, 1);
    this.base = address(this.bytes);
  }

  /**
   * Writes `strings` (the program's path, then argv, envp and cwd; none holding a NUL) after the pointer
   * arrays for `argc` and `envc` entries; returns their addresses, or undefined when they do not fit.
   */
  fill(strings: string[], argc: number, envc: number) {
    const pointerWords = 2 * (argc + 1 + envc + 1);
    const textAt = POINTERS_AT + 4 * pointerWords;
    // Every string with its terminator, so what an earlier spawn left in the slot does not matter.
    const joined = strings.join("\0") + "\0";
    // encodeInto takes up to 3 bytes per UTF-16 unit.
    if (textAt + joined.length * 3 > this.bytes.length) return undefined;
    const { written } = encoder.encodeInto(joined, this.bytes.subarray(textAt));
    const starts: number[] = [textAt];
    for (let i = textAt; i < textAt + written - 1; i++) if (this.bytes[i] === 0) starts.push(i + 1);
    if (starts.length !== strings.length) throw new Error("a string to pass to posix_spawn holds a NUL byte");
    const put = (word: number, at: number) => {
      const p = at === 0 ? 0 : this.base + at;
      this.words[word] = p % 0x1_0000_0000;
      this.words[word + 1] = Math.floor(p / 0x1_0000_0000);
    };
    const w = POINTERS_AT / 4;
    for (let i = 0; i < argc; i++) put(w + 2 * i, starts[1 + i]);
    put(w + 2 * argc, 0);
    for (let i = 0; i < envc; i++) put(w + 2 * (argc + 1 + i), starts[1 + argc + i]);
    put(w + 2 * (argc + 1 + envc), 0);
    return {
      path: BigInt(this.base + starts[0]),
      argv: BigInt(this.base + POINTERS_AT),
      envp: BigInt(this.base + POINTERS_AT + 8 * (argc + 1)),
      cwd: BigInt(this.base + starts[starts.length - 1]),
    };
  }
}

/** How a reaped process ended, in `Deno.Command`'s terms: a signal is reported as code 128 + its number. */
export function decodeWaitStatus(status: number): Deno.CommandStatus {
  const signal = status & 0x7f;
  if (signal === 0) {
    const code = (status >> 8) & 0xff;
    return { success: code === 0, code, signal: null };
  }
  return { success: false, code: 128 + signal, signal: SIGNALS[signal] ?? null };
}

/** What to run: like `Deno.Command`'s options, with stdin, stdout and stderr on /dev/null. */
export interface SessionSpawn {
  /** A path to the program (not searched on `PATH`). */
  program: string;
  args: string[];
  cwd: string;
  /** The whole environment of the process as `NAME=value` entries (not merged with Deno's). */
  env: string[];
}

/**
 * Spawns processes through libc's posix_spawn, each leading a new session (so its pid is its process group
 * id the moment posix_spawn returns), and reaps them with waitpid on their own pids only: children that
 * Deno itself started (`Deno.Command`) keep their exit statuses.
 */
export class PosixSpawn {
  readonly #libc: Libc;
  readonly #closeLibrary: () => void;
  readonly #attr = new Uint8Array(new ArrayBuffer(ATTR_BYTES));
  readonly #devNull = cString("/dev/null");
  readonly #waitStatus = new Int32Array(new ArrayBuffer(8));
  readonly #slot = new Slot(SLOT_BYTES);
  /** Live children by pid, each with the function that settles its status. */
  readonly #live = new Map<number, (status: Deno.CommandStatus | Error) => void>();
  #timer?: ReturnType<typeof setInterval>;
  #closed = false;
  readonly #onChild = () => this.#reap();

  /**
   * Opens libc; throws when it cannot be used (no FFI permission, no such library, a libc without
   * posix_spawn_file_actions_addchdir_np), so callers can fall back to `Deno.Command`.
   */
  constructor(libraryPath = "libc.so.6") {
    const lib = Deno.dlopen(libraryPath, SYMBOLS);
    this.#libc = lib.symbols;
    this.#closeLibrary = () => lib.close();
    try {
      const c = this.#libc;
      const empty = new Uint8Array(new ArrayBuffer(SIGSET_BYTES));
      const pipe = new Uint8Array(new ArrayBuffer(SIGSET_BYTES));
      check(c.sigemptyset(empty), "sigemptyset");
      check(c.sigemptyset(pipe), "sigemptyset");
      check(c.sigaddset(pipe, SIGPIPE), "sigaddset");
      check(c.posix_spawnattr_init(this.#attr), "posix_spawnattr_init");
      // Deno ignores SIGPIPE and an ignored signal stays ignored across exec: the child gets the default
      // back, and starts with no signal blocked, as Deno.Command's children do.
      check(c.posix_spawnattr_setsigmask(this.#attr, empty), "posix_spawnattr_setsigmask");
      check(c.posix_spawnattr_setsigdefault(this.#attr, pipe), "posix_spawnattr_setsigdefault");
      const flags = POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
      check(c.posix_spawnattr_setflags(this.#attr, flags), "posix_spawnattr_setflags");
    } catch (e) {
      lib.close();
      throw e;
    }
  }

  /**
   * Starts a process; throws with libc's reason when it could not be started (e.g. no such program). The
   * calling thread waits until the child has exec'd.
   */
  spawn(req: SessionSpawn): { pid: number; status: Promise<Deno.CommandStatus> } {
    if (this.#closed) throw new Error(`Cannot start ${req.program}: the spawner is closed`);
    const { env } = req;
    const strings = [req.program, req.program, ...req.args, ...env, req.cwd];
    for (const s of strings) {
      if (s.includes("\0")) {
        throw new Error(`Cannot start ${req.program}: ${JSON.stringify(s)} holds a NUL byte`);
      }
    }
    const argc = 1 + req.args.length;
    let slot = this.#slot;
    let at = slot.fill(strings, argc, env.length);
    if (!at) {
      slot = new Slot(strings.reduce((n, s) => n + 3 * s.length + 1 + 16, POINTERS_AT));
      at = slot.fill(strings, argc, env.length)!;
    }
    const c = this.#libc;
    const actions = BigInt(slot.base);
    check(c.posix_spawn_file_actions_init(actions), "posix_spawn_file_actions_init");
    let rc: number;
    try {
      this.#addFileActions(actions, at.cwd);
      rc = c.posix_spawn(BigInt(slot.base + PID_AT), at.path, actions, this.#attr, at.argv, at.envp);
    } finally {
      c.posix_spawn_file_actions_destroy(actions);
    }
    if (rc !== 0) throw new Error(`Cannot start ${req.program}: ${this.#strerror(rc)}`);
    const pid = slot.pid[0];
    return { pid, status: this.#watch(pid) };
  }

  /** Signals a process group without throwing: false when no process is in it. */
  killGroup(pgid: number, signal: number): boolean {
    return this.#libc.kill(-pgid, signal) === 0;
  }

  /** Stops reaping; processes still running go on, but their ends are no longer reported. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unwatchAll(new Error("the spawner was closed"));
    this.#closeLibrary();
  }

  #addFileActions(actions: bigint, cwd: bigint): void {
    const c = this.#libc;
    check(c.posix_spawn_file_actions_addopen(actions, 0, this.#devNull, O_RDONLY, 0), "addopen");
    check(c.posix_spawn_file_actions_addopen(actions, 1, this.#devNull, O_WRONLY, 0), "addopen");
    check(c.posix_spawn_file_actions_addopen(actions, 2, this.#devNull, O_WRONLY, 0), "addopen");
    check(c.posix_spawn_file_actions_addchdir_np(actions, cwd), "addchdir_np");
    // Deno opens its descriptors close-on-exec; this makes sure a stray one never reaches a task.
    if (c.posix_spawn_file_actions_addclosefrom_np) {
      check(c.posix_spawn_file_actions_addclosefrom_np(actions, 3), "addclosefrom_np");
    }
  }

  #watch(pid: number): Promise<Deno.CommandStatus> {
    const status = new Promise<Deno.CommandStatus>((resolve, reject) => {
      this.#live.set(pid, (s) => s instanceof Error ? reject(s) : resolve(s));
    });
    if (this.#live.size === 1) {
      Deno.addSignalListener("SIGCHLD", this.#onChild);
      // Also keeps the event loop alive while a child runs (a signal listener does not), and would catch
      // an exit whose SIGCHLD was somehow not seen.
      this.#timer = setInterval(this.#onChild, 1000);
    }
    // It may have exited before it was watched: its SIGCHLD then came too early to find it.
    this.#reapOne(pid);
    return status;
  }

  /** Reaps every watched child that exited; others are left to whoever started them. */
  #reap(): void {
    for (const pid of [...this.#live.keys()]) this.#reapOne(pid);
  }

  #reapOne(pid: number): void {
    const settle = this.#live.get(pid);
    if (!settle) return;
    const r = this.#libc.waitpid(pid, this.#waitStatus, WNOHANG);
    if (r === 0) return; // still running
    this.#live.delete(pid);
    if (r === pid) settle(decodeWaitStatus(this.#waitStatus[0]));
    else {
      const errno = this.#errno();
      const why = errno === ECHILD ? "it is not a child of this process" : this.#strerror(errno);
      settle(new Error(`Cannot wait for process ${pid}: ${why}`));
    }
    if (this.#live.size === 0) this.#unwatchAll();
  }

  #unwatchAll(err?: Error): void {
    if (err) { for (const settle of this.#live.values()) settle(err); }
    this.#live.clear();
    clearInterval(this.#timer);
    this.#timer = undefined;
    try {
      Deno.removeSignalListener("SIGCHLD", this.#onChild);
    } catch { /* not listening */ }
  }

  #errno(): number {
    const p = this.#libc.__errno_location();
    return p ? new Deno.UnsafePointerView(p).getInt32() : 0;
  }

  #strerror(errno: number): string {
    const p = this.#libc.strerror(errno);
    return p ? Deno.UnsafePointerView.getCString(p) : `error ${errno}`;
  }
}

function check(rc: number, what: string): void {
  if (rc !== 0) throw new Error(`${what} failed (${rc})`);
}
