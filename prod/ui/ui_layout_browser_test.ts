/**
 * The web UI's layout with names as long as Peloton allows and without a space (a job's name is up to 512
 * characters): they wrap, so a page stays as wide as the window and the figures beside them stay in view; a
 * table wider than the window scrolls in its own box. Nothing else is cut: states, goals, pool paths and
 * buttons keep each word on one line, at a desktop's width as at 800 px.
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
      /** The texts of what `selector` finds that take more than one line: a word cut, a label wrapped. */
      const wrapped = (selector: string) =>
        page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})].filter((el) => {
          const lines = new Set();
          const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
          for (let n = walk.nextNode(); n; n = walk.nextNode()) {
            const range = document.createRange();
            range.selectNodeContents(n);
            for (const r of range.getClientRects()) if (r.width > 0) lines.add(Math.round(r.top));
          }
          return lines.size > 1;
        }).map((el) => el.textContent)`) as Promise<string[]>;
      const whole = {
        jobs: "table.jobs td:nth-child(3), table.jobs .badge, table.jobs td:nth-child(5), table.jobs .path",
        [`jobs/${jobId}`]: "button.action, table.tasks .badge, table.tasks td:nth-child(4), " +
          "table.tasks td:nth-child(5), button.details-toggle",
        pools: "table.pools td:not(.pool)",
        hosts: "button.action, table.hosts .badge, table.hosts .path, table.hosts td:nth-child(6)",
      } as Record<string, string>;
      for (
        const [view, ready, width] of [
          ["jobs", `table.jobs tbody tr:has-text("ngEnd")`, 1000],
          [`jobs/${jobId}`, `table.tasks tbody tr .badge`, 1000],
          ["pools", `td.pool:has-text("${pool.slice(-20)}")`, 1000],
          ["jobs", `table.jobs tbody tr:has-text("ngEnd")`, 800],
          ["hosts", "table.hosts button.action", 800],
        ] as const
      ) {
        await page.setViewportSize({ width, height: 800 });
        const [scroll, inner] = await widths(view, ready);
        assert.ok(scroll <= inner, `#/${view} is ${scroll} px wide in a ${inner} px window`);
        assert.deepEqual(await wrapped(whole[view]), [], `#/${view} at ${width} px: cut or wrapped`);
      }
      // The hosts table is wider than 800 px: it scrolls in its own box, the page does not. Read off the box
      // in the page as it stands (the 3 s refresh replaces the view; a replaced box measures 0).
      const box = await (await page.waitForFunction(`(() => {
        const b = document.querySelector(".table-scroll:has(table.hosts)");
        return b && b.clientWidth > 0 ? [b.scrollWidth, b.clientWidth] : null;
      })()`)).jsonValue() as number[];
      assert.ok(box[0] > box[1], `the hosts table's box: ${box}`);
    } finally {
      await browser.close();
      await up.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
