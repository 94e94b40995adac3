/**
 * A task's events and sandbox logs under its row: the calls the CLI's `task events` and `task logs` make, the
 * end of each file with a link to the whole, and the row's button that opens them.
 */
import assert from "node:assert/strict";
import type { ApiCall, JobInfoJson, Snapshot, TaskDetails, TaskListQuery } from "./api_types.ts";
import { bytesText, loadTaskDetails, logTail, taskDetailsRow, TaskLog } from "./client_task_details.ts";
import { parseTaskListQuery, TaskFilter, taskListHash, tasksView } from "./client_tasks.ts";
import { fake, type FakeElement, useFakeDocument } from "./dom_testing.ts";

useFakeDocument();

const JOB = "0b1c2d3e-aaaa-4bbb-8ccc-000000000001";
const EVENTS = [
  {
    taskId: { value: `${JOB}-3-2` },
    actualState: "FAILED",
    timestamp: "2026-11-27T21:02:05Z",
    hostname: "agent-1",
    message: "Command exited with status 3",
    reason: "REASON_COMMAND_EXECUTOR_FAILED",
  },
  {
    taskId: { value: `${JOB}-3-2` },
    actualState: "RUNNING",
    timestamp: "2026-11-27T21:02:03Z",
    hostname: "agent-1",
    message: "",
    reason: "",
  },
];

/** An API that answers GetPodEvents and BrowseSandbox as the server does, and serves the run's files. */
function api(files: Record<string, string | Error>, sandbox: unknown | Error = {
  hostname: "agent-1",
  agentId: { value: "agent-id-1" },
  taskId: { value: `${JOB}-3-2` },
  paths: ["stdout", "stderr"],
}) {
  const calls: [string, unknown][] = [];
  const call: ApiCall = <T>(procedure: string, body: unknown) => {
    calls.push([procedure, body]);
    if (procedure.endsWith("::GetPodEvents")) return Promise.resolve({ result: EVENTS } as T);
    if (sandbox instanceof Error) return Promise.reject(sandbox);
    return Promise.resolve(sandbox as T);
  };
  const sandboxTail = (taskId: string, file: string, agentId: string | undefined, maxBytes: number) => {
    calls.push([`sandbox ${file}`, { taskId, agentId, maxBytes }]);
    const f = files[file];
    if (f instanceof Error) return Promise.reject(f);
    // The file's last maxBytes, as the server's tail read gives them (ASCII here: one byte a character).
    const text = f ?? "";
    return Promise.resolve({
      text: text.slice(-maxBytes),
      sizeBytes: text.length,
      offsetBytes: Math.max(0, text.length - maxBytes),
    });
  };
  return { calls, api: { call, sandboxTail } };
}

Deno.test("a task's details come from GetPodEvents, BrowseSandbox and its run's stdout and stderr", async () => {
  const { calls, api: fakeApi } = api({ stdout: "one\ntwo\n", stderr: "boom\n" });
  const d = await loadTaskDetails(fakeApi, JOB, 3);
  assert.deepEqual(calls, [
    ["peloton.api.task.TaskManager::GetPodEvents", { jobId: { value: JOB }, instanceId: 3 }],
    ["peloton.api.task.TaskManager::BrowseSandbox", { jobId: { value: JOB }, instanceId: 3 }],
    ["sandbox stdout", { taskId: `${JOB}-3-2`, agentId: "agent-id-1", maxBytes: TaskLog.TAIL_BYTES }],
    ["sandbox stderr", { taskId: `${JOB}-3-2`, agentId: "agent-id-1", maxBytes: TaskLog.TAIL_BYTES }],
  ]);
  assert.deepEqual(d, {
    events: EVENTS,
    sandbox: { taskId: `${JOB}-3-2`, agentId: "agent-id-1", hostname: "agent-1" },
    stdout: { text: "one\ntwo\n" },
    stderr: { text: "boom\n" },
  });
  // A task never launched has no sandbox: the reason is kept, the events still come.
  const pending = await loadTaskDetails(
    api({}, new Error("not-found: task x-3 has not been launched on any host")).api,
    JOB,
    3,
  );
  assert.deepEqual(pending, {
    events: EVENTS,
    sandboxError: "not-found: task x-3 has not been launched on any host",
  });
  const unreadable = await loadTaskDetails(
    api({ stdout: "ok", stderr: new Error("sandbox: 404") }).api,
    JOB,
    3,
  );
  assert.deepEqual([unreadable.stdout, unreadable.stderr], [{ text: "ok" }, { error: "sandbox: 404" }]);
});

