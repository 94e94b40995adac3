/** A MySQL store URL's password never shows in a message, whatever it holds; the URL's parsing and options. */
import assert from "node:assert/strict";
import { ensureMysqlDatabase, mysqlUrlOptions, parseMysqlUrl, redact } from "./mysql_dialect.ts";

/** Passwords a URL parser splits at the last `@`, or that make it fail, each with a part to look for. */
const ODD = [
  { url: "mysql://root:Se/cretPART2@127.0.0.1:3306/xj_a", secret: "cretPART2" },
  { url: "mysql://root:Se@cretPART2@127.0.0.1:3306/bad-name", secret: "cretPART2" },
  { url: "mysql://root:Se:cretPART2@127.0.0.1:3306/bad-name", secret: "cretPART2" },
  { url: "mysql://root:Se%40cret%2FPART2@127.0.0.1:3306/bad-name", secret: "PART2" },
  { url: "mysql://root:Se?cretPART2@127.0.0.1:3306/xj_a", secret: "cretPART2" },
  { url: "mysql://root:Se#cretPART2@127.0.0.1:3306/xj_a", secret: "cretPART2" },
  { url: "mysql://:SecretPART2@127.0.0.1:3306/bad-name", secret: "SecretPART2" },
  { url: "mysql://root:SecretPART2@127.0.0.1:3306/xj_a?bogus=1", secret: "SecretPART2" },
  { url: "mysql://root:SecretPART2@127.0.0.1:3306/xj_a?connectTimeout=x", secret: "SecretPART2" },
  { url: "mysql://root:Se/cret@PART2@127.0.0.1:3306/xj_a?connectTimeout=5", secret: "PART2" },
];

Deno.test("redact hides the whole password, up to the last @ before the host", () => {
  assert.equal(redact("mysql://root:pw@h:3306/db"), "mysql://root:***@h:3306/db");
  assert.equal(redact("mysql://root:Se/cret@PART2@h:3306/db"), "mysql://root:***@h:3306/db");
  assert.equal(redact("mysql://root:Se@cret:PART2@h/db"), "mysql://root:***@h/db");
  assert.equal(redact("mysql://ro%3Aot:p%40w@h/db"), "mysql://ro%3Aot:***@h/db");
  assert.equal(redact("mysql://:pw@h/db"), "mysql://:***@h/db", "no user");
  assert.equal(redact("mysql://root@h/db"), "mysql://root@h/db", "no password");
  assert.equal(redact("mysql://h/db"), "mysql://h/db", "no user, no password");
  assert.equal(redact("MySQL://root:pw@h/db"), "MySQL://root:***@h/db", "any scheme, any case");
  assert.equal(redact("postgres://u:p@w@h/db"), "postgres://u:***@h/db");
  assert.equal(redact("sqlite:/tmp/a@b:c"), "sqlite:/tmp/a@b:c", "not a URL with an authority");
});

Deno.test("parsing and options errors of odd passwords never show them", () => {
  for (const { url, secret } of ODD) {
    for (const step of [parseMysqlUrl, mysqlUrlOptions]) {
      let message = "(no error)";
      try {
        step(url);
      } catch (e) {
        message = (e as Error).message;
      }
      assert.doesNotMatch(message, new RegExp(secret), `${step.name}(${url}): ${message}`);
    }
  }
});

Deno.test("an odd password parses whole", () => {
  const t = parseMysqlUrl("mysql://root:Se@cret%2FPART2@127.0.0.1:3306/xk_a");
  assert.equal(t.password, "Se@cret/PART2");
  assert.equal(t.user, "root");
  assert.equal(t.host, "127.0.0.1");
  assert.equal(parseMysqlUrl("mysql://127.0.0.1/xk_a").password, "");
});

Deno.test("a server that refuses the password does not show it", async () => {
  let message = "(no error)";
  try {
    await ensureMysqlDatabase({
      host: "127.0.0.1",
      port: 3306,
      user: "xk_nobody",
      password: "SecretPART2",
      database: "xk_a",
    });
  } catch (e) {
    message = (e as Error).message;
  }
  assert.match(message, /^Cannot connect to MySQL as xk_nobody@127\.0\.0\.1:3306: /);
  assert.doesNotMatch(message, /SecretPART2/);
});
