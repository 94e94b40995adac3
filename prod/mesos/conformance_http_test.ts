/** Mesos's `scheduler_http_api_tests.cpp` as black-box HTTP tests: emulator always, MESOS_MASTER_URL when set. */
import assert from "node:assert/strict";
import { conformance } from "./_conformance.ts";
import { frameworkInfo, RawSubscription } from "./_testing.ts";
import { CONTENT_TYPE_JSON, SCHEDULER_PATH, STREAM_ID_HEADER } from "./protocol.ts";

const JSON_HEADERS = { "content-type": CONTENT_TYPE_JSON, accept: CONTENT_TYPE_JSON };
const SUBSCRIBE = { type: "SUBSCRIBE", subscribe: { framework_info: frameworkInfo() } };

conformance("SchedulerHttpApiTest.AuthenticationRequired", async (t) => {
  const res = await fetch(t.url + SCHEDULER_PATH, { method: "POST" });
  await res.body?.cancel();
  assert.equal(res.status, 401);
  assert.match(res.headers.get("www-authenticate") ?? "", /Basic/);
}, { emulatorOnly: true, master: { credentials: [{ principal: "peloton", secret: "s3cret" }] } });

conformance("SchedulerHttpApiTest.NoContentType", async (t) => {
  const res = await fetch(t.url + SCHEDULER_PATH, { method: "POST" });
  assert.equal(res.status, 400, await res.text());
});

conformance("SchedulerHttpApiTest.ValidJsonButInvalidProtobuf", async (t) => {
  const r = await t.session.raw({ string: "valid_json" }, JSON_HEADERS);
  assert.equal(r.status, 400, r.body);
});

conformance("SchedulerHttpApiTest.MalformedContent", async (t) => {
  const res = await fetch(t.url + SCHEDULER_PATH, {
    method: "POST",
    headers: JSON_HEADERS,
    body: "MALFORMED_CONTENT",
  });
  assert.equal(res.status, 400, await res.text());
});

conformance("SchedulerHttpApiTest.UnsupportedContentMediaType", async (t) => {
  const r = await t.session.raw(SUBSCRIBE, {
    "content-type": "application/unknown-media-type",
    accept: CONTENT_TYPE_JSON,
  });
  assert.equal(r.status, 415, r.body);
  // The master compares the Content-Type exactly, so a charset parameter is unsupported too.
  const charset = await t.session.raw(SUBSCRIBE, { "content-type": "application/json; charset=utf-8" });
  assert.equal(charset.status, 415, charset.body);
});

conformance("SchedulerHttpApiTest.Subscribe", async (t) => {
  const sub = await RawSubscription.open(t.url, SUBSCRIBE);
  t.session.subs.push(sub);
  assert.equal(sub.response.status, 200);
  assert.equal(sub.response.headers.get("content-type"), CONTENT_TYPE_JSON);
  assert.equal(sub.response.headers.get("transfer-encoding"), "chunked");
  assert.ok(sub.streamId.length > 0 && sub.streamId.length <= 128, "Mesos-Stream-Id");
  const subscribed = await sub.next();
  assert.equal(subscribed?.type, "SUBSCRIBED");
  const id = subscribed.type === "SUBSCRIBED" ? subscribed.subscribed.framework_id.value : "";
  assert.notEqual(id, "");
  t.session.frameworks.set(id, sub.streamId);
  assert.equal((await sub.nextOf("HEARTBEAT")).type, "HEARTBEAT");
  const before = Date.now();
  await sub.nextOf("HEARTBEAT", t.heartbeatMs * 3);
  assert.ok(Date.now() - before >= t.heartbeatMs * 0.5, "the second heartbeat comes an interval later");
});

conformance("SchedulerHttpApiTest.RejectFrameworkWithInvalidRole", async (t) => {
  const call = {
    type: "SUBSCRIBE",
    subscribe: { framework_info: frameworkInfo({ roles: ["/test/test1"] }) },
  };
  const sub = await RawSubscription.open(t.url, call);
  t.session.subs.push(sub);
  assert.equal(sub.response.status, 200);
  const event = await sub.next();
  assert.equal(event?.type, "ERROR");
  assert.equal(await sub.next(), undefined, "the stream ends after the ERROR");
});

conformance("SchedulerHttpApiTest.SubscribeWithStreamId", async (t) => {
  const r = await t.session.raw(
    SUBSCRIBE,
    { ...JSON_HEADERS, [STREAM_ID_HEADER]: crypto.randomUUID() },
    false,
  );
  assert.equal(r.status, 400, r.body);
});

