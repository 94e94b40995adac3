/** The progress line on stderr: simulated time, events per second, estimated time left. Only on a terminal. */

export class Progress {
  readonly #enc = new TextEncoder();
  readonly #started = performance.now();
  #drawn = false;

  constructor(
    private readonly horizonSec: number | undefined,
    private readonly enabled = Deno.stderr.isTerminal(),
  ) {}

  /** One line, redrawn in place: `[#####-----] 45% · 1620 s of 3600 s · 812,000 events/s · ~22 s left`. */
  line(simulatedMs: number, events: number): string {
    const wall = (performance.now() - this.#started) / 1000;
    const sec = simulatedMs / 1000;
    const eps = Math.round(events / Math.max(wall, 0.001)).toLocaleString("en-US");
    if (!this.horizonSec) return `  ${sec.toFixed(0)} s simulated · ${eps} events/s`;
    const done = Math.min(1, sec / this.horizonSec);
    const width = 24, filled = Math.round(done * width);
    const left = done > 0 ? (wall / done) * (1 - done) : 0;
    return `  [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${
      (done * 100).toFixed(0).padStart(3)
    }% · ` +
      `${sec.toFixed(0)} s of ${this.horizonSec} s · ${eps} events/s · ~${left.toFixed(0)} s left`;
  }

  draw(simulatedMs: number, events: number): void {
    if (!this.enabled) return;
    this.#drawn = true;
    Deno.stderr.writeSync(this.#enc.encode(`\r${this.line(simulatedMs, events)}\x1b[K`));
  }

  done(): void {
    if (this.#drawn) Deno.stderr.writeSync(this.#enc.encode("\n"));
  }
}
