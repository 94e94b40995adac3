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

/**
 * The signals that stop a process gracefully: SIGINT (Ctrl-C), SIGTERM (a supervisor) and SIGHUP (its
 * terminal or SSH session closed, which would otherwise end it at once and leave its tasks running).
 */
export const STOP_SIGNALS: readonly Deno.Signal[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/**
 * Listens for the stop signals: `stopped` resolves with the first; each one after it goes to `again`, which
 * says the stop is under way (it is not forced: see `alreadyStopping`). `dispose` removes the listeners.
 */
export function stopSignals(
  again: (signal: Deno.Signal) => void,
): { stopped: Promise<Deno.Signal>; dispose(): void } {
  const first = Promise.withResolvers<Deno.Signal>();
  let got = false;
  const listeners = STOP_SIGNALS.map((signal) => {
    const listener = () => {
      if (got) return again(signal);
      got = true;
      first.resolve(signal);
    };
    Deno.addSignalListener(signal, listener);
    return () => Deno.removeSignalListener(signal, listener);
  });
  return { stopped: first.promise, dispose: () => listeners.forEach((remove) => remove()) };
}

/**
 * The line for a stop signal that comes while a stop is under way. A second signal does not force the exit:
 * the stop is what ends the tasks and stores the last writes, and it is bounded (`STOP_DEADLINE_MS`); SIGKILL
 * ends the process at once, without it.
 */
export function alreadyStopping(name: string, signal: Deno.Signal, step: string | undefined): string {
  const at = step ? ` (${step})` : "";
  const withinS = STOP_DEADLINE_MS / 1000;
  return `${name}: ${signal}: already stopping${at}; not forced: the stop ends within ${withinS} s of its ` +
    "start (SIGKILL ends the process at once, skipping it)";
}
