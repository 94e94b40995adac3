/** Peloton's basic-auth files, as they are: users, default user, roles, accept and reject rules. */
import assert from "node:assert/strict";
import {
  authorizeCall,
  BasicAuth,
  basicHeader,
  credentialsOf,
  endpointProcedure,
  procedureAliases,
} from "./basic_auth.ts";
import { routeProcedure } from "../../core/api/procedures.ts";

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
  assert.equal(none?.headers.get("www-authenticate"), 'Basic realm="peloton", charset="UTF-8"');
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

/** An auth file written for one test; removed after it. */
async function withAuthFile(text: string, f: (auth: BasicAuth, file: string) => Promise<void> | void) {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(file, text);
    await f(await BasicAuth.load(file), file);
  } finally {
    await Deno.remove(file);
  }
}

const ROOT_USER = "  - username: root\n    password: rootpw\n    role: root\n";
const ROOT_ROLE = "  - role: root\n    accept: ['*']\n";

Deno.test("an auth file must name its internal_user: without one the daemons' messages would need no credentials", async () => {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(file, `users:\n${ROOT_USER}roles:\n${ROOT_ROLE}`);
    await assert.rejects(
      BasicAuth.load(file),
      new RegExp(`^Error: Cannot load auth config ${file}: internal_user: missing; name the user`),
    );
    await Deno.writeTextFile(file, `users:\n${ROOT_USER}roles:\n${ROOT_ROLE}internal_user: ""\n`);
    await assert.rejects(BasicAuth.load(file), /internal_user: missing/);
  } finally {
    await Deno.remove(file);
  }
  await withAuthFile(`users:\n${ROOT_USER}roles:\n${ROOT_ROLE}internal_user: root\n`, (auth) => {
    assert.equal(auth.isInternal(undefined), false, "no credentials");
    assert.equal(auth.isInternal({ username: "", password: "" }), false);
    assert.equal(auth.isInternal({ username: "root", password: "nope" }), false);
    assert.equal(auth.isInternal({ username: "root", password: "rootpw" }), true);
  });
});

const OPS_FILE = `users:
${ROOT_USER}  - username: ops
    password: opspw
    role: ops
  - username: reader
    password: readerpw
    role: reader
roles:
${ROOT_ROLE}  - role: ops
    accept: ['*']
    reject:
      - peloton.api.v0.job.JobManager:Delete
      - peloton.api.v0.task.TaskManager:BrowseSandbox
      - peloton.api.v0.host.svc.HostService:StartMaintenance
  - role: reader
    accept:
      - peloton.api.v0.job.JobManager:Get
internal_user: root
`;

Deno.test("a reject rule holds under every name a procedure goes by; an accept rule under any of them", async () => {
  await withAuthFile(OPS_FILE, (auth) => {
    const as = (user: string, password: string) =>
      new Headers({ authorization: `Basic ${btoa(`${user}:${password}`)}` });
    const ops = as("ops", "opspw"), reader = as("reader", "readerpw");
    // As process.ts and server.ts check a call: the name sent, and the procedure it routes to.
    const call = (headers: Headers, sent: string) =>
      authorizeCall(auth, headers, sent, routeProcedure(sent)?.procedure)?.status;
    const names = (service: string, short: string, method: string, v0?: string) =>
      [service, short, ...(v0 ? [v0] : [])].flatMap((s) => [`${s}::${method}`, `${s}.${method}`]);
    const rejected = [
      ...names("peloton.api.job.JobManager", "JobManager", "Delete", "peloton.api.v0.job.JobManager"),
      ...names(
        "peloton.api.task.TaskManager",
        "TaskManager",
        "BrowseSandbox",
        "peloton.api.v0.task.TaskManager",
      ),
      ...names("peloton.api.v0.host.svc.HostService", "HostService", "StartMaintenance"),
    ];
    assert.deepEqual(rejected.filter((p) => call(ops, p) !== 403), [], "refused under every name");
    assert.equal(call(as("root", "rootpw"), "JobManager::Delete"), undefined, "root may");
    // The role's other calls go on, under any name; a rule naming v0 accepts the call however it is sent.
    const others = names("peloton.api.job.JobManager", "JobManager", "Get", "peloton.api.v0.job.JobManager");
    assert.deepEqual(others.filter((p) => call(ops, p) !== undefined), []);
    assert.deepEqual(others.filter((p) => call(reader, p) !== undefined), []);
    assert.equal(call(reader, "JobManager::Delete"), 403);
    assert.deepEqual(procedureAliases("peloton.api.job.JobManager::Get"), [
      "peloton.api.job.JobManager::Get",
      "peloton.api.v0.job.JobManager::Get",
      "JobManager::Get",
    ]);
    // A sandbox file counts as BrowseSandbox, whose reject rule names its v0 name.
    const sandbox = endpointProcedure("/sandbox/task-0-1/stdout")!;
    assert.equal(authorizeCall(auth, ops, sandbox, sandbox)?.status, 403);
    assert.equal(authorizeCall(auth, as("root", "rootpw"), sandbox, sandbox), undefined);
    const refused = authorizeCall(auth, ops, "JobManager.Delete", "peloton.api.job.JobManager::Delete");
    assert.equal(refused?.status, 403);
  });
});

