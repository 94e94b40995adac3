/**
 * A Mesos master that cannot be reached: the warnings name the master (and why the connection failed), so an
 * operator can tell a wrong `--mesos-master` from a master that is down.
 */
import assert from "node:assert/strict";
import { MemoryFrameworkIdStore } from "./framework_id_store.ts";
import { MesosMaintenance } from "./maintenance_sync.ts";
import { MesosBackend } from "./mesos_backend.ts";
import { eventually } from "./_testing.ts";

/** A URL nothing listens on. */
async function deadUrl(): Promise<string> {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response());
  await server.shutdown();
  return `http://127.0.0.1:${server.addr.port}`;
}

Deno.test("an unreachable master: the event stream's and the maintenance sync's warnings name it", async () => {
  const url = await deadUrl();
  const lines: string[] = [];
  const fields: Record<string, unknown>[] = [];
  const backend = new MesosBackend({
    masterUrl: url,
    idStore: new MemoryFrameworkIdStore(),
    log: (line) => lines.push(line),
    client: { backoffMinMs: 20, backoffMaxMs: 40, random: () => 0.5 },
  });
  const hm = {
    hosts: [],
    unregisteredInMaintenance: () => [],
    adoptMaintenance() {},
    completedMaintenance: () => [],
    completionCarried() {},
    machineWentDown() {},
  };
  const sync = new MesosMaintenance(backend, hm, (msg, f) => {
    lines.push(msg);
    fields.push({ msg, ...f });
  });
  backend.start(() => {});
  sync.start(20);
  try {
    await eventually(
      "three attempts to subscribe",
      () => lines.filter((l) => /re-subscribing/.test(l)).length >= 3,
    );
    const stream = lines.find((l) => /re-subscribing/.test(l))!;
    assert.ok(stream.startsWith("mesos: event stream failed: fetch failed ("), stream);
    assert.match(stream, /Connection refused/);
    assert.ok(stream.endsWith(` (master ${url}); re-subscribing in ~20 ms`), stream);
    const read = fields.filter((f) => /cannot read the master's maintenance status/.test(String(f.msg)));
    assert.equal(read.length, 1, "logged once while the error stays the same");
    assert.equal(read[0].master, url);
    assert.match(String(read[0].error), /^fetch failed \(.*Connection refused/);
  } finally {
    await sync.stop();
    await backend.stop();
  }
});
