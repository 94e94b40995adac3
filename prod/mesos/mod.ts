/**
 * Production mode's Mesos backend: the v1 scheduler HTTP client, `MesosBackend` (the HostBackend port over
 * it), and `MesosMaster`, a local emulator of the documented protocol whose agents run real processes.
 */
export { type MaintenanceEvent, MesosBackend, type MesosBackendOptions } from "./mesos_backend.ts";
export {
  MesosCallError,
  NotSubscribedError,
  PELOTON_FRAMEWORK,
  SchedulerClient,
  type SchedulerClientOptions,
} from "./scheduler_client.ts";
export {
  FileFrameworkIdStore,
  type FrameworkIdStore,
  MemoryFrameworkIdStore,
  StoreFrameworkIdStore,
} from "./framework_id_store.ts";
export { type AgentSpec, MesosMaster, type MesosMasterOptions, type RestartOptions } from "./master.ts";
export { encodeRecord, readRecords, RecordIODecoder, RecordIOError } from "./recordio.ts";
export type * from "./protocol.ts";
