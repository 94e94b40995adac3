/** What the shipped scenarios' comments tell planners to read agrees with the scenario and the report. */
import assert from "node:assert/strict";
import { REJECT } from "../core/hostmgr/acquire.ts";
import { loadScenarioFile } from "./scenario_load.ts";
import { headline } from "./stats.ts";
import { ROOT } from "./testing.ts";

/** A scenario's leading comment, its lines joined. */
async function comment(file: string): Promise<string> {
  const text = await Deno.readTextFile(`${ROOT}/scenarios/${file}`);
  return text.split("\n").filter((l) => l.startsWith("#")).map((l) => l.replace(/^# ?/, "")).join(" ");
}

Deno.test("revocable-slack's comment gives the traffic spike the usage event's level", async () => {
  const { scenario } = await loadScenarioFile(`${ROOT}/scenarios/revocable-slack.yaml`);
  const spike = scenario.events.find((e) => e.usage)!;
  const text = await comment("revocable-slack.yaml");
  assert.match(
    text,
    new RegExp(`At ${spike.atSec} s the services' traffic rises ${spike.usage!.level}-fold`),
  );
  assert.doesNotMatch(text, /triples|doubles/, "a multiple the event does not make");
});

Deno.test("gpu-training's comment quotes a failure reason as the report counts it", async () => {
  const text = await comment("gpu-training.yaml");
  // CPU work on GPU hosts kept for GPU work: the engine's reason, and its headline in placementFailures.
  const counted = headline(`no host fits: ${REJECT.gpuKept} on 500 hosts, insufficient cpu on 12 hosts`);
  assert.ok(text.includes(`"${counted}"`), `the comment quotes "${counted}"`);
});
