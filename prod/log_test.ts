/** JSON log lines: levels, the threshold `up` logs at without -v, and plain lines given a level. */
import assert from "node:assert/strict";
import { jsonLogger, lineLogger } from "./log.ts";

const levels = (lines: string[]) => lines.map((l) => JSON.parse(l)).map((o) => `${o.level} ${o.msg}`);

Deno.test("an info line carrying an error is a warning; lines below the threshold are left out", () => {
  const lines: string[] = [];
  const log = jsonLogger({ daemon: "all" }, (l) => lines.push(l), "warn").with({ daemon: "jobmgr" });
  log("job archiver run", { archived: 1 });
  log("job archiver run failed", { error: "No space left on device (os error 28)" });
  log.error("heartbeat failed for longer than a lease");
  assert.deepEqual(levels(lines), [
    "warn job archiver run failed",
    "error heartbeat failed for longer than a lease",
  ]);
  assert.equal(JSON.parse(lines[0]).daemon, "jobmgr");
});

Deno.test("plain lines get the level their words say", () => {
  const lines: string[] = [];
  const line = lineLogger(jsonLogger({}, (l) => lines.push(l)));
  line("mesos: trying the master http://m:5050");
  line("mesos: subscription loop failed: boom");
  line("mesos: ERROR: the master removed framework f");
  assert.deepEqual(levels(lines), [
    "info mesos: trying the master http://m:5050",
    "warn mesos: subscription loop failed: boom",
    "error mesos: ERROR: the master removed framework f",
  ]);
});
