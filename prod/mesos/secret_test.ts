/**
 * A job's secrets on Mesos: SECRET volumes of type VALUE in the task's ContainerInfo, in the proto's JSON;
 * and the emulator, which takes them, writes them as the minicluster does, and refuses what Mesos refuses.
 */
import assert from "node:assert/strict";
import { spec } from "../../core/hostmgr/testing.ts";
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { conformance, operator, RawFramework } from "./_conformance.ts";
import { makeSpec, withBackend } from "./_testing.ts";
import { secretsProblem, toSecretVolume, toTaskInfo } from "./mesos_convert.ts";
import type { ContainerInfo, TaskInfo } from "./protocol.ts";
import { filesUnder } from "../backend_testing.ts";
import { loadReferenceSchema } from "./shape_check.ts";

const EXAMPLE = new URL("./testdata/extra/proto-call-accept-launch-secret.json", import.meta.url);
const TEXT = "s3cr3t-Pa55w0rd-do-not-log";
const TEXT_B64 = btoa(TEXT);

/** The scheduler's ACCEPT call that launches `tasks`. */
function launchCall(tasks: TaskInfo[]): Record<string, unknown> {
  return {
    framework_id: { value: "f" },
    type: "ACCEPT",
    accept: { offer_ids: [{ value: "o" }], operations: [{ type: "LAUNCH", launch: { task_infos: tasks } }] },
  };
}

async function exampleContainers(): Promise<ContainerInfo[]> {
  const call = JSON.parse(await Deno.readTextFile(EXAMPLE));
  return call.accept.operations[0].launch.task_infos.map((t: TaskInfo) => t.container);
}

Deno.test("secrets go to Mesos as read-only SECRET volumes of type VALUE, in a MESOS container if the task has none", async () => {
  const [bare, withImage] = await exampleContainers();
  const command = { shell: true, value: "cat /etc/app/key", arguments: [] };
  const first = toTaskInfo(
    spec("job-5-0-1", "h", 1, { command, secrets: [{ path: "/etc/app/key", data: "YXBwLXNlY3JldC12MQ==" }] }),
  );
  assert.deepEqual(first.container, bare);

  // A container of its own keeps its volumes, the secrets come after them; unpadded base64 leaves padded.
  const container = {
    type: "MESOS" as const,
    mesos: { image: { type: "DOCKER" as const, docker: { name: "library/debian" } } },
    volumes: [{ containerPath: "data", hostPath: "/var/lib/data", mode: "RW" as const }],
  };
  const before = structuredClone(container);
  const second = toTaskInfo(
    spec("job-5-1-1", "h", 1, { command, container, secrets: [{ path: "conf/key", data: "AAH+/2tleQ" }] }),
  );
  assert.deepEqual(second.container, withImage);
  assert.deepEqual(container, before, "the task's config is not changed");

  // A Docker container gets them too (Mesos's Docker containerizer ignores them; the job manager refuses it).
  const docker = toTaskInfo(spec("job-5-2-1", "h", 1, {
    command,
    container: { type: "DOCKER", docker: { image: "debian" } },
    secrets: [{ path: "/k", data: TEXT_B64 }],
  }));
  assert.deepEqual(docker.container, {
    type: "DOCKER",
    docker: { image: "debian" },
    volumes: [{
      mode: "RO",
      container_path: "/k",
      source: { type: "SECRET", secret: { type: "VALUE", value: { data: TEXT_B64 } } },
    }],
  });
  assert.equal(toTaskInfo(spec("job-5-3-1", "h", 1, { command, secrets: [] })).container, undefined);

  const schema = await loadReferenceSchema();
  assert.deepEqual(schema.check("Call", launchCall([first, second, docker])), []);
  // The checker knows the shape: a misspelt enum or a missing `data` is caught.
  const wrong = structuredClone(first);
  wrong.container!.volumes![0].source!.type = "SECRETS" as "SECRET";
  delete wrong.container!.volumes![0].source!.secret!.value;
  (wrong.container!.volumes![0].source!.secret! as Record<string, unknown>).value = {};
  assert.deepEqual(schema.check("Call", launchCall([wrong])).map((p) => p.replace(/^.*volumes\[0\]/, "")), [
    `.source.type: got "SECRETS", expected one of the proto's enum names`,
    `.source.secret.value: required field "data" is missing`,
  ]);
});

Deno.test("secret data that is not base64, or an empty path, is refused by name, the data never quoted", () => {
  assert.throws(
    () => toSecretVolume({ path: "/etc/key", data: `${TEXT}!` }),
    (e: Error) => e.message === 'Cannot convert secret "/etc/key": data is not valid base64',
  );
  assert.equal(secretsProblem([{ path: "/a", data: TEXT_B64 }, { path: "b", data: "" }]), undefined);
  assert.equal(secretsProblem([{ path: "/b", data: `${TEXT}!` }]), 'secret "/b": data is not valid base64');
  assert.equal(secretsProblem([{ path: "", data: TEXT_B64 }]), "secret: path is empty");
});

