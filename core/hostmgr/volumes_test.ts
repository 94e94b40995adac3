/** Deleted volumes reach the backend with their host's agent, as kills do. */
import assert from "node:assert/strict";
import { hostmgrRig } from "./testing.ts";

Deno.test("destroy-volumes goes to the backend with each host's agent; a lost host's last, an unknown one's none", () => {
  const { hm, backend } = hostmgrRig([["h1"], ["h2"]]);
  backend.emit({ kind: "host-lost", hostname: "h2", agentId: "agent-h2", reason: "gone" });
  hm.receive({
    kind: "destroy-volumes",
    volumes: [
      { volumeId: "j-0-volume", hostname: "h1" },
      { volumeId: "j-1-volume", hostname: "h2" },
      { volumeId: "j-2-volume", hostname: "h9" },
    ],
  });
  assert.deepEqual(backend.destroyed, [[
    { volumeId: "j-0-volume", hostname: "h1", agentId: "agent-h1" },
    { volumeId: "j-1-volume", hostname: "h2", agentId: "agent-h2" },
    { volumeId: "j-2-volume", hostname: "h9", agentId: "" },
  ]]);
});

Deno.test("remove-sandboxes goes to a backend that removes sandboxes; one that does not is left alone", () => {
  const { hm, backend } = hostmgrRig([["h1"]]);
  hm.receive({ kind: "remove-sandboxes", jobIds: ["j"] });
  const removed: string[][] = [];
  Object.assign(backend, { removeSandboxes: (jobIds: string[]) => removed.push(jobIds) });
  hm.receive({ kind: "remove-sandboxes", jobIds: ["j1", "j2"] });
  assert.deepEqual(removed, [["j1", "j2"]]);
});
