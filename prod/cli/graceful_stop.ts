/** How a process's graceful stop ends: the exit code, and the line that explains an exit 1. */
import { settlesWithin } from "../settle.ts";

/** How long a graceful stop may take in all before the process exits anyway (exit 1). */
export const STOP_DEADLINE_MS = 60_000;

/**
 * Runs a graceful stop and returns the exit code: 0, or 1 when it did not finish within `STOP_DEADLINE_MS`
 * (each of its waits is bounded; should they add up past that, the process still exits, naming the step it
 * was at) or when `lost` resolved meanwhile: a write it could not store, the database out of reach past the
 * stop's grace. `say` gets the line that explains an exit 1.
 */
export async function finishStop(
  say: (line: string) => void,
  name: string,
  stop: () => Promise<void>,
  lost: Promise<string>,
  step: () => string | undefined = () => undefined,
  deadlineMs = STOP_DEADLINE_MS,
): Promise<number> {
  let lostInStop: string | undefined;
  void lost.then((why) => (lostInStop = why));
  if (!(await settlesWithin(stop(), deadlineMs))) {
    const at = step();
    say(
      `${name}: the stop did not finish within ${deadlineMs / 1000} s${at ? ` (it was ${at})` : ""}; exiting`,
    );
    return 1;
  }
  // A write lost in the stop's last steps may be told on a turn of its own.
  await new Promise((r) => setTimeout(r, 0));
  if (lostInStop) {
    say(`${name}: stopped, but ${lostInStop}`);
    return 1;
  }
  return 0;
}