Deno.test("a file longer than the page reads: only its end is loaded, and the note gives its whole size", async () => {
  const lines = Array.from({ length: 20_000 }, (_, i) => `out ${i}`);
  const big = lines.join("\n") + "\n";
  assert.ok(big.length > TaskLog.TAIL_BYTES);
  const d = await loadTaskDetails(api({ stdout: big, stderr: "boom\n" }).api, JOB, 3);
  assert.equal(d.stdout?.text, big.slice(-TaskLog.TAIL_BYTES));
  assert.equal(d.stdout?.sizeBytes, big.length);
  assert.deepEqual(d.stderr, { text: "boom\n" }, "a file read whole has no size to say");
  const [stdout, stderr] = fake(taskDetailsRow(3, d, 11)).select("div.log");
  assert.equal(
    stdout.select("div.log-head")[0].textContent,
    `stdout · the last 100 lines of ${bytesText(big.length)} (only its end is read) · whole file`,
  );
  assert.match(bytesText(big.length), /^1\d\d\.\d KiB$/);
  const pre = stdout.select("pre")[0].textContent;
  assert.ok(pre.startsWith("out 19900\n") && pre.endsWith("out 19999"), pre.slice(0, 40));
  assert.match(stderr.textContent, /· 1 line ·/);
  assert.deepEqual(
    [0, 812, 64 << 10, 9.5 * 2 ** 20, 3 * 2 ** 30].map(bytesText),
    ["0 B", "812 B", "64.0 KiB", "9.5 MiB", "3.0 GiB"],
  );
});

Deno.test("a file's end: its last lines, bounded in characters", () => {
  assert.deepEqual(logTail(""), { text: "", lines: 0, shown: 0 });
  assert.deepEqual(logTail("a\nb\n"), { text: "a\nb", lines: 2, shown: 2 });
  const many = Array.from({ length: 250 }, (_, i) => `line ${i}`).join("\n");
  const tail = logTail(many);
  assert.equal(tail.lines, 250);
  assert.equal(tail.shown, TaskLog.TAIL_LINES);
  assert.ok(tail.text.startsWith("line 150\n") && tail.text.endsWith("line 249"));
  assert.deepEqual(logTail("aaaa\nbbbb\ncccc", 10, 9), { text: "bbbb\ncccc", lines: 3, shown: 2 });
  assert.deepEqual(logTail("x".repeat(20), 10, 5), { text: "…xxxxx", lines: 1, shown: 1 });
});

const texts = (els: FakeElement[]) => els.map((el) => el.textContent);

