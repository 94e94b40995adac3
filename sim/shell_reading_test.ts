/** How the simulated cluster reads a task's command: run time, exit code, and what it could not read. */
import assert from "node:assert/strict";
import type { LaunchSpec } from "../core/ports/host_backend.ts";
import { outcomeFromCommand } from "./cluster.ts";
import { type CommandReading, readCommand, sleepSeconds } from "./shell_reading.ts";

const read = (value: string, env?: Record<string, string>) =>
  readCommand({ shell: true, value, arguments: [] }, env);

/** `[command, seconds, exit code]`: read exactly, nothing unread. */
function exact(cases: [string, number, number?][], env?: Record<string, string>): void {
  for (const [command, seconds, exitCode = 0] of cases) {
    assert.deepEqual<CommandReading>(
      read(command, env),
      { durationMs: seconds * 1000, exitCode, unread: [] },
      command,
    );
  }
}

Deno.test("sleep takes GNU sleep's operands: suffixes, several summed, decimals, exponents, infinity", () => {
  exact([
    ["sleep 1m", 60],
    ["sleep 1m 30s", 90],
    ["sleep 2h", 7200],
    ["sleep 1d", 86_400],
    ["sleep .5", 0.5],
    ["sleep 5.", 5],
    ["sleep 1e3", 1000],
    ["sleep 2.5E1s", 25],
    ["sleep 1.5e1m", 900],
    ["sleep 0x10", 16],
    ["sleep -0", 0],
    ["sleep '10' \"20\"", 30],
    ["/bin/sleep 7", 7],
    ["sleep infinity", Infinity],
    ["sleep inf", Infinity],
    ["sleep INFINITY", Infinity],
    ["sleep 1e400", Infinity],
  ]);
  assert.equal(sleepSeconds("1M"), undefined); // suffixes are lower case
  assert.equal(sleepSeconds("nan"), undefined);
  assert.equal(sleepSeconds("1e"), undefined);
  // GNU sleep refuses the whole command, sleeping not at all, and fails.
  for (const bad of ["sleep 5x", "sleep -1", "sleep 10 abc"]) {
    const r = read(bad);
    assert.deepEqual([r.durationMs, r.exitCode], [0, 1], bad);
    assert.match(r.unread.join(), /is no interval GNU sleep reads/, bad);
  }
});

Deno.test("an endless loop never ends, whatever it runs; a loop that may end is not taken as endless", () => {
  exact([
    ["while :; do echo running; sleep 10; done", Infinity],
    ["while true; do sleep 1; done", Infinity],
    ["until false; do sleep 1; done", Infinity],
    ["while :\ndo\n  ./poll.sh\n  sleep 10\ndone", Infinity],
    ['echo "v1 $MESOS_TASK_ID"; while true; do sleep 1; done # peloton-service-v1', Infinity],
    ['echo run >> data/runs; echo "runs: $(wc -l < data/runs)"; while true; do sleep 1; done', Infinity],
    // An inner loop's break leaves that loop only.
    ["while :; do for f in $(ls); do break; done; sleep 1; done", Infinity],
    // A loop whose condition changes ends.
    ["done=false; while ! $done; do sleep 1; done=true; done", 1],
    ["while :; do sleep 2; break; done; sleep 1", 3],
    ["for i in 1 2 3; do sleep $i; done", 6],
  ]);
  const mayEnd = read("while :; do ./poll || exit 1; sleep 10; done");
  assert.equal(mayEnd.durationMs, 10_000);
  assert.deepEqual(mayEnd.unread, [
    "./poll",
    "exit 1 (only under a condition it cannot decide)",
    "while :; do ./poll || exit 1; sleep 10; done: a loop that ends only under a condition it cannot decide",
  ]);
  const uncounted = read("while [ ! -f /tmp/ready ]; do sleep 1; done; sleep 2");
  assert.equal(uncounted.durationMs, 2000);
  assert.deepEqual(uncounted.unread, [
    "while [ ! -f /tmp/ready ]; do sleep 1; done: a loop it cannot count",
    "sleep 1 (only under a condition it cannot decide)",
  ]);
});

