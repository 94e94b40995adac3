/**
 * Headless Chromium for the browser tests (report pages, web UI). Needs Chromium at /usr/bin/chromium, or
 * at PELOTON_TEST_CHROMIUM; without it a test fails rather than skips.
 */
import { type Browser, chromium } from "playwright-core";

export const CHROMIUM = Deno.env.get("PELOTON_TEST_CHROMIUM") ?? "/usr/bin/chromium";

/** Starts Chromium; `what` says what the test cannot do without it ("open the report pages"). */
export async function launchChromium(what: string): Promise<Browser> {
  const found = await Deno.stat(CHROMIUM).then((s) => s.isFile, () => false);
  if (!found) {
    throw new Error(
      `Cannot ${what}: no Chromium at ${CHROMIUM}. Install it (apt-get install chromium) ` +
        `or set PELOTON_TEST_CHROMIUM to its path.`,
    );
  }
  try {
    return await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
  } catch (e) {
    throw new Error(`Cannot start Chromium at ${CHROMIUM}: ${(e as Error).message}`);
  }
}
