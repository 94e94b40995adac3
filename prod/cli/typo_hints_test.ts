/** A mistyped command or flag is named with the closest valid one; `--help` shows the flags' defaults. */
import assert from "node:assert/strict";
import { type CliIo, helpText, runCli } from "./main.ts";
import { runPeloton } from "../testing.ts";

/** Runs the CLI with `argv` as given; nothing here reaches a server. */
async function run(...argv: string[]) {
  const out: string[] = [], err: string[] = [];
  const io: CliIo = { out: (l) => out.push(l), err: (l) => err.push(l), env: () => undefined };
  const code = await runCli(argv, io);
  return { code, out: out.join("\n"), err: err.join("\n") };
}

Deno.test("a mistyped command is named with the command it is closest to, then the help", async () => {
  const cases: [string[], string][] = [
    [["jobb", "query"], 'peloton: unknown command "jobb query"; did you mean `peloton job query`?'],
    // Each word is matched among those that may stand there, as far as one is close; a command's arguments
    // are left alone.
    [["jbo", "qeury"], 'peloton: unknown command "jbo qeury"; did you mean `peloton job query`?'],
    [["respol", "dump", "x"], 'peloton: unknown command "respol dump"; did you mean `peloton respool dump`?'],
    [["jobb", "list"], 'peloton: unknown command "jobb list"; did you mean `peloton job`?'],
    [["jobb"], 'peloton: unknown command "jobb"; did you mean `peloton job`?'],
    [["explode", "now"], 'peloton: unknown command "explode now"'],
    // No command at all: perhaps a mistyped global flag.
    [["--hlep"], "peloton: unknown flag --hlep; did you mean --help?"],
    [["-j"], "peloton: expected a COMMAND"],
  ];
  for (const [argv, message] of cases) {
    const r = await run(...argv);
    assert.equal(r.code, 2, argv.join(" "));
    assert.equal(r.err, `${message}\n\n${helpText()}`);
  }
});

Deno.test("a mistyped flag is named with the command's or global flag it is closest to, then the usage", async () => {
  const cases: [string[], string][] = [
    [
      ["job", "create", "X", "Y", "--jobid", "x"],
      "peloton job create: unknown flag --jobid; did you mean --jobID?",
    ],
    [["job", "get", "j", "--jsn"], "peloton job get: unknown flag --jsn; did you mean --json?"],
    [["up", "--data_dir", "d"], "peloton up: unknown flag --data_dir; did you mean --data-dir?"],
    [["job", "get", "j", "--explode"], "peloton job get: unknown flag --explode"],
    [["job", "get", "j", "-x"], "peloton job get: unknown flag -x"],
  ];
  for (const [argv, message] of cases) {
    const r = await run(...argv);
    assert.equal(r.code, 2, argv.join(" "));
    const [first, usage, ...rest] = r.err.split("\n");
    assert.equal(first, message);
    assert.match(usage, new RegExp(`^usage: peloton ${argv[0]} `));
    assert.deepEqual(rest, []);
  }
});

Deno.test("--help shows each flag's default where it has one", async () => {
  const up = await run("up", "--help");
  assert.equal(up.code, 0, up.err);
  assert.match(up.out, /\[--port VALUE \(default 5392\)\]/);
  assert.match(up.out, /\[--data-dir VALUE \(default \.peloton\)\]/);
  assert.match(up.out, /\[--agents VALUE \(default 3\)\]/);
  // A flag without a default, or a switch (off unless given), shows none.
  assert.match(up.out, /\[--agents-file VALUE\]/);
  assert.match(up.out, /\[-v\/--verbose\]/);
  const minicluster = await run("minicluster", "--help");
  assert.equal(minicluster.code, 0, minicluster.err);
  assert.match(minicluster.out, /\[--port VALUE \(default 5050\)\]/);
  assert.match(minicluster.out, /\[--data-dir VALUE \(default \.peloton\/mesos\)\]/);
  const top = await run("--help");
  assert.equal(top.code, 0, top.err);
  assert.match(top.out, /\n {2}peloton up \[--port VALUE \(default 5392\)\]/);
  assert.match(top.out, /\[-n\/--limit VALUE \(default 100\)\]/);
  const group = await run("task", "-h");
  assert.equal(group.code, 0, group.err);
  assert.match(group.out, /\n {2}peloton task query .*\[-n\/--limit VALUE \(default 100\)\]/);
  // An error's usage line stays short: the defaults are for --help.
  const bad = await run("up", "--port");
  assert.equal(bad.code, 2);
  assert.match(bad.err, /\nusage: peloton up \[--port VALUE\] /);
});

Deno.test("a misspelt command followed by --help is the same unknown-command error, exit 2", async () => {
  for (const help of ["--help", "-h"]) {
    const top = await run("jbo", "status", help);
    assert.equal(top.code, 2, top.out);
    assert.equal(top.out, "");
    assert.equal(
      top.err,
      `peloton: unknown command "jbo status"; did you mean \`peloton job status\`?\n\n${helpText()}`,
    );
    const inGroup = await run("job", "stauts", help);
    assert.equal(inGroup.code, 2, inGroup.out);
    assert.equal(inGroup.out, "");
    assert.equal(inGroup.err, (await run("job", "stauts")).err);
    assert.match(
      inGroup.err,
      /^peloton job: unknown command "job stauts", .*did you mean `peloton job status`\?/,
    );
    // A group that is a command too (the daemon `jobmgr`): its mistyped command, as without --help.
    const daemon = await run("jobmgr", "throttled-pod", help);
    assert.equal(daemon.code, 2, daemon.out);
    assert.equal(daemon.err, (await run("jobmgr", "throttled-pod")).err);
    // A word a command that is no group would refuse: refused with -h too (help would run no server).
    for (const argv of [["up", "foo"], ["hostmgr", "foo"], ["job", "get", "X", "Y"]]) {
      const r = await run(...argv, help);
      assert.equal(r.code, 2, argv.join(" "));
      assert.match(r.err, /unexpected argument "(foo|Y)"/, argv.join(" "));
    }
  }
  // Help asked of a real group or command is help, exit 0.
  for (const argv of [["job", "--help"], ["job", "status", "--help"], ["--help"], ["jobmgr", "-h"]]) {
    const r = await run(...argv);
    assert.deepEqual([r.code, r.err], [0, ""], argv.join(" "));
  }
});

Deno.test("peloton with no arguments writes its usage to stderr, not stdout, and exits 2", async () => {
  const r = await run();
  assert.equal(r.code, 2);
  assert.equal(r.out, "");
  assert.equal(r.err, helpText());
  // As a real process: nothing on stdout.
  const p = await runPeloton([]);
  assert.equal(p.code, 2);
  assert.equal(p.out, "");
  assert.match(p.err, /^usage: peloton /);
});