Deno.test("exit counts where it certainly runs; a conditional one does not, and is reported", () => {
  exact([
    ["if false; then exit 1; fi; sleep 5", 5],
    ["echo failing && exit 3", 0, 3],
    ["sleep 1; exit 1", 1, 1],
    ["false || exit 2", 0, 2],
    ["true || exit 2", 0],
    ["sleep 3 && exit 2 || exit 5", 3, 2],
    ["case a in a) exit 4;; esac", 0, 4],
    ["(sleep 3; exit 4); sleep 1", 4],
    ["exit 256", 0],
    ["exec sleep 5; sleep 100", 5],
    // Without an exit, the shell exits with its last command's status.
    ["echo hi; false", 0, 1],
    ["f() { sleep 2; return 3; }; f; f", 4, 3],
  ]);
  for (
    const [command, unread] of [
      ["test -f done || exit 1", "exit 1 (only under a condition it cannot decide)"],
      ["if [ -f x ]; then exit 1; else exit 2; fi", "exit 1 (only under a condition it cannot decide)"],
      ["case $MODE in fail) exit 1;; esac", "exit 1 (only under a condition it cannot decide)"],
    ]
  ) {
    const r = read(command);
    assert.deepEqual([r.durationMs, r.exitCode], [0, 0], command);
    assert.equal(r.unread[0], unread, command);
  }
});

Deno.test("a program it cannot time takes no time and is reported, as is an operand it cannot read", () => {
  const cases: [string, number, string[]][] = [
    ["./run.sh", 0, ["./run.sh"]],
    ["python -c 'import time; time.sleep(30)'", 0, ["python -c 'import time; time.sleep(30)'"]],
    ["sleep 2 | cat", 2, ["cat"]],
    ["if ./ready; then sleep 5; fi; sleep 1", 1, [
      "./ready",
      "sleep 5 (only under a condition it cannot decide)",
    ]],
    ["sleep $SLEEP_SECONDS", 0, ["sleep $SLEEP_SECONDS: an operand it cannot read"]],
    ["sleep $(cat t)", 0, ["cat t", "sleep $(cat t): an operand it cannot read"]],
    ["echo Hello instance 0 & exit(2)", 0, ['a command it cannot parse (expected ")", got "2")']],
    ["sleep 'unterminated", 0, ["a command it cannot parse (a ' without its closing quote)"]],
  ];
  for (const [command, seconds, unread] of cases) {
    assert.deepEqual(read(command), { durationMs: seconds * 1000, exitCode: 0, unread }, command);
  }
  // One that runs too many commands to follow is read up to there.
  const words = Array.from({ length: 30 }, (_, i) => i).join(" ");
  const long = read(`for a in ${words}; do for b in ${words}; do for c in ${words}; do :; done; done; done`);
  assert.deepEqual(long.unread, ["a command that runs more than 10000 commands"]);
  // Backgrounded work is not waited for, so nothing of it counts unless a `wait` does.
  exact([["echo lol & sleep 3", 3], ["sleep 10 &", 0], ["./x &", 0], ["sleep 10 & wait", 10]]);
  assert.deepEqual(read("./x & wait").unread, ["./x"]);
});

Deno.test("sleep operands from the task's environment and the script's own variables", () => {
  exact([["sleep $SLEEP_SECONDS", 300], ["sleep ${SLEEP_SECONDS}s", 300], ['sleep "$T"', 120]], {
    SLEEP_SECONDS: "300",
    T: "2m",
  });
  exact([
    ["sleep ${T:-4}", 4],
    ["T=5; sleep $T", 5],
    ["export T=1m; sleep $T", 60],
    ["T='1m 30s'; sleep $T", 90],
  ]);
  assert.deepEqual(readCommand({ shell: false, value: "/bin/sleep", arguments: ["30"] }), {
    durationMs: 30_000,
    exitCode: 0,
    unread: [],
  });
  // A Docker container's env parameters are the command's environment, as Peloton's example sets it.
  const spec: Pick<LaunchSpec, "command" | "env" | "container"> = {
    command: { shell: true, value: "echo $MESSAGE && sleep $SLEEP_SECONDS", arguments: [] },
    env: { SLEEP_SECONDS: "1" },
    container: {
      type: "DOCKER",
      docker: { image: "debian", parameters: [{ key: "env", value: "SLEEP_SECONDS=300" }] },
    },
  };
  assert.deepEqual(outcomeFromCommand(spec), { durationMs: 300_000, exitCode: 0 });
});
