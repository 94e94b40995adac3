/**
 * The web UI's layout with names as long as Peloton allows and without a space (a job's name is up to 512
 * characters): they wrap, so a page stays as wide as the window and the figures beside them stay in view.
 */
import assert from "node:assert/strict";
import { launchChromium } from "../../tools/chromium_testing.ts";
import { cli, createDefaultPool, ROOT, startUp } from "../testing.ts";
import { batchJobYaml } from "../testing_cluster.ts";

Deno.test({
  name:
    "web UI: a job and a pool with very long names keep the jobs, job and pools views as wide as the window",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-ui-layout-" });
    const [up, browser] = await Promise.all([
      startUp(dir, ["--agents", "1"]),
      launchChromium("lay out the UI"),
    ]);
    try {
      await createDefaultPool(up.url);
      const name = `L${"o".repeat(500)}ngEnd`;
      await Deno.writeTextFile(`${dir}/long.yaml`, batchJobYaml(name, 1, "sleep 30"));
      const job = await cli(up.url, "job", "create", "/DefaultResPool", `${dir}/long.yaml`);
      assert.equal(job.code, 0, job.err);
      const jobId = /^Job (\S+) created$/.exec(job.out)![1];
      const pool = `P${"o".repeat(250)}l`;
      const poolYaml = (await Deno.readTextFile(`${ROOT}/scenarios/jobs/default_respool.yaml`))
        .replace("name: DefaultResPool", `name: ${pool}`);
      await Deno.writeTextFile(`${dir}/pool.yaml`, poolYaml);
      const created = await cli(up.url, "respool", "create", `/${pool}`, `${dir}/pool.yaml`);
      assert.equal(created.code, 0, created.err);

      const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
      const widths = async (view: string, ready: string) => {
        await page.goto(`${up.url}/ui/#/${view}`, { waitUntil: "load" });
        await page.locator(ready).first().waitFor({ timeout: 10_000 });
        return await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]") as number[];
      };
      for (
        const [view, ready] of [
          ["jobs", `table.jobs tbody tr:has-text("ngEnd")`],
          [`jobs/${jobId}`, `h2:has-text("ngEnd")`],
          ["pools", `td.pool:has-text("${pool.slice(-20)}")`],
        ]
      ) {
        const [scroll, inner] = await widths(view, ready);
        assert.ok(scroll <= inner, `#/${view} is ${scroll} px wide in a ${inner} px window`);
      }
    } finally {
      await browser.close();
      await up.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
