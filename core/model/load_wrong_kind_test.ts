/** A file of another kind given to a loader is named for what it is, not read field by field as the wrong one. */
import assert from "node:assert/strict";
import {
  detectConfigKind,
  loadJobConfig,
  loadRespoolConfig,
  type LoadResult,
  loadStatelessSpec,
} from "./load.ts";

const FIXTURES = new URL("./testdata/peloton/", import.meta.url);

function yamlFiles(rel: string): string[] {
  return [...Deno.readDirSync(new URL(rel, FIXTURES))].flatMap((e) =>
    e.isDirectory ? yamlFiles(`${rel}${e.name}/`) : e.name.endsWith(".yaml") ? [`${rel}${e.name}`] : []
  ).sort();
}

const FILES = ["example/", "tests/integration/", "pkg/jobmgr/job/config/testdata/", "pkg/cli/testdata/"]
  .flatMap(yamlFiles).map((rel) => ({ rel, text: Deno.readTextFileSync(new URL(rel, FIXTURES)) }));
const ofKind = (kind: string) => FILES.filter((f) => detectConfigKind(f.text) === kind);

/** The one error of a refused load, with no warning beside it. */
function refusal(r: LoadResult<unknown>, rel: string) {
  assert.ok(!r.ok, `${rel} was accepted`);
  assert.equal(r.errors.length, 1, `${rel}:\n${r.errors.map((e) => e.message).join("\n")}`);
  assert.deepEqual(r.warnings.map((w) => w.message), [], rel);
  return r.errors[0];
}

Deno.test("a v1alpha JobSpec read as a v0 job config is named for what it is", () => {
  const specs = ofKind("stateless-spec");
  assert.ok(specs.length >= 20, `only ${specs.length} specs`);
  for (const { rel, text } of specs) {
    const e = refusal(loadJobConfig(text, rel), rel);
    assert.equal(e.fileKind, "stateless-spec", rel);
    assert.equal(e.path.toLowerCase().replace("_", ""), "defaultspec", rel);
    assert.match(
      e.message,
      new RegExp(
        `^${rel}:\\d+: ${e.path}: expected a v0 job config \\(defaultConfig, instanceCount, \\.\\.\\.\\); ` +
          "this file is a v1alpha JobSpec \\(it has defaultSpec\\)$",
      ),
    );
  }
  const rel = "tests/integration/test_configs/test_update_stateless_job_spec.yaml";
  assert.ok(specs.some((s) => s.rel === rel));
});

Deno.test("a v0 job config read as a v1alpha JobSpec is named for what it is, by defaultConfig or type", () => {
  const jobs = ofKind("job").filter((j) => !/^taskConfig:/m.test(j.text));
  assert.ok(jobs.length >= 40, `only ${jobs.length} jobs`);
  for (const { rel, text } of jobs) {
    const e = refusal(loadStatelessSpec(text, rel), rel);
    assert.equal(e.fileKind, "job", rel);
    assert.match(
      e.message,
      new RegExp(
        `^${rel}:\\d+: ${e.path}: expected a v1alpha JobSpec \\(defaultSpec, ` +
          "instanceCount, \\.\\.\\.\\); this file is a v0 job config \\(it has (defaultConfig|type: \\w+)\\)$",
      ),
    );
  }
  const service = "name: s\ntype: SERVICE\ninstanceCount: 2\n";
  assert.deepEqual(
    refusal(loadStatelessSpec(service, "s.yaml"), "s.yaml").message,
    "s.yaml:2: type: expected a v1alpha JobSpec (defaultSpec, instanceCount, ...); this file is a v0 job " +
      "config (it has type: SERVICE)",
  );
});

Deno.test("a resource pool config read as a job config is named for what it is", () => {
  const pools = ofKind("respool");
  assert.ok(pools.length >= 8, `only ${pools.length} pools`);
  for (const { rel, text } of pools) {
    const e = refusal(loadJobConfig(text, rel), rel);
    assert.equal(e.fileKind, "respool", rel);
    assert.match(
      e.message,
      new RegExp(
        `^${rel}:\\d+: resources: expected a v0 job config \\(defaultConfig, instanceCount, \\.\\.\\.\\); ` +
          "this file is a resource pool config \\(it has resources of kind, reservation, limit and share\\)$",
      ),
    );
  }
});

Deno.test("the shapes are told conservatively: a file of both, or of neither, is read as asked", () => {
  // A spec that also has defaultConfig is not called a JobConfig: its keys are reported one by one.
  const both =
    "instanceCount: 1\ndefaultSpec:\n  containers: [{entrypoint: {value: x}}]\ndefaultConfig: {}\n";
  const spec = loadStatelessSpec(both, "b.yaml");
  assert.ok(spec.ok);
  assert.match(spec.warnings[0].message, /defaultConfig: unknown key, ignored/);
  // A job with its own `resources` key and an instance count is a job with an unknown key.
  const job =
    "instanceCount: 1\nresources: [{kind: cpu, reservation: 1}]\ndefaultConfig: {command: {value: x}}\n";
  const loaded = loadJobConfig(job, "j.yaml");
  assert.ok(loaded.ok);
  assert.match(loaded.warnings[0].message, /resources: unknown key, ignored/);
  // A list of something else under resources is not a pool's.
  const other = loadJobConfig("resources: [{cpu: 1}]\n", "o.yaml");
  assert.ok(!other.ok);
  assert.ok(other.errors.every((e) => e.fileKind === undefined));
  // A respool file given to the respool loader is read as one, of course.
  assert.ok(
    loadRespoolConfig("name: p\nresources: [{kind: cpu, reservation: 1, limit: 1, share: 1}]\n", "p").ok,
  );
  // A patch (read without the rules) is not judged whole: its keys are what count.
  assert.ok(loadStatelessSpec("type: SERVICE\ninstanceCount: 3\n", "p.yaml", { validate: false }).ok);
});

Deno.test("a DAEMON job's instanceCount is said to be ignored, as an unknown key is", () => {
  const text = "name: d\ntype: DAEMON\ninstanceCount: 5\ndefaultConfig:\n  command: {value: x}\n";
  const r = loadJobConfig(text, "d.yaml");
  assert.ok(r.ok);
  assert.deepEqual(r.warnings.map((w) => w.message), [
    "d.yaml:3: instanceCount: ignored for a DAEMON job (its instances follow its hosts: one on each UP host " +
    "its constraint matches)",
  ]);
  assert.deepEqual(loadJobConfig(text.replace("instanceCount: 5\n", ""), "d.yaml").warnings, []);
  assert.deepEqual(loadJobConfig(text.replace("DAEMON", "SERVICE"), "d.yaml").warnings, []);
});
