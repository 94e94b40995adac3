/** An auth file's problems are listed together, each naming its field; an unknown key with a did-you-mean. */
import assert from "node:assert/strict";
import { BasicAuth } from "./basic_auth.ts";

async function loadError(text: string): Promise<string> {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(file, text);
    await assert.rejects(BasicAuth.load(file));
    return await BasicAuth.load(file).then(() => "", (e) => (e as Error).message.replace(file, "FILE"));
  } finally {
    await Deno.remove(file);
  }
}

Deno.test("an auth file lists every problem, naming each field and a misspelt key's meaning", async () => {
  const text = [
    "users:",
    "  - username: root",
    "    password: rootpw",
    "    role: root",
    "  - username: ops",
    "    password: opspw",
    "    roles: ops",
    "roles:",
    "  - role: root",
    "    accept: ['*']",
    "internal_users: root",
    "",
  ].join("\n");
  assert.equal(
    await loadError(text),
    [
      "Cannot load auth config FILE: 3 problems:",
      "  users.1.role: missing, expected text",
      "  users.1.roles: unknown key; did you mean role? (known keys: username, password, role)",
      "  internal_users: unknown key; did you mean internal_user? (known keys: users, roles, internal_user)",
    ].join("\n"),
  );
});

Deno.test("an empty auth file, or one of the wrong shape, says what it expected", async () => {
  assert.equal(
    await loadError(""),
    "Cannot load auth config FILE: the file is empty; expected users:, roles: and internal_user:",
  );
  assert.equal(
    await loadError("users: root\nroles: []\ninternal_user: root\n"),
    'Cannot load auth config FILE: users: got "root", expected a list',
  );
});
