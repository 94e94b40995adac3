/** bench-prod end to end on a small job: a real `peloton up`, real processes, the JSON it promises. */
import { deepStrictEqual as equal, ok } from "node:assert/strict";
import { benchProd } from "./bench_prod.ts";

Deno.test("bench-prod: a small job of real processes runs to SUCCEEDED, sandboxes in --work-dir, on --port", async () => {
  const workDir = await Deno.makeTempDir({ prefix: "bench_prod_test_" });
  // A port free now, as an operator picks one in their range.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  try {
    const r = await benchProd({
      port,
      tasks: 60,
      backend: "minicluster",
      agents: 2,
      agentCpus: 8,
      cpu: 0.1,
      command: "true",
      apiRps: 50,
      workDir,
    });
    equal(r.tasks, 60);
    equal(r.workDir, workDir);
    equal(r.backend, "minicluster");
    ok(r.url.endsWith(`:${port}`), r.url);
    ok(r.seconds > 0 && r.tasksPerSec > 0, JSON.stringify(r));
    ok(r.apiLatencyMs.calls >= 1 && r.apiLatencyMs.p50 <= r.apiLatencyMs.p99, JSON.stringify(r));
    ok(r.peakRssBytes > 10 * 2 ** 20, `peak RSS ${r.peakRssBytes}`);
    ok(r.firstSucceededSeconds > 0 && r.firstSucceededSeconds <= r.seconds, JSON.stringify(r));
    // The run's own directory is removed; nothing is left in the work directory.
    equal([...Deno.readDirSync(workDir)], []);
  } finally {
    await Deno.remove(workDir, { recursive: true });
  }
});

Deno.test("bench-prod: bad arguments name the flag and what was expected, and start nothing", async () => {
  // A file where the work dir should be cannot be made a directory (a missing dir is made).
  const notDir = await Deno.makeTempFile({ prefix: "bench_prod_test_" });
  const cases: [string[], RegExp][] = [
    [["--tasks", "ten"], /--tasks: got "ten", expected an integer >= 1/],
    [["--cpu=0"], /--cpu: got "0", expected a positive number/],
    [["--backend", "k8s"], /--backend: got "k8s", expected minicluster or mesos/],
    [["--work-dir", notDir], /--work-dir: ".*" is not a directory and cannot be made one/],
    [["--bogus"], /Unknown option '--bogus'/],
    [["--port", "70000"], /--port: got "70000", expected an integer from 0 \(any free port\) to 65534/],
  ];
  for (const [args, message] of cases) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("./bench_prod.ts", import.meta.url).pathname, ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(out.stderr);
    equal(out.code, 2, `${args.join(" ")}: ${err}`);
    ok(message.test(err), `${args.join(" ")}: ${err}`);
    ok(err.includes("usage: deno task bench-prod"), err);
  }
  await Deno.remove(notDir);
});
