/** A plan's page: the curve of the target's field against the varied one, the target line and the answer. */
import type { PlanOutcome } from "../sim/plan.ts";
import { esc, renderPage, table, type UplotAssets } from "./charts.ts";

export function renderPlan(o: PlanOutcome, assets: UplotAssets): string {
  const measured = o.points.filter((p) => p.metric !== undefined);
  const targetValue = Number(/(-?\d+(?:\.\d+)?)$/.exec(o.target)?.[1] ?? NaN);
  const field = o.target.replace(/(<=|>=|==|<|>).*$/, "");
  return renderPage(`Plan: ${o.vary} for ${o.target}`, [
    `<p><b>${esc(o.note)}</b></p>`,
    table(["", ""], [
      ["scenario", o.scenario],
      ["varied", `${o.vary} from ${o.range.lo} to ${o.range.hi}`],
      ["target", o.target],
      ["seed", String(o.seed)],
      ["runs / rounds", `${o.points.length} / ${o.rounds}`],
    ]),
    table(
      [o.vary, field, "meets target", "wall s"],
      o.points.map((p) => [
        p.value,
        // A drain not over by the end took longer than the time it had: "over 250 (not over by the end)".
        p.atLeast ? `over ${p.metric} (not over by the end)` : p.metric ?? p.error ?? "",
        p.met ? "yes" : "no",
        p.wallSeconds ?? "",
      ]),
    ),
  ], [{
    id: "curve",
    title: `${field} against ${o.vary}`,
    y: field,
    xLabel: o.vary,
    x: measured.map((p) => p.value),
    points: true,
    lines: [
      { label: field, values: measured.map((p) => p.metric!) },
      { label: "target", values: measured.map(() => targetValue) },
    ],
  }], assets);
}
