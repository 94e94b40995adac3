/** PlacementExecutor port: runs a placement round's pure assignment here or in workers over host partitions. */
import type { PlacementResult, PlacementRound } from "../placement/round.ts";

/**
 * Runs `placeRound` semantics: the result depends only on the round and `partitions`, never on where
 * or how fast it ran. `onResult` is called exactly once, synchronously (in process) or later
 * (workers); the placement engine handles both.
 */
export interface PlacementExecutor {
  /** Host partitions placed in parallel (1: no partitioning). */
  readonly partitions: number;
  place(round: PlacementRound, onResult: (result: PlacementResult) => void): void;
}
