/** A job file workload's tasks get the load-time warnings a workload of the scenario's own fields gets. */
import assert from "node:assert/strict";
import { loadScenarioFile } from "./scenario_load.ts";

const SCENARIO = `name: s
durationSec: 60
hostClasses:
  - {name: std, count: 3, cpu: 4, memoryMb: 8192, diskMb: 20480, racks: 3}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 12, limit: 12}
      - {kind: memory, reservation: 6144, limit: 6144}
      - {kind: disk, reservation: 0, limit: 20480}
workloads:
  - {name: big, respool: /p, jobFile: jobs/big.yaml}
  - {name: cons, respool: /p, jobFile: jobs/cons.yaml}
  - {name: synth, respool: /p, cpu: 8, memoryMb: 100, durationSec: 10}
  - {name: mixed, respool: /p, jobFile: jobs/mixed.yaml}
  - {name: gang, respool: /p, jobFile: jobs/gang.yaml}
  - {name: rev, respool: /p, jobFile: jobs/rev.yaml}
  - {name: fits, respool: /p, jobFile: jobs/fits.yaml}
`;

const label = (key: string, value: string) =>
  `{type: LABEL_CONSTRAINT, labelConstraint: {kind: HOST, condition: EQUAL, label: {key: ${key}, value: ${value}}, ` +
  "requirement: 1}}";

const JOBS: Record<string, string> = {
  // Too big for every host, its instanceConfig.0 taking the default's resources.
  big: `name: big
instanceCount: 3
defaultConfig:
  resource: {cpuLimit: 8, memLimitMb: 100}
  command: {value: "sleep 10"}
instanceConfig:
  0: {name: first}
`,
  // Peloton's key style; pinned to a host of the minicluster, which the simulator names otherwise.
  cons: `name: cons
instancecount: 1
defaultconfig:
  resource: {cpulimit: 1, memlimitmb: 100}
  constraint:
    type: LABEL_CONSTRAINT
    labelconstraint: {kind: HOST, condition: CONDITION_EQUAL, label: {key: hostname, value: agent-1}, requirement: 1}
  command: {value: "sleep 10"}
`,
  // Instance 0 runs the default (over the pool's memory limit), 2 is too big for any host, 3 has an AND of
  // an OR no host meets; 1 is fine.
  mixed: `name: mixed
instanceCount: 4
defaultConfig:
  resource: {cpuLimit: 1, memLimitMb: 7000}
  command: {value: "sleep 10"}
instanceConfig:
  1:
    resource: {cpuLimit: 1, memLimitMb: 100}
  2:
    resource: {cpuLimit: 16, memLimitMb: 100}
  3:
    resource: {cpuLimit: 1, memLimitMb: 100}
    constraint:
      type: AND_CONSTRAINT
      andConstraint:
        constraints:
          - ${label("host_pool", "default")}
          - {type: OR_CONSTRAINT, orConstraint: {constraints: [${label("rack", "r9")}, ${
    label("zone", "z9")
  }]}}
`,
  // A gang of 4 tasks of 4 cores: each fits, all four are more than the pool's 12.
  gang: `name: gang
instanceCount: 5
sla: {minimumRunningInstances: 4}
defaultConfig:
  resource: {cpuLimit: 4, memLimitMb: 100}
  command: {value: "sleep 10"}
`,
  // Revocable: its memory is over the pool's slack limit (20% of 6144).
  rev: `name: rev
instanceCount: 1
sla: {revocable: true, preemptible: true}
defaultConfig:
  resource: {cpuLimit: 1, memLimitMb: 2000}
  command: {value: "sleep 10"}
`,
  // On a host the simulator has: no warning.
  fits: `name: fits
instanceCount: 2
defaultConfig:
  resource: {cpuLimit: 4, memLimitMb: 100}
  constraint: ${label("hostname", "std-2")}
  command: {value: "sleep 10"}
`,
};

Deno.test("a job file's tasks are warned of as the scenario's own workloads are, at the job file's field", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/s.yaml`, SCENARIO);
    await Deno.mkdir(`${dir}/jobs`);
    for (const [name, text] of Object.entries(JOBS)) {
      await Deno.writeTextFile(`${dir}/jobs/${name}.yaml`, text);
    }
    const { warnings } = await loadScenarioFile(`${dir}/s.yaml`);
    const at = (line: number, i: number, job: string) =>
      `${dir}/s.yaml:${line}: workloads[${i}].jobFile: ${dir}/jobs/${job}.yaml`;
    const never = ": none of them will ever be placed";
    const waits = ": the resource manager will admit none of them, and they will wait for the whole run";
    assert.deepEqual(warnings, [
      // Host sizes.
      `${
        at(12, 0, "big")
      }: defaultConfig.resource.cpuLimit: every task of big asks for 8 cores, more than any ` +
      `host class has (4 at most)${never}`,
      `${dir}/s.yaml:14: workloads[2].cpu: every task of synth asks for at least 8 cores, more than any host ` +
      `class has (4 at most)${never}`,
      `${at(15, 3, "mixed")}: instanceConfig.2.resource.cpuLimit: instance 2 of each mixed job asks for 16 ` +
      `cores, more than any host class has (4 at most)${never}`,
      // Constraints.
      `${
        at(13, 1, "cons")
      }: defaultConfig.constraint: every task of cons needs a host where hostname=agent-1, ` +
      "which no host class has (std: hosts std-0 … std-2; the simulator names a class's hosts <class>-0, " +
      `<class>-1, …)${never}`,
      `${at(15, 3, "mixed")}: instanceConfig.3.constraint: instance 3 of each mixed job needs a host where ` +
      "(host_pool=default and (rack=r9 or zone=z9)), which no host class has (std: host_pool=default, " +
      `rack=std-rack-0, rack=std-rack-1, rack=std-rack-2, no zone)${never}`,
      // The pool's limits, and its slack limit for revocable work.
      `${at(15, 3, "mixed")}: instanceConfig.2.resource.cpuLimit: instance 2 of each mixed job asks for 16 ` +
      `cores, more than /p can ever hold (its cpu limit is 12)${waits}`,
      `${
        at(15, 3, "mixed")
      }: defaultConfig.resource.memLimitMb: instance 0 of each mixed job asks for 7000 ` +
      `MB, more than /p can ever hold (its memory limit is 6144)${waits}`,
      `${
        at(17, 5, "rev")
      }: defaultConfig.resource.memLimitMb: every task of rev asks for 2000 MB, more than ` +
      `/p can ever hold of revocable work (its memory slack limit is 1228.8: 20% of its reservation of ` +
      `6144)${waits}`,
      // The gang below sla.minimumRunningInstances.
      `${at(16, 4, "gang")}: sla.minimumRunningInstances: every gang of gang has 4 tasks, which ask for 16 ` +
      "cores, more than /p can ever hold (its cpu limit is 12): a gang is admitted whole or not at all, so " +
      "the resource manager will admit none of them, and they will wait for the whole run",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
