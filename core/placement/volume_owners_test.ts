/** A pinned task's host filter names its instance, so the host manager gives it its idle volume's reservation. */
import assert from "node:assert/strict";
import { makeRmTask } from "../testing/fixtures.ts";
import { engineRig, lease } from "./testing.ts";

Deno.test("host filters of tasks pinned to a host carry their `<jobId>-<instanceId>`; others none", () => {
  const { gangs, hosts } = engineRig();
  gangs(
    { tasks: [makeRmTask({ jobId: "j", instanceId: 3, requiredHost: "h1" })] },
    { tasks: [makeRmTask({ jobId: "j", instanceId: 4, requiredHost: "h1" })] },
    { tasks: [makeRmTask({ jobId: "k", instanceId: 0 })] },
  );
  const filters = hosts([lease("h1")]);
  const pinned = filters.filter((f) => f.requiredHost === "h1");
  assert.deepEqual(pinned.flatMap((f) => f.volumeOwners ?? []).sort(), ["j-3", "j-4"]);
  assert.ok(filters.filter((f) => f.requiredHost === undefined).every((f) => f.volumeOwners === undefined));
});