Deno.test("credentials are UTF-8 both ways (RFC 7617), as browsers, curl and the CLI send them", async () => {
  const users = [["anna", "pässwörd"], ["李", "密码"], ["emoji", "🔑:key"]];
  const text = `users:\n${ROOT_USER}${
    users.map(([u, p]) => `  - username: ${u}\n    password: "${p}"\n    role: root\n`).join("")
  }roles:\n${ROOT_ROLE}internal_user: root\n`;
  await withAuthFile(text, (auth) => {
    const utf8 = (s: string) => btoa(String.fromCharCode(...new TextEncoder().encode(s)));
    for (const [username, password] of users) {
      const header = basicHeader({ username, password });
      assert.equal(header, `Basic ${utf8(`${username}:${password}`)}`, "as curl -u sends it");
      const creds = credentialsOf(new Headers({ authorization: header }));
      assert.deepEqual(creds, { username, password });
      assert.deepEqual(auth.check(creds, ["x::Y"]), { ok: true, user: username });
    }
    // Peloton's own headers carry the same bytes, which arrive one a character.
    const bytes = (t: string) => String.fromCharCode(...new TextEncoder().encode(t));
    const peloton = credentialsOf(new Headers({ username: bytes("李"), password: bytes("密码") }));
    assert.deepEqual(peloton, { username: "李", password: "密码" });
    // A Latin-1 client (bytes that are not UTF-8) is still understood.
    const latin1 = credentialsOf(new Headers({ authorization: `Basic ${btoa("anna:pässwörd")}` }));
    assert.deepEqual(latin1, { username: "anna", password: "pässwörd" });
    const challenge = authorizeCall(auth, new Headers(), "x::Y", undefined)?.headers.get("www-authenticate");
    assert.equal(challenge, 'Basic realm="peloton", charset="UTF-8"');
  });
});

Deno.test("a password that looks like a number is the text written in the file", async () => {
  const passwords = ["0123", "1e3", "0x1F", "12345678901234567890", "yes", "1_000", "0o17", "1:20", ".inf"];
  const text = `users:\n${ROOT_USER}${
    passwords.map((p, i) => `  - username: u${i}\n    password: ${p}\n    role: root\n`).join("")
  }  - username: 42\n    password: 007\n    role: root\nroles:\n${ROOT_ROLE}internal_user: root\n`;
  await withAuthFile(text, (auth) => {
    for (const [i, password] of passwords.entries()) {
      assert.equal(auth.check({ username: `u${i}`, password }, ["x::Y"]).ok, true, password);
    }
    assert.equal(auth.check({ username: "u0", password: "123" }, ["x::Y"]).ok, false, "not the number");
    assert.equal(auth.check({ username: "u1", password: "1000" }, ["x::Y"]).ok, false);
    assert.equal(auth.check({ username: "u2", password: "31" }, ["x::Y"]).ok, false);
    assert.equal(
      auth.check({ username: "42", password: "007" }, ["x::Y"]).ok,
      true,
      "a number as a username",
    );
  });
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(file, `users:\n${ROOT_USER}    password: other\nroles:\n${ROOT_ROLE}`);
    await assert.rejects(BasicAuth.load(file), /line 5: key "password" is given twice/);
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("a malformed Authorization header is 401 saying what is wrong, never the default user", async () => {
  // security_example.yaml has a default user, who may call GetJob without credentials.
  const auth = await BasicAuth.load(`${DIR}security_example.yaml`);
  const getJob = `${STATELESS}::GetJob`;
  assert.equal(authorizeCall(auth, new Headers(), getJob, getJob), undefined, "no header: the default user");
  const malformed = [
    { authorization: "Basic !!!notb64", why: /Authorization header: Basic credentials are not base64/ },
    { authorization: `Basic ${btoa("alice")}`, why: /Authorization header: Basic credentials have no ":"/ },
    { authorization: "Basic", why: /Authorization header: Basic credentials are missing/ },
    { authorization: "Basic ", why: /Authorization header: Basic credentials are missing/ },
    { authorization: "Bearer abc.def", why: /Authorization header: the scheme is "Bearer", expected Basic/ },
    { authorization: "garbage", why: /Authorization header: the scheme is "garbage", expected Basic/ },
  ];
  for (const { authorization, why } of malformed) {
    const headers = new Headers({ authorization });
    assert.equal(credentialsOf(headers), undefined, authorization);
    const refused = authorizeCall(auth, headers, getJob, getJob);
    assert.equal(refused?.status, 401, authorization);
    const message = await refused!.text();
    assert.match(message, why, `${authorization}: ${message}`);
    assert.doesNotMatch(message, /notb64|abc\.def/, "the token is not echoed");
    assert.equal(refused!.headers.get("www-authenticate"), 'Basic realm="peloton", charset="UTF-8"');
    // Peloton's own headers beside it do not make up for it.
    const both = new Headers({ authorization, username: "peloton", password: "password1" });
    assert.equal(authorizeCall(auth, both, getJob, getJob)?.status, 401, `${authorization} with headers`);
  }
  // An empty user and password is well formed: the default user, as none.
  assert.equal(
    authorizeCall(auth, new Headers({ authorization: `Basic ${btoa(":")}` }), getJob, getJob),
    undefined,
  );
  assert.equal(
    authorizeCall(
      auth,
      new Headers({ authorization: `basic ${btoa("peloton:password1")}` }),
      "x::Y",
      undefined,
    ),
    undefined,
  );
});
