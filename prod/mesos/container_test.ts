/** A task's container, from Peloton's job files to Mesos's ContainerInfo and back (the emulator's side). */
import assert from "node:assert/strict";
import { spec } from "../../core/hostmgr/testing.ts";
import { loadJobConfig } from "../../core/model/load.ts";
import type { ContainerInfo } from "../../core/model/config_types.ts";
import { containerNote, dockerEnv } from "../minicluster/agent.ts";
import { fromContainerInfo, fromMesosUri, toContainerInfo, toTaskInfo } from "./mesos_convert.ts";
import type { TaskInfo } from "./protocol.ts";
import { makeSpec, withBackend } from "./_testing.ts";
import { loadReferenceSchema } from "./shape_check.ts";

const EXAMPLE = new URL("../../core/model/testdata/peloton/example/", import.meta.url);

/** The scheduler's ACCEPT call that launches `task` on offer `o`. */
function launchCall(task: TaskInfo): Record<string, unknown> {
  return {
    framework_id: { value: "f" },
    type: "ACCEPT",
    accept: { offer_ids: [{ value: "o" }], operations: [{ type: "LAUNCH", launch: { task_infos: [task] } }] },
  };
}

async function containerOf(file: string): Promise<ContainerInfo> {
  const loaded = loadJobConfig(await Deno.readTextFile(new URL(file, EXAMPLE)), file);
  assert.ok(loaded.ok, JSON.stringify(!loaded.ok && loaded.errors));
  return loaded.value.defaultConfig.container!;
}

Deno.test("Peloton's HelloWorld container goes to Mesos as a ContainerInfo in the proto's JSON names", async () => {
  const c = await containerOf("helloworld_job.yaml");
  const info = toContainerInfo(c);
  assert.deepEqual(info, {
    type: "DOCKER",
    docker: {
      image: "debian",
      parameters: [
        { key: "env", value: "MESSAGE=HelloWorld" },
        { key: "env", value: "SLEEP_SECONDS=300" },
      ],
    },
    volumes: [{ container_path: "/tmp", host_path: "/tmp", mode: "RW" }],
  });
  // The emulator checks every call against Mesos's shapes, unknown fields included.
  const schema = await loadReferenceSchema();
  const task = toTaskInfo(
    spec("j-0-1", "h", 1, { command: { shell: true, value: "echo $MESSAGE", arguments: [] }, container: c }),
  );
  assert.deepEqual(task.container, info, "the container goes with the task");
  assert.deepEqual(schema.check("Call", launchCall(task)), []);
  // Back in the emulator's agent: the same container, as the port has it.
  assert.deepEqual(fromContainerInfo(info), c);
});

Deno.test("a Mesos container: a numbered image type is named, a volume without a mode is read-write, keys are the proto's", () => {
  const c: ContainerInfo = {
    type: "MESOS",
    mesos: { image: { type: 2, docker: { name: "library/debian" }, cached: true } },
    volumes: [{ containerPath: "data", hostPath: "/var/lib/data" }],
    networkinfos: [{ name: "overlay", ipaddresses: [{ protocol: "IPv4" }] }],
  };
  assert.deepEqual(toContainerInfo(c), {
    type: "MESOS",
    mesos: { image: { type: "DOCKER", docker: { name: "library/debian" }, cached: true } },
    volumes: [{ container_path: "data", host_path: "/var/lib/data", mode: "RW" }],
    // Keys a Peloton file spells in lower case still reach Mesos by their proto names.
    network_infos: [{ name: "overlay", ip_addresses: [{ protocol: "IPv4" }] }],
  });
  assert.deepEqual(
    c.volumes,
    [{ containerPath: "data", hostPath: "/var/lib/data" }],
    "the config is not changed",
  );
});

