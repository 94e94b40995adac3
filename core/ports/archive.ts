/** Archive port: where the job archiver exports jobs before it deletes them from the store. */
import type { JobRecord, TaskRecord } from "../model/records.ts";

/** One archived job: its record (config and runtime) and its tasks' last runs. */
export interface ArchivedJob {
  archivedAtMs: number;
  job: JobRecord;
  tasks: TaskRecord[];
}

export interface ArchiveSink {
  /** Resolves once the jobs are durably exported; the archiver deletes nothing before. */
  write(jobs: ArchivedJob[]): Promise<void>;
}
