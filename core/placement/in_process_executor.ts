/** The in-process PlacementExecutor: partitions placed one after another on the calling thread. */
import type { PlacementExecutor } from "../ports/placement_executor.ts";
import { placeRound } from "./plan.ts";
import type { PlacementResult, PlacementRound } from "./round.ts";

export class InProcessExecutor implements PlacementExecutor {
  constructor(readonly partitions = 1) {}

  place(round: PlacementRound, onResult: (result: PlacementResult) => void): void {
    onResult(placeRound(round, this.partitions));
  }
}
