/** `resolveProgram`: the file execvp would run, or an error saying why there is none; `signalGroup`'s guard. */
import { deepStrictEqual as assertEquals, rejects, throws } from "node:assert/strict";
import { resolveProgram, resolveProgramSync, signalGroup } from "./_session.ts";

Deno.test("signalGroup refuses pid 0, 1 and non-integers: kill(0) would signal the caller's own group", () => {
  // SIGCONT, so that without the guard this test's own group (the test runner) is signalled harmlessly.
  for (const pgid of [0, -0, 1, -5, Number.NaN, 2.5]) {
    throws(() => signalGroup(pgid, "SIGCONT", true), { name: "RangeError" }, `pgid ${pgid}`);
  }
});

Deno.test("a program that cannot run says why: missing, not executable, or a directory", async () => {
  const dir = await Deno.makeTempDir({ prefix: "session_test_" });
  try {
    await Deno.writeTextFile(`${dir}/data`, "not a program\n");
    await Deno.mkdir(`${dir}/bin`);
    await Deno.writeTextFile(`${dir}/bin/tool`, "#!/bin/sh\n");
    const cases: [string, string | undefined, string][] = [
      [`${dir}/data`, undefined, `program "${dir}/data" is not executable`],
      [`${dir}/bin`, undefined, `program "${dir}/bin" is a directory`],
      ["tool", `${dir}/bin`, `program "tool" (${dir}/bin/tool) is not executable`],
      [`${dir}/missing`, undefined, `program "${dir}/missing" was not found`],
      ["missing-4711", `${dir}/bin`, 'program "missing-4711" was not found on PATH'],
    ];
    for (const [program, path, message] of cases) {
      await rejects(() => resolveProgram(program, dir, path), { message });
      let sync: string | undefined;
      try {
        resolveProgramSync(program, dir, path);
      } catch (e) {
        sync = (e as Error).message;
      }
      assertEquals(sync, message);
    }
    await Deno.chmod(`${dir}/bin/tool`, 0o755);
    assertEquals(await resolveProgram("tool", dir, `${dir}/bin`), `${dir}/bin/tool`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