Deno.test("MesosBackend on the emulator: the ACCEPT carries the secret volumes, the task reads its files, nothing else shows the data", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const host = hosts[0];
    const secrets = [{ path: "/etc/app/key", data: TEXT_B64 }, { path: "conf/key", data: btoa("second\n") }];
    const task: LaunchSpec = makeSpec(
      host,
      "stat -c '%a %n' etc/app/key conf/key >&2 && cat etc/app/key conf/key && env >env.txt",
      { secrets },
    );
    const bad = makeSpec(host, "true", { secrets: [{ path: "/etc/key", data: `${TEXT}!` }] });
    backend.launch([task, bad]);

    const refused = await rec.waitState(bad.taskId, "TASK_ERROR");
    assert.equal(refused.reason, "REASON_TASK_INVALID");
    assert.equal(refused.message, 'Task has an invalid secret: secret "/etc/key": data is not valid base64');
    await rec.waitState(task.taskId, "TASK_FINISHED");
    assert.equal(await backend.logs(task.taskId, "stdout"), `${TEXT}second\n`);
    assert.equal(await backend.logs(task.taskId, "stderr"), "400 etc/app/key\n400 conf/key\n");

    // The emulator got exactly Peloton's volumes, and only for the good task.
    const accepts = m.calls.filter((c) => (c as { type: string }).type === "ACCEPT") as ReturnType<
      typeof launchCall
    >[];
    const infos = accepts.flatMap((c) =>
      (c.accept as { operations: { launch: { task_infos: TaskInfo[] } }[] }).operations[0].launch.task_infos
    );
    assert.deepEqual(infos.map((i) => i.task_id.value), [task.taskId]);
    assert.deepEqual(infos[0].container, { type: "MESOS", volumes: secrets.map(toSecretVolume) });

    // Not in the master's task listing, its events, nor any file of its agents but the secrets and stdout.
    const listing = await operator(m.url, { type: "GET_TASKS" });
    assert.equal(listing.status, 200);
    assert.ok(listing.body.includes(task.taskId));
    for (const text of [listing.body, JSON.stringify(m.events), JSON.stringify(rec.events)]) {
      assert.ok(!text.includes(TEXT) && !text.includes(TEXT_B64), text);
    }
    const files = await filesUnder(m.dataDir);
    const sandbox = files.find((f) => f.endsWith(`/${task.taskId}/stdout`))!.replace(/\/stdout$/, "");
    const holders = new Set(["etc/app/key", "stdout"].map((f) => `${sandbox}/${f}`));
    assert.ok(files.includes(`${sandbox}/env.txt`));
    for (const file of files) {
      const text = await Deno.readTextFile(file);
      const holds = text.includes(TEXT) || text.includes(TEXT_B64);
      assert.equal(holds, holders.has(file), `${file} ${holders.has(file) ? "holds" : "leaks"} the secret`);
    }
  }));

/** An ACCEPT of `offer` launching one task per [task id, container]. */
function acceptWith(
  offer: { id: { value: string }; agent_id: { value: string } },
  tasks: [string, unknown][],
) {
  const task_infos = tasks.map(([taskId, container]) => ({
    name: taskId,
    task_id: { value: taskId },
    agent_id: offer.agent_id,
    resources: [{ name: "cpus", type: "SCALAR", scalar: { value: 0.1 }, role: "*" }],
    command: { shell: true, value: "true" },
    container,
  }));
  return {
    type: "ACCEPT",
    accept: { offer_ids: [offer.id], operations: [{ type: "LAUNCH", launch: { task_infos } }] },
  };
}

const secretVolume = (secret: unknown) => ({
  mode: "RO",
  container_path: "/etc/key",
  source: { type: "SECRET", secret },
});

conformance(
  "ACCEPT: secret data that is not base64 fails the call's JSON (400); a secret by reference or without its value is an invalid task",
  async (t) => {
    const fw = await RawFramework.subscribe(t);
    const offer = (await fw.offers())[0];
    const notBase64 = secretVolume({ type: "VALUE", value: { data: `${TEXT}!` } });
    const call = acceptWith(offer, [["t-bad", { type: "MESOS", volumes: [notBase64] }]]);
    const r = await fw.call(call, true);
    assert.equal(r.status, 400);
    assert.equal(
      r.body,
      "Failed to convert JSON into Call protobuf: 'accept.operations[0].launch.task_infos[0].container" +
        ".volumes[0].source.secret.value.data' is not valid base64",
    );

    // The offer is still there: the call was refused before it was looked at.
    const cases: [string, unknown, string][] = [
      [
        "t-ref",
        { type: "REFERENCE", reference: { name: "vault/key" } },
        "only secrets of type VALUE are supported by this emulator",
      ],
      ["t-novalue", { type: "VALUE" }, "Secret of type VALUE must have the 'value' field set"],
      [
        "t-both",
        { type: "VALUE", value: { data: TEXT_B64 }, reference: { name: "k" } },
        "Secret of type VALUE must not have the 'reference' field set",
      ],
    ];
    const tasks = cases.map(([taskId, secret]): [string, unknown] => [
      taskId,
      { type: "MESOS", volumes: [secretVolume(secret)] },
    ]);
    // Left out of the shape checks: a secret by reference is a shape Peloton never sends.
    assert.equal((await fw.call(acceptWith(offer, tasks), true)).status, 202);
    for (const [taskId, , problem] of cases) {
      const update = await fw.update(taskId);
      assert.equal(update.state, "TASK_ERROR");
      assert.equal(update.reason, "REASON_TASK_INVALID");
      assert.equal(
        update.message,
        `Task ${taskId} is invalid: Task's \`ContainerInfo\` is invalid: Invalid volume: ${problem}`,
      );
    }
  },
  { emulatorOnly: true },
);
