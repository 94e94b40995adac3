/** The invariant checkers on their own: the maintenance SLA check against a job manager driven by hand. */
import assert from "node:assert/strict";
import { DEFAULT_SLA } from "../core/testing/fixtures.ts";
import { JobmgrRig } from "../core/testing/jobmgr_rig.ts";
import { checkInvariants, InvariantError, MaintenanceSlaCheck } from "./invariants.ts";
import { runScenario, type Simulation } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

const ALL = [0, 1, 2, 3];

/** A running 4-instance service on h1, which goes into maintenance, and the check watching its kills. */
function service(maxUnavailable: number): { rig: JobmgrRig; check: MaintenanceSlaCheck } {
  const rig = new JobmgrRig();
  rig.create({
    type: "SERVICE",
    instanceCount: ALL.length,
    sla: { ...DEFAULT_SLA, maximumUnavailableInstances: maxUnavailable },
  });
  rig.launch(ALL);
  for (const i of ALL) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.jm.receive({
    kind: "host-inventory",
    full: false,
    hosts: [{ hostname: "h1", attributes: {}, state: "HOST_STATE_DRAINING" }],
  });
  rig.tick();
  return { rig, check: new MaintenanceSlaCheck(rig.jm.jobs) };
}

/** The resource manager drains these instances; the check sees the kills the job manager sends. */
function drain(rig: JobmgrRig, check: MaintenanceSlaCheck, instances: number[]): number[] {
  rig.placements(
    [],
    [],
    instances.map((i) => ({ taskId: rig.taskId(i), reason: "PREEMPTION_REASON_HOST_MAINTENANCE" })),
  );
  return kills(rig, check);
}

function kills(rig: JobmgrRig, check: MaintenanceSlaCheck): number[] {
  return rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => {
    check.observe(k, rig.ports.clock.now());
    return k.tasks.map((t) => Number(t.taskId.split("-").at(-2)));
  });
}

/** A drained instance ends, is placed on h2 and runs again there. */
function backElsewhere(rig: JobmgrRig, i: number): void {
  rig.status(rig.taskId(i), "TASK_KILLED");
  rig.launch([i], "h2");
  rig.status(rig.taskId(i), "TASK_RUNNING", { hostname: "h2" });
}

Deno.test("the maintenance SLA check follows each drained instance until it runs again", () => {
  const { rig, check } = service(1);
  assert.deepEqual(drain(rig, check, [0, 1, 2]), [0]);
  backElsewhere(rig, 0);
  // Instance 0 is back: the next drain is the only one down.
  assert.deepEqual(kills(rig, check), [1]);
  backElsewhere(rig, 1);
  assert.deepEqual(kills(rig, check), [2]);
  assert.equal(check.broken, undefined);
});

Deno.test("an instance drained while already down does not count against the SLA", () => {
  const { rig, check } = service(1);
  assert.deepEqual(drain(rig, check, [0]), [0], "the one instance the SLA lets go");
  // Unhealthy, 3 is down already: draining it takes nothing more away, so it goes too.
  rig.status(rig.taskId(3), "TASK_RUNNING", { healthy: false });
  assert.deepEqual(drain(rig, check, [2, 3]), [3]);
  assert.equal(check.broken, undefined);
});

Deno.test("a service that lost more instances to maintenance than its SLA allows fails the invariant check", () => {
  // A job manager that broke the SLA: the job had no limit when it was drained, and has one when checked.
  const { rig, check } = service(0);
  rig.placements(
    [],
    [],
    [0, 1, 2].map((i) => ({ taskId: rig.taskId(i), reason: "PREEMPTION_REASON_HOST_MAINTENANCE" as const })),
  );
  const sent = rig.transport.take("kill-tasks", "hostmgr");
  assert.deepEqual(sent.flatMap((k) => k.tasks.map((t) => Number(t.taskId.split("-").at(-2)))), [0, 1, 2]);
  const unlimited = new MaintenanceSlaCheck(rig.jm.jobs);
  for (const k of sent) unlimited.observe(k, 5_000);
  assert.equal(unlimited.broken, undefined, "no limit, nothing to break");

  const job = rig.job();
  job.config = { ...job.config, sla: { ...job.config.sla, maximumUnavailableInstances: 2 } };
  for (const k of sent) check.observe(k, 5_000);
  assert.equal(
    check.broken,
    `at 5 s job ${job.jobId} had 3 instances down for host maintenance (0, 1, 2), more than its ` +
      "sla.maximumUnavailableInstances (2)",
  );
  const sim = { maintenanceSla: check } as unknown as Simulation;
  assert.throws(() => checkInvariants(sim, 7), (e: Error) => {
    assert.ok(e instanceof InvariantError);
    assert.match(e.message, /had 3 instances down for host maintenance .* \(rerun with --seed 7\)$/);
    return true;
  });
});

Deno.test("revocable tasks on slack beside a full host's regular tasks break no invariant", async () => {
  // A service allocated 4 cpus uses 30% of them; the slack lets 2 revocable tasks in before the batch job
  // fills every allocatable cpu: 18 cpus of tasks on a 16-cpu host, as Mesos oversubscription allows.
  const sim = await runScenario(
    inlineScenario(`
name: slack
durationSec: 120
hostClasses:
  - { name: std, count: 2, cpu: 16, memoryMb: 65536, diskMb: 100000 }
respools:
  - name: a
    resources:
      - { kind: cpu, reservation: 16, limit: 32 }
      - { kind: memory, reservation: 65536, limit: 131072 }
      - { kind: disk, reservation: 0, limit: 0 }
      - { kind: gpu, reservation: 0, limit: 0 }
  - name: b
    resources:
      - { kind: cpu, reservation: 16, limit: 32 }
      - { kind: memory, reservation: 65536, limit: 131072 }
      - { kind: disk, reservation: 0, limit: 0 }
      - { kind: gpu, reservation: 0, limit: 0 }
workloads:
  - { name: svc, respool: /b, type: stateless, instances: 1, cpu: 4, cpuUsage: 0.3 }
  - { name: rev, respool: /a, arrival: { at: [30] }, instances: 2, revocable: true, cpu: 1 }
  - { name: fill, respool: /a, arrival: { at: [60] }, instances: 28, cpu: 1 }
`),
    { seed: 1, checkInvariants: true },
  );
  const usage = [...sim.cluster.usageByHost().values()];
  assert.equal(usage.reduce((n, u) => n + u.revocableCpuMilli, 0), 2_000, "both revocable tasks run");
  assert.ok(
    usage.some((u) => u.cpuMilli + u.revocableCpuMilli > 16_000),
    "a host runs more cpu of tasks than it has, on slack",
  );
});