Deno.test("the details show the events with their runs and the end of each file, linking to the whole", () => {
  const many = Array.from({ length: 150 }, (_, i) => `out ${i}`).join("\n") + "\n";
  const d: TaskDetails = {
    events: EVENTS,
    sandbox: { taskId: `${JOB}-3-2`, agentId: "agent-id-1", hostname: "agent-1" },
    stdout: { text: many },
    stderr: { text: "boom\n" },
  };
  const row = fake(taskDetailsRow(3, d, 11));
  assert.equal(row.getAttribute("data-details-of"), "3");
  assert.equal(row.select("td")[0].getAttribute("colspan"), "11");
  const events = row.select("table.events")[0];
  assert.deepEqual(texts(events.select("th")), ["Time", "Run", "State", "Host", "Message", "Reason"]);
  assert.deepEqual(events.select("tbody")[0].select("tr").map((tr) => texts(tr.select("td"))), [
    [
      "2026-11-27 21:02:05 UTC",
      "2",
      "FAILED",
      "agent-1",
      "Command exited with status 3",
      "REASON_COMMAND_EXECUTOR_FAILED",
    ],
    ["2026-11-27 21:02:03 UTC", "2", "RUNNING", "agent-1", "", ""],
  ]);
  assert.match(row.select("h4")[1].textContent, /^Sandbox of run 2 on agent-1$/);
  const [stdout, stderr] = row.select("div.log");
  assert.equal(stdout.getAttribute("data-file"), "stdout");
  assert.match(
    stdout.select("div.log-head")[0].textContent,
    /^stdout · the last 100 of 150 lines · whole file$/,
  );
  assert.ok(stdout.select("pre")[0].textContent.startsWith("out 50\n"));
  assert.ok(stdout.select("pre")[0].textContent.endsWith("out 149"));
  assert.equal(stderr.select("pre")[0].textContent, "boom");
  assert.match(stderr.textContent, /· 1 line ·/);
  assert.deepEqual(row.select("a.whole-file").map((a) => a.getAttribute("href")), [
    `../sandbox/${JOB}-3-2/stdout?agentId=agent-id-1`,
    `../sandbox/${JOB}-3-2/stderr?agentId=agent-id-1`,
  ]);
  assert.equal(row.select("a.whole-file")[0].getAttribute("target"), "_blank");

  // What could not be loaded says why, in its place.
  const failed = fake(taskDetailsRow(3, { eventsError: "unavailable: x", sandboxError: "not launched" }, 11));
  assert.deepEqual(texts(failed.select("p.error-note")), [
    "Events could not be loaded: unavailable: x",
    "No sandbox to read: not launched",
  ]);
  assert.match(fake(taskDetailsRow(3, undefined, 11)).textContent, /^Loading the task's events and logs…$/);
});

Deno.test("each task's row has a button that opens its details under it, loaded or loading", () => {
  const q: TaskListQuery = parseTaskListQuery("");
  const info: JobInfoJson = {
    id: { value: JOB },
    config: { name: "web", type: "BATCH", instanceCount: 2 },
    runtime: { state: "RUNNING", goalState: "SUCCEEDED", taskStats: { RUNNING: 1, FAILED: 1 } },
  };
  const task = (instanceId: number, state: string) => ({
    instanceId,
    config: { name: "web" },
    runtime: { state, goalState: "SUCCEEDED" },
  });
  const snap: Snapshot = {
    job: {
      info,
      tasks: {
        records: [task(0, "RUNNING"), task(3, "FAILED")],
        pagination: { offset: 0, limit: 100, total: 2 },
      },
      tasksFor: taskListHash(JOB, q),
      taskDetails: { 3: { events: EVENTS } },
    },
  };
  const toggled: number[] = [];
  const view = (open: number[]) =>
    fake(tasksView(snap, info, q, new TaskFilter(() => {}).form, {
      open: new Set(open),
      toggle: (i) => toggled.push(i),
    }));
  const closed = view([]);
  const buttons = closed.select("button.details-toggle");
  assert.deepEqual(buttons.map((b) => [b.getAttribute("aria-expanded"), b.textContent]), [
    ["false", "▸ Events & logs"],
    ["false", "▸ Events & logs"],
  ]);
  assert.equal(buttons[1].getAttribute("aria-label"), "Events & logs of instance 3");
  assert.equal(closed.select("tr.task-details").length, 0);
  buttons[1].click();
  assert.deepEqual(toggled, [3]);

  const opened = view([3, 0]);
  const rows = opened.select("tbody")[0].children as FakeElement[];
  assert.deepEqual(
    rows.map((r) => r.getAttribute("data-instance") ?? `details of ${r.getAttribute("data-details-of")}`),
    [
      "0",
      "details of 0",
      "3",
      "details of 3",
    ],
  );
  assert.match(rows[1].textContent, /Loading the task's events and logs…/, "instance 0's not loaded yet");
  assert.equal(rows[3].select("table.events").length, 1);
  assert.equal(opened.select("button.details-toggle")[1].getAttribute("aria-expanded"), "true");
});