conformance("SchedulerHttpApiTest.SubscribedOnRetry", async (t) => {
  const first = await t.session.subscribe();
  const again = await t.session.subscribe(frameworkInfo(), first.frameworkId);
  assert.equal(again.frameworkId, first.frameworkId);
  assert.notEqual(again.streamId, first.streamId);
  await again.sub.nextOf("HEARTBEAT");
  // The earlier connection learns that it was replaced, then ends.
  const error = await first.sub.nextOf("ERROR");
  assert.equal(error.error.message, "Framework failed over");
});

Deno.test({
  name: "SchedulerHttpApiTest.UpdatePidToHttpScheduler (not applicable: no libprocess PID schedulers here)",
  ignore: true,
  fn() {},
});

conformance("SchedulerHttpApiTest.NotAcceptable", async (t) => {
  const r = await t.session.raw(SUBSCRIBE, { "content-type": CONTENT_TYPE_JSON, accept: "foo" }, false);
  assert.equal(r.status, 406, r.body);
});

conformance("SchedulerHttpApiTest.NoAcceptHeader", async (t) => {
  const sub = await RawSubscription.open(t.url, SUBSCRIBE, { "content-type": CONTENT_TYPE_JSON });
  t.session.subs.push(sub);
  assert.equal(sub.response.status, 200);
  assert.equal(sub.response.headers.get("content-type"), CONTENT_TYPE_JSON);
  const e = await sub.nextOf("SUBSCRIBED");
  t.session.frameworks.set(e.subscribed.framework_id.value, sub.streamId);
});

conformance("SchedulerHttpApiTest.DefaultAccept", async (t) => {
  const sub = await RawSubscription.open(t.url, SUBSCRIBE, {
    "content-type": CONTENT_TYPE_JSON,
    accept: "*/*",
  });
  t.session.subs.push(sub);
  assert.equal(sub.response.status, 200);
  assert.equal(sub.response.headers.get("content-type"), CONTENT_TYPE_JSON);
  const e = await sub.nextOf("SUBSCRIBED");
  t.session.frameworks.set(e.subscribed.framework_id.value, sub.streamId);
});

conformance("SchedulerHttpApiTest.GetRequest", async (t) => {
  const res = await fetch(t.url + SCHEDULER_PATH);
  await res.body?.cancel();
  assert.equal(res.status, 405);
});

conformance("SchedulerHttpApiTest.TeardownWithoutStreamId", async (t) => {
  const { frameworkId } = await t.session.subscribe();
  const r = await t.session.call(frameworkId, undefined, { type: "TEARDOWN" });
  assert.equal(r.status, 400, r.body);
});

conformance("SchedulerHttpApiTest.TeardownWrongStreamId", async (t) => {
  const first = await t.session.subscribe();
  const second = await t.session.subscribe(frameworkInfo(), first.frameworkId);
  assert.notEqual(first.streamId, second.streamId);
  const r = await t.session.call(first.frameworkId, first.streamId, { type: "TEARDOWN" });
  assert.equal(r.status, 400, r.body);
  const ok = await t.session.call(first.frameworkId, second.streamId, { type: "TEARDOWN" });
  assert.equal(ok.status, 202, ok.body);
  t.session.frameworks.delete(first.frameworkId);
});

conformance("SchedulerHttpApiTest.MalformedUUID", async (t) => {
  const { frameworkId, streamId, sub } = await t.session.subscribe();
  const offer = (await sub.nextOf("OFFERS")).offers.offers[0];
  const ack = (uuid: string) => ({
    type: "ACKNOWLEDGE",
    acknowledge: { agent_id: offer.agent_id, task_id: { value: "task-1" }, uuid },
  });
  const bad = await t.session.call(frameworkId, streamId, ack(btoa("not-16-bytes")), true);
  assert.equal(bad.status, 400, bad.body);
  // A well-formed uuid for an unknown update is accepted and ignored.
  const good = await t.session.call(frameworkId, streamId, ack(btoa("0123456789abcdef")));
  assert.equal(good.status, 202, good.body);
});

// ---- the rest of the status-code ladder in the notes (§1.1), in the master's order ----

conformance("master ladder: a call of type UNKNOWN is valid, then 501 Not Implemented", async (t) => {
  const { frameworkId, streamId } = await t.session.subscribe();
  const r = await t.session.call(frameworkId, streamId, { type: "UNKNOWN" }, true);
  assert.equal(r.status, 501, r.body);
  // Like every other call, it needs a framework id first (a 400 from validation, not a 501).
  const noFw = await t.session.raw({ type: "UNKNOWN" }, { "content-type": CONTENT_TYPE_JSON });
  assert.equal(noFw.status, 400, noFw.body);
  assert.match(noFw.body, /framework_id/);
});

