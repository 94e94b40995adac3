/**
 * A job summary's `owner` (v0 Query, v1alpha QueryJobs, ListJobs and GetJob with summaryOnly): the config's
 * owner, or else the owning team, as Peloton's summaries fill it from its job index's owner column.
 */
import assert from "node:assert/strict";
import { JobmgrRig } from "../testing/jobmgr_rig.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

type Body = Record<string, unknown>;
type Summary = { name: string; owner: string; owningTeam: string };

const TEAM_ONLY = "11111111-2222-4333-8444-000000000001";
const BOTH = "11111111-2222-4333-8444-000000000002";

async function answer(rig: JobmgrRig, call: () => void): Promise<Body> {
  call();
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return reply.body as Body;
}

const owners = (summaries: Summary[]) =>
  summaries.map((s) => [s.name, s.owner, s.owningTeam]).sort((a, b) => a[0].localeCompare(b[0]));

Deno.test("a summary's owner is the config's owner, else the owning team: v0 Query, QueryJobs, ListJobs, GetJob", async () => {
  const rig = new JobmgrRig();
  rig.create({ name: "a-team-only", owner: "", owningTeam: "teamG" }, TEAM_ONLY);
  rig.create({ name: "b-both", owner: "alice", owningTeam: "teamH" }, BOTH);
  rig.store.settle();
  const want = [["a-team-only", "teamG", "teamG"], ["b-both", "alice", "teamH"]];
  const v0 = await answer(rig, () => rig.api("job", "Query", { spec: {}, summaryOnly: true }));
  assert.deepEqual(owners(v0.results as Summary[]), want, "v0 Query");
  const query = await answer(rig, () => rig.call(STATELESS_SERVICE, "QueryJobs", { spec: {} }));
  assert.deepEqual(owners(query.records as Summary[]), want, "QueryJobs");
  const list = await answer(rig, () => rig.call(STATELESS_SERVICE, "ListJobs", {}));
  assert.deepEqual(owners(list.jobs as Summary[]), want, "ListJobs");
  const get = await answer(
    rig,
    () => rig.call(STATELESS_SERVICE, "GetJob", { jobId: { value: TEAM_ONLY }, summaryOnly: true }),
  );
  assert.deepEqual(owners([get.summary as Summary]), [want[0]], "GetJob summaryOnly");
});