Deno.test("the minicluster runs a container's command on the host: Docker env parameters become its environment", async () => {
  const c = await containerOf("helloworld_job.yaml");
  assert.deepEqual(dockerEnv(c), { MESSAGE: "HelloWorld", SLEEP_SECONDS: "300" });
  assert.deepEqual(
    dockerEnv({
      type: "DOCKER",
      docker: {
        image: "x",
        parameters: [{ key: "env", value: "A=b=c" }, { key: "e", value: "B=d" }, {
          key: "cpu-shares",
          value: "2",
        }],
      },
    }),
    { A: "b=c" },
  );
  assert.deepEqual(dockerEnv({ type: "MESOS" }), {});
  assert.equal(
    containerNote(c),
    "minicluster: no container runtime here: image debian is not used, the command runs on the host with the " +
      "container's env parameters",
  );
  assert.equal(
    containerNote({
      type: "MESOS",
      mesos: { image: { type: "DOCKER", docker: { name: "library/debian" } } },
    }),
    "minicluster: no container runtime here: image library/debian is not used, the command runs on the host",
  );
  assert.equal(containerNote(undefined), undefined);
});

Deno.test("a command's URIs and user go to Mesos in CommandInfo, in the proto's JSON names", async () => {
  const uris = [
    {
      value: "http://artifacts.example.com/app.tar.gz",
      extract: true,
      cache: true,
      outputFile: "app.tar.gz",
    },
    { value: "http://artifacts.example.com/run.sh", executable: true },
  ];
  const task = toTaskInfo(
    spec("j-0-1", "h", 1, {
      command: { shell: true, value: "./run.sh", arguments: [], uris, user: "peloton" },
    }),
  );
  assert.deepEqual(task.command?.uris, [
    {
      value: "http://artifacts.example.com/app.tar.gz",
      extract: true,
      cache: true,
      output_file: "app.tar.gz",
    },
    { value: "http://artifacts.example.com/run.sh", executable: true },
  ]);
  assert.equal(task.command?.user, "peloton");
  const schema = await loadReferenceSchema();
  assert.deepEqual(schema.check("Call", launchCall(task)), []);
  assert.deepEqual(task.command!.uris!.map(fromMesosUri), uris);
});

Deno.test("shell: false: a Docker task's arguments follow its executable; a Mesos task's are its whole argv", () => {
  const command = { shell: false, value: "nginx", arguments: ["-g", "daemon off;"] };
  const docker = toTaskInfo(
    spec("j-0-1", "h", 1, { command, container: { type: "DOCKER", docker: { image: "nginx" } } }),
  );
  // `docker run ... nginx nginx -g "daemon off;"`: the Docker containerizer puts `value` before them.
  assert.deepEqual(docker.command, {
    ...docker.command,
    shell: false,
    value: "nginx",
    arguments: ["-g", "daemon off;"],
  });
  // A custom executor's command runs in the executor's own container when the task has none.
  const executor = { type: "CUSTOM" as const, container: { type: "DOCKER", docker: { image: "nginx" } } };
  const underExecutor = toTaskInfo(spec("j-0-1", "h", 1, { command, executor }));
  assert.deepEqual(underExecutor.executor?.command?.arguments, ["-g", "daemon off;"]);
  for (const container of [undefined, { type: "MESOS" as const }]) {
    // `execvp("nginx", ["nginx", "-g", "daemon off;"])`.
    const task = toTaskInfo(spec("j-0-1", "h", 1, { command, container }));
    assert.deepEqual(task.command?.arguments, ["nginx", "-g", "daemon off;"], JSON.stringify(container));
  }
});

Deno.test("shell: false on the emulator: a Docker task and a Mesos one each run with the argv they were given", () =>
  withBackend(async ({ backend, rec, hosts }) => {
    const argv = ["printf", "<%s>", "x  y", "z"];
    const docker = makeSpec(hosts[0], argv, { container: { type: "DOCKER", docker: { image: "debian" } } });
    const mesos = makeSpec(hosts[1], argv);
    backend.launch([docker, mesos]);
    for (const s of [docker, mesos]) await rec.waitState(s.taskId, "TASK_FINISHED");
    assert.equal(await backend.logs(docker.taskId, "stdout"), "<x  y><z>");
    assert.equal(await backend.logs(mesos.taskId, "stdout"), "<x  y><z>");
  }));
