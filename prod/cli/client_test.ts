/** The CLI's API client against a fake server: yarpc's error replies, the older JSON ones, and its own deadline. */
import assert from "node:assert/strict";
import { rpcError } from "../daemons/http_errors.ts";
import { ApiError, PelotonClient } from "./client.ts";
import { credentialsOf } from "../auth/basic_auth.ts";
import { runCli } from "./main.ts";

/** Runs `fn` against a server answering every call with `handler`. */
async function withServer(
  handler: (req: Request) => Response | Promise<Response>,
  fn: (url: string) => Promise<void>,
) {
  const ac = new AbortController();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen() {} }, handler);
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`);
  } finally {
    ac.abort();
    await server.finished;
  }
}

async function refusal(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (e) {
    assert.ok(e instanceof ApiError, String(e));
    return e;
  }
  throw new Error("the call was not refused");
}

Deno.test("an error reply in yarpc's form gives its code and message; the older JSON body is read too", async () => {
  const replies = [
    () => rpcError("invalid-argument", "invalid job configuration version"),
    () => Response.json({ code: "unauthenticated", message: "no credentials" }, { status: 401 }),
  ];
  let n = 0;
  await withServer(() => replies[n++](), async (url) => {
    const client = new PelotonClient({ url });
    const stale = await refusal(client.call("peloton.api.v0.update.svc.UpdateService::CreateUpdate"));
    assert.deepEqual([stale.code, stale.detail], ["invalid-argument", "invalid job configuration version"]);
    const old = await refusal(client.call("peloton.api.job.JobManager::Get"));
    assert.equal(old.code, "unauthenticated");
    assert.match(old.detail, /^no credentials \(give credentials with --basic-auth-config FILE/);
  });
});

Deno.test("a call with no answer within its own deadline is deadline-exceeded, not unavailable (which says retry)", async () => {
  const never = Promise.withResolvers<void>();
  await withServer(async () => {
    await never.promise;
    return new Response("{}");
  }, async (url) => {
    const client = new PelotonClient({ url, timeoutMs: 50 });
    const late = await refusal(client.call("peloton.api.job.JobManager::Get"));
    never.resolve();
    assert.equal(late.code, "deadline-exceeded", late.message);
  });
});

Deno.test("a deadline that passes while the answer's body is still coming is deadline-exceeded too", async () => {
  const never = Promise.withResolvers<void>();
  await withServer(() => {
    // The headers at once, the body never whole.
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"job": '));
      },
      pull: () => never.promise,
    });
    return new Response(body, { headers: { "content-type": "application/json" } });
  }, async (url) => {
    const client = new PelotonClient({ url, timeoutMs: 100 });
    const late = await refusal(client.call("peloton.api.job.JobManager::Get"));
    never.resolve();
    assert.equal(late.code, "deadline-exceeded", late.message);
    assert.match(late.message, /within 100 ms/);
  });
});

Deno.test("credentials go as UTF-8 (RFC 7617): a password of any script, from flags, the environment or a file", async () => {
  const seen: (string | null)[] = [];
  await withServer((req) => {
    seen.push(req.headers.get("authorization"));
    return rpcError("not-found", "no such job");
  }, async (url) => {
    const run = async (argv: string[], env: Record<string, string> = {}) => {
      const err: string[] = [];
      const code = await runCli([...argv, "job", "get", "x", "-m", url], {
        out: () => {},
        err: (l) => err.push(l),
        env: (n) => env[n],
      });
      assert.equal(code, 1, err.join("\n"));
      assert.doesNotMatch(err.join("\n"), /unavailable|cannot reach/);
      const header = seen.at(-1);
      assert.ok(header);
      return credentialsOf(new Headers({ authorization: header }));
    };
    assert.deepEqual(await run([], { PELOTON_USERNAME: "李", PELOTON_PASSWORD: "密码" }), {
      username: "李",
      password: "密码",
    });
    assert.deepEqual(await run(["--username", "anna", "--password", "pässwörd"]), {
      username: "anna",
      password: "pässwörd",
    });
    const utf8 = new TextEncoder().encode("anna:pässwörd");
    assert.equal(seen.at(-1), `Basic ${btoa(String.fromCharCode(...utf8))}`, "as curl -u sends it");
    // A file's values are the text written, as Peloton's Go client reads them: 0123 is not 123.
    const file = await Deno.makeTempFile({ suffix: ".yaml" });
    try {
      for (const password of ["0123", "1e3", "0x1F", "12345678901234567890", "yes"]) {
        await Deno.writeTextFile(file, `username: 42\npassword: ${password}\n`);
        assert.deepEqual(await run(["--basic-auth-config", file]), { username: "42", password });
      }
    } finally {
      await Deno.remove(file);
    }
  });
});

Deno.test("every call and stream asks for the extension fields (Peloton-Extensions: true), which the CLI reads", async () => {
  const seen: (string | null)[] = [];
  await withServer((req) => {
    seen.push(req.headers.get("peloton-extensions"));
    return Response.json({});
  }, async (url) => {
    const client = new PelotonClient({ url });
    await client.call("peloton.api.job.JobManager::Get", {});
    for await (const _ of client.stream("peloton.api.v1alpha.watch.svc.WatchService::Watch", {})) break;
  });
  assert.deepEqual(seen, ["true", "true"]);
});

Deno.test("credentials come whole from the first source giving any: flags, then the file, then the environment", async () => {
  const seen: (string | null)[] = [];
  await withServer((req) => {
    seen.push(req.headers.get("authorization"));
    return rpcError("not-found", "no such job");
  }, async (url) => {
    const dir = await Deno.makeTempDir();
    const alice = `${dir}/alice.yaml`, half = `${dir}/half.yaml`, typo = `${dir}/typo.yaml`;
    await Deno.writeTextFile(alice, "username: alice\npassword: alicepw\n");
    await Deno.writeTextFile(half, "username: carol\n");
    await Deno.writeTextFile(typo, "username: dave\npasword: davepw\n");
    const run = async (argv: string[], env: Record<string, string> = {}) => {
      const err: string[] = [];
      const before = seen.length;
      const code = await runCli([...argv, "job", "get", "x", "-m", url], {
        out: () => {},
        err: (l) => err.push(l),
        env: (n) => env[n],
      });
      const header = seen.length > before ? seen.at(-1) : undefined;
      const sent = header ? credentialsOf(new Headers({ authorization: header })) : undefined;
      return { code, err: err.join("\n"), sent };
    };
    try {
      const bob = { PELOTON_USERNAME: "bob", PELOTON_PASSWORD: "bobpw" };
      const file = await run(["--basic-auth-config", alice], { PELOTON_USERNAME: "bob" });
      assert.deepEqual(file.sent, { username: "alice", password: "alicepw" }, file.err);
      const fileOverEnv = await run(["--basic-auth-config", alice], bob);
      assert.deepEqual(fileOverEnv.sent, { username: "alice", password: "alicepw" }, fileOverEnv.err);
      // $BASIC_AUTH_CONFIG is the file's flag's default, as in Peloton's CLI (kingpin's Envar).
      const envFile = await run([], { BASIC_AUTH_CONFIG: alice, ...bob });
      assert.deepEqual(envFile.sent, { username: "alice", password: "alicepw" }, envFile.err);
      const flags = await run(
        ["--username", "anna", "--password", "annapw", "--basic-auth-config", alice],
        bob,
      );
      assert.deepEqual(flags.sent, { username: "anna", password: "annapw" }, flags.err);
      assert.equal(flags.err.match(/--password is visible to other users/g)?.length, 1, flags.err);
      assert.match(flags.err, /--basic-auth-config FILE.*\$BASIC_AUTH_CONFIG.*\$PELOTON_PASSWORD/);
      const env = await run([], bob);
      assert.deepEqual(env.sent, { username: "bob", password: "bobpw" }, env.err);
      assert.doesNotMatch(env.err, /visible/);

      const refused: { argv: string[]; env: Record<string, string>; why: RegExp }[] = [
        { argv: ["--username", "anna"], env: bob, why: /--username is given without --password/ },
        { argv: ["--password", "annapw"], env: bob, why: /--password is given without --username/ },
        { argv: ["--basic-auth-config", half], env: bob, why: new RegExp(`${half}: password: missing`) },
        {
          argv: [],
          env: { PELOTON_USERNAME: "bob" },
          why: /\$PELOTON_USERNAME is set without \$PELOTON_PASSWORD/,
        },
        {
          argv: ["--basic-auth-config", typo],
          env: {},
          why: new RegExp(
            `${typo}: pasword: unknown key; did you mean password\\? \\(known keys: username, password\\)`,
          ),
        },
      ];
      for (const r of refused) {
        const got = await run(r.argv, r.env);
        assert.equal(got.code, 2, `${r.argv.join(" ")}: ${got.err}`);
        assert.match(got.err, r.why);
        assert.equal(got.sent, undefined, "nothing sent");
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});

Deno.test("a 401 says how to give credentials, the file first", async () => {
  await withServer(
    () => Response.json({ code: "unauthenticated", message: "credentials are required" }, { status: 401 }),
    async (url) => {
      const e = await refusal(new PelotonClient({ url }).call("peloton.api.job.JobManager::Get"));
      assert.match(e.detail, /--basic-auth-config FILE/);
      assert.match(e.detail, /PELOTON_USERNAME\/PELOTON_PASSWORD/);
    },
  );
});

Deno.test("-t is how long a call waits: a server that never answers is given up on at it, and said so", async () => {
  // Accepts connections, reads nothing, answers nothing.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) conns.push(conn);
  })();
  const url = `http://127.0.0.1:${listener.addr.port}`;
  try {
    const cases: [string[], string][] = [
      [["job", "get", "j"], "peloton.api.job.JobManager::Get"],
      [["watch", "pod", "j"], "peloton.api.v1alpha.watch.svc.WatchService::Watch"],
    ];
    for (const [argv, procedure] of cases) {
      const err: string[] = [];
      const started = performance.now();
      const code = await runCli([...argv, "-t", "1s", "-m", url], {
        out: () => {},
        err: (l) => err.push(l),
        env: () => undefined,
      });
      const took = performance.now() - started;
      assert.equal(code, 1);
      assert.deepEqual(err, [
        `peloton ${
          argv.slice(0, 2).join(" ")
        }: ${procedure}: deadline-exceeded: no answer from ${url} within 1000 ms`,
      ]);
      assert.ok(took >= 1000 && took < 1400, `${argv.join(" ")} -t 1s gave up after ${Math.round(took)} ms`);
    }
  } finally {
    listener.close();
    await accepting.catch(() => {});
    for (const c of conns) c.close();
  }
});
