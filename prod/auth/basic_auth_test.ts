/** Peloton's basic-auth files, as they are: users, default user, roles, accept and reject rules. */
import assert from "node:assert/strict";
import { authorizeCall, BasicAuth, credentialsOf } from "./basic_auth.ts";

const DIR = new URL("./testdata/", import.meta.url).pathname;
const STATELESS = "peloton.api.v1alpha.job.stateless.svc.JobService";

Deno.test("security_example.yaml: the default user reads, admin manages, peloton may do anything", async () => {
  const auth = await BasicAuth.load(`${DIR}security_example.yaml`);
  const anon = undefined;
  assert.deepEqual(auth.check(anon, [`${STATELESS}::GetJob`]), { ok: true, user: "" });
  assert.equal(auth.check(anon, [`${STATELESS}::GetJobCache`]).ok, false, "rejected explicitly");
  const create = auth.check(anon, [`${STATELESS}::CreateJob`]);
  assert.deepEqual(create, {
    ok: false,
    status: 401,
    message: `calls without credentials may not call ${STATELESS}::CreateJob`,
  });
  const admin = { username: "admin", password: "password2" };
  assert.equal(auth.check(admin, [`${STATELESS}::CreateJob`]).ok, true);
  const v0 = auth.check(admin, [
    "peloton.api.job.JobManager::Create",
    "peloton.api.v0.job.JobManager::Create",
  ]);
  assert.deepEqual(v0, {
    ok: false,
    status: 403,
    message: "user admin may not call peloton.api.job.JobManager::Create",
  });
  assert.equal(auth.check({ username: "peloton", password: "password1" }, ["any.Service::Thing"]).ok, true);
  assert.deepEqual(auth.check({ username: "peloton", password: "nope" }, ["x::Y"]), {
    ok: false,
    status: 401,
    message: "invalid Username/Password combination",
  });
  assert.deepEqual(auth.internal, { username: "peloton", password: "password1" });
});

Deno.test("test_basic_auth_config.yaml: the internal user, and credentials by header", async () => {
  const auth = await BasicAuth.load(`${DIR}test_basic_auth_config.yaml`);
  assert.deepEqual(auth.internal, { username: "user2", password: "password2" });
  assert.equal(auth.check(undefined, [`${STATELESS}::ReplaceJob`]).ok, true, "role3 is the default");
  const basic = new Headers({ authorization: `Basic ${btoa("user1:password1")}` });
  assert.deepEqual(credentialsOf(basic), { username: "user1", password: "password1" });
  const peloton = new Headers({ username: "user1", password: "password1" });
  assert.deepEqual(credentialsOf(peloton), { username: "user1", password: "password1" });
  const denied = authorizeCall(auth, basic, `${STATELESS}::ReplaceJob`, `${STATELESS}::ReplaceJob`);
  assert.equal(denied?.status, 403);
  assert.equal(authorizeCall(auth, basic, `${STATELESS}::GetJob`, `${STATELESS}::GetJob`), undefined);
  const none = authorizeCall(
    auth,
    new Headers(),
    "peloton.api.job.JobManager::Create",
    "peloton.api.job.JobManager::Create",
  );
  assert.equal(none?.status, 401);
  assert.equal(none?.headers.get("www-authenticate"), 'Basic realm="peloton"');
});

Deno.test("a bad auth file names the problem", async () => {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(file, "users:\n- username: a\n  password: b\n  role: missing\nroles: []\n");
    await assert.rejects(BasicAuth.load(file), /user a has undefined role missing/);
    await Deno.writeTextFile(file, "users: []\nroles:\n- role: r\n  accept: ['no colon']\n");
    await assert.rejects(BasicAuth.load(file), /rule "no colon" has an unexpected format/);
    await Deno.writeTextFile(file, "users: []\nroles: []\ninternal_user: ghost\n");
    await assert.rejects(BasicAuth.load(file), /internal_user ghost is not defined/);
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("a procedure no daemon serves is still authenticated and authorized, under the name it was sent by", async () => {
  const auth = await BasicAuth.load(`${DIR}security_example.yaml`);
  const watch = "peloton.api.v1alpha.watch.svc.WatchService::Watch";
  const as = (user?: string, password?: string) =>
    new Headers(user ? { authorization: `Basic ${btoa(`${user}:${password}`)}` } : {});
  assert.equal(authorizeCall(auth, as(), watch, undefined)?.status, 401, "the default user may not");
  assert.equal(authorizeCall(auth, as("peloton", "nope"), watch, undefined)?.status, 401);
  assert.equal(authorizeCall(auth, as("admin", "password2"), watch, undefined), undefined, "admin may");
  assert.equal(authorizeCall(auth, as("admin", "password2"), "Not.Served.Thing", undefined)?.status, 403);
  assert.equal(authorizeCall(auth, as("peloton", "password1"), "Not.Served.Thing", undefined), undefined);
  // No procedure at all: only who the caller is is checked.
  assert.equal(authorizeCall(auth, as(), "", undefined), undefined, "the default user");
  assert.equal(authorizeCall(auth, as("peloton", "nope"), "", undefined)?.status, 401);
});
