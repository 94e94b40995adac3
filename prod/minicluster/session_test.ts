/** `resolveProgram`: the file execvp would run, or an error saying why there is none. */
import { deepStrictEqual as assertEquals, rejects } from "node:assert/strict";
import { resolveProgram, resolveProgramSync } from "./_session.ts";

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
