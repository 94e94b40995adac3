/**
 * The web UI's layout with names as long as Peloton allows and without a space (a job's name is up to 512
 * characters): they wrap, so a page stays as wide as the window and the figures beside them stay in view; a
 * table wider than the window scrolls in its own box. Nothing else is cut: states, goals and buttons keep
 * each word on one line, at a desktop's width as at 800 px. No cell's text runs over its neighbours (a pool's
 * long path, its waiting message), and at 1280 px the hosts table (with a host of many labels) and the jobs
 * list (with a job in a pool of a long path) fit the window: their actions and last columns need no sideways
 * scrolling.
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
    // One agent with as many labels as a real host can carry, which made its row tall and pushed the
    // actions off a 1280-px window.
    const labels = Object.fromEntries(
      Array.from({ length: 8 }, (_, i) => [`label-key-number-${i}`, `some-rather-long-label-value-${i}`]),
    );
    await Deno.writeTextFile(`${dir}/agents.yaml`, JSON.stringify({ agents: [{ attributes: labels }] }));
    const [up, browser] = await Promise.all([
      startUp(dir, ["--agents-file", `${dir}/agents.yaml`]),
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
      // A pool of a long name (with words, as people name them) too small for its job's one core: its row
      // says why the job waits, naming the pool again; the jobs list shows the job with that pool's path.
      const etl = "Nightly-ETL-pipeline-with-an-extremely-long-descriptive-name-for-testing";
      await Deno.writeTextFile(
        `${dir}/etl.yaml`,
        poolYaml.replace(`name: ${pool}`, `name: ${etl}`)
          .replace("reservation: 12\n    limit: 12", "reservation: 0\n    limit: 0.5"),
      );
      const small = await cli(up.url, "respool", "create", `/${etl}`, `${dir}/etl.yaml`);
      assert.equal(small.code, 0, small.err);
      await Deno.writeTextFile(`${dir}/waits.yaml`, batchJobYaml("waits", 1, "sleep 30", 1));
      const waits = await cli(up.url, "job", "create", `/${etl}`, `${dir}/waits.yaml`);
      assert.equal(waits.code, 0, waits.err);

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
      /** The texts of the cells under `selector` whose content is wider than the cell: drawn over the next. */
      const overprinting = (selector: string) =>
        page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})]
          .filter((td) => td.scrollWidth > td.clientWidth + 1).map((td) => td.textContent)`) as Promise<
          string[]
        >;
      /** The table's box's [scrollWidth, clientWidth]: the first above the second scrolls sideways. */
      const tableBox = (table: string) =>
        page.evaluate(`(() => {
          const b = document.querySelector(".table-scroll:has(${table})");
          return [b.scrollWidth, b.clientWidth];
        })()`) as Promise<number[]>;
      const whole = {
        jobs: "table.jobs td:nth-child(3), table.jobs .badge, table.jobs td:nth-child(5)",
        [`jobs/${jobId}`]: "button.action, table.tasks .badge, table.tasks td:nth-child(4), " +
          "table.tasks td:nth-child(5), table.tasks td:nth-child(6), button.details-toggle",
        pools: "table.pools td:not(.pool)",
        hosts: "button.action, table.hosts .badge, table.hosts .path, table.hosts td:nth-child(6)",
      } as Record<string, string>;
      for (
        const [view, ready, width] of [
          ["jobs", `table.jobs tbody tr:has-text("ngEnd")`, 1000],
          [`jobs/${jobId}`, `table.tasks tbody tr .badge`, 1000],
          ["pools", `td.pool:has-text("${pool.slice(-20)}")`, 1000],
          ["pools", `td.pool:has-text("${etl}") .wait`, 1280],
          ["pools", `td.pool:has-text("${etl}") .wait`, 800],
          ["jobs", `table.jobs tbody tr:has-text("ngEnd")`, 800],
          ["jobs", `table.jobs tbody tr:has-text("${etl}")`, 1280],
          ["jobs", `table.jobs tbody tr:has-text("${etl}")`, 1920],
          ["hosts", "table.hosts button.action", 1920],
          ["hosts", "table.hosts button.action", 1280],
          // Last: the check after the loop reads the page at this width.
          ["hosts", "table.hosts button.action", 800],
        ] as const
      ) {
        await page.setViewportSize({ width, height: 800 });
        const [scroll, inner] = await widths(view, ready);
        assert.ok(scroll <= inner, `#/${view} is ${scroll} px wide in a ${inner} px window`);
        assert.deepEqual(await wrapped(whole[view]), [], `#/${view} at ${width} px: cut or wrapped`);
        assert.deepEqual(await overprinting("td"), [], `#/${view} at ${width} px: cells drawn over others`);
        if (width >= 1280 && (view === "jobs" || view === "hosts")) {
          const [scrollBox, box] = await tableBox(`table.${view}`);
          assert.ok(
            scrollBox <= box,
            `#/${view} at ${width} px: its table scrolls sideways (${scrollBox} px)`,
          );
        }
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