conformance(
  "master ladder: non-SUBSCRIBE calls need a known, connected framework and its stream id",
  async (t) => {
    const unknown = await t.session.call("no-such-framework", "x", { type: "REVIVE", revive: {} });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body, /Framework cannot be found/);
    const { frameworkId, streamId, sub } = await t.session.subscribe(
      frameworkInfo({ failover_timeout: 3600 }),
    );
    const noFw = await t.session.raw({ type: "REVIVE", revive: {} }, { "content-type": CONTENT_TYPE_JSON });
    assert.equal(noFw.status, 400);
    assert.match(noFw.body, /framework_id/);
    await sub.close();
    await waitDisconnected(t.url, frameworkId, streamId);
    const gone = await t.session.call(frameworkId, streamId, { type: "REVIVE", revive: {} });
    assert.equal(gone.status, 403, gone.body);
    assert.match(gone.body, /not subscribed/);
  },
  { emulatorOnly: true },
);

async function waitDisconnected(url: string, frameworkId: string, streamId: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(url + SCHEDULER_PATH, {
      method: "POST",
      headers: { "content-type": CONTENT_TYPE_JSON, [STREAM_ID_HEADER]: streamId },
      body: JSON.stringify({
        framework_id: { value: frameworkId },
        type: "REQUEST",
        request: { requests: [] },
      }),
    });
    await res.body?.cancel();
    if (res.status === 403) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("the master never noticed the closed subscription");
}

conformance("master ladder: validation answers 400 with the master's messages", async (t) => {
  const { frameworkId, streamId } = await t.session.subscribe();
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ type: "ACCEPT" }, /Expecting 'accept' to be present/],
    [{ type: "NO_SUCH_CALL" }, /Expecting 'type' to be present/],
    [{ type: "KILL", kill: {} }, /Not initialized: kill\.task_id/],
    [{ type: "RECONCILE" }, /Expecting 'reconcile' to be present/],
    [{ type: "KILL", kill: { task_id: "t" } }, /Failed to convert JSON into Call protobuf/],
  ];
  for (const [call, pattern] of cases) {
    const r = await t.session.call(frameworkId, streamId, call, true);
    assert.equal(r.status, 400, JSON.stringify(call));
    assert.match(r.body, pattern);
  }
  const mismatch = {
    framework_id: { value: "a" },
    type: "SUBSCRIBE",
    subscribe: { framework_info: frameworkInfo({ id: { value: "b" } }) },
  };
  const r = await t.session.raw(mismatch, JSON_HEADERS);
  assert.equal(r.status, 400);
  assert.match(r.body, /differs from 'subscribe\.framework_info\.id'/);
  const missingUser = await t.session.raw(
    { type: "SUBSCRIBE", subscribe: { framework_info: { name: "x" } } },
    JSON_HEADERS,
  );
  assert.equal(missingUser.status, 400);
  assert.match(missingUser.body, /Not initialized: subscribe\.framework_info\.user/);
});

conformance(
  "master ladder: a non-leader redirects (307, protocol-relative) and a leaderless master answers 503",
  async (t) => {
    t.emu!.master.setLeader("leader.example:5050");
    const redirect = await t.session.raw(SUBSCRIBE, JSON_HEADERS, false);
    assert.equal(redirect.status, 307);
    assert.equal(redirect.headers.get("location"), "//leader.example:5050/api/v1/scheduler");
    t.emu!.master.setLeader(null);
    const none = await t.session.raw(SUBSCRIBE, JSON_HEADERS, false);
    assert.equal(none.status, 503);
    assert.match(none.body, /No leader elected/);
    t.emu!.master.setLeader(undefined);
    // The leader check comes before the method check.
    t.emu!.master.setLeader("leader.example:5050");
    const get = await fetch(t.url + SCHEDULER_PATH, { redirect: "manual" });
    await get.body?.cancel();
    assert.equal(get.status, 307);
    t.emu!.master.setLeader(undefined);
  },
  { emulatorOnly: true },
);

conformance("master ladder: a recovering master answers 503 until recovery ends", async (t) => {
  t.emu!.master.restart({ keepState: true, recoveryMs: 200 });
  const r = await t.session.raw(SUBSCRIBE, JSON_HEADERS, false);
  assert.equal(r.status, 503);
  assert.match(r.body, /Master has not finished recovery/);
  await new Promise((res) => setTimeout(res, 250));
  await t.session.subscribe();
}, { emulatorOnly: true });
