// The runtime's public surface: mechanism every service repeats, no domain logic.
export { ConfigError, commonEnv, databaseEnv, loadConfig } from './config.ts';
export { createLogger, type Logger } from './logger.ts';
export { ManualClock, systemClock, type Clock } from './clock.ts';
export {
  afterCommit,
  createPool,
  isConnectionLost,
  isUniqueViolation,
  packageDir,
  withTransaction,
  type Pool,
  type PoolClient,
  type Queryable,
  returnedRow,
} from './db.ts';
export { inTransaction } from './open-transaction.ts';
export { migrate, migrationName, NO_TRANSACTION_SUFFIX, upStatements } from './migrate.ts';
export { connectNats, jsonCodec, natsReady, type NatsAuth, type NatsConnection } from './nats.ts';
export {
  natsInboxPrefix,
  natsPermissions,
  natsServerConfig,
  natsUsers,
  type NatsPermissions,
  type NatsServerConfigOptions,
  type NatsUser,
} from './nats-auth.ts';
export {
  Endpoints,
  serveEndpoints,
  WithMessage,
  RawReply,
  type Endpoint,
  type HandlerContext,
  type ServedEndpoints,
} from './endpoints.ts';
export {
  callPage,
  callService,
  ContractViolationError,
  ServiceClient,
  ServiceUnavailableError,
} from './service-client.ts';
export { Metrics } from './metrics.ts';
export { startOpsServer, type ReadinessCheck } from './ops-server.ts';
export {
  JobRunner,
  JobStore,
  LeaseLost,
  RESULT_PART_BYTES,
  RESULT_TTL_MS,
  type JobError,
  type JobHandler,
  type JobProgress,
  type JobRecord,
  type JobResult,
  type JobStatus,
  type JobStep,
} from './jobs.ts';
export { addJobEndpoints, jobView } from './job-endpoints.ts';
export {
  addExportEndpoints,
  exportRange,
  Exports,
  isoTime,
  sqlExportPage,
  type ExportColumn,
  type ExportKey,
  type ExportRequest,
  type ExportSource,
  type SourcePage,
} from './exports.ts';
export {
  startTenantDataJob,
  TENANT_EXPORT_JOB,
  TENANT_PURGE_JOB,
  tenantExportJob,
  tenantPurgeJob,
  type TenantTable,
} from './tenant-data.ts';
export {
  isReplay,
  ReplayStore,
  requestHash,
  stableStringify,
  type ReplayKey,
  type ResponseSealer,
} from './idempotency.ts';
export { PeriodicTask, type PeriodicTaskOptions } from './periodic-task.ts';
export {
  BroadcastListener,
  ReplicaCache,
  type Forgotten,
  type LoadTicket,
  type ReplicaCacheOptions,
} from './replica-cache.ts';
export { purge, PURGE_BATCH, sharedPurgeRules, type PurgeRule } from './purge.ts';
export { failStartup, runUntilSignal, type Stoppable } from './lifecycle.ts';
export {
  runService,
  startInOrder,
  type RunningService,
  type RunOptions,
  type ServiceDeclaration,
  type ServiceDefinition,
  type ServicePart,
  type ServiceRuntime,
} from './service.ts';
export { ensureEventStream, Outbox, OutboxRelay, type NewEvent, type OutboxEvent } from './outbox.ts';
export { EventConsumer } from './consumer.ts';
export { auditActor, recordAudit } from './audit.ts';
export { EventBatchConsumer, eventTrace } from './batch-consumer.ts';
export {
  activeSpan,
  recordingSpan,
  contextOf,
  failSpan,
  flushTraces,
  inSpan,
  childSpan,
  inChildSpan,
  linkTo,
  samplingRatio,
  SpanKind,
  startSpan,
  startTracing,
  traceIds,
  traceparentOf,
  traceparentOfSpan,
  tracingOn,
  TRACEPARENT,
  withSpan,
  type Span,
} from './tracing.ts';
export { EXPORT_PAGE_ROWS, exportPage, type ExportPage, type ExportSection } from './member-export.ts';
export {
  ERASED,
  erasePersonalTextInSharedTables,
  personalPattern,
  rewritePersonalText,
  type PersonalStrings,
} from './personal-data.ts';
export {
  addImportEndpoints,
  importKind,
  Imports,
  type ImportContext,
  type ImportKindSpec,
  type RowProblem,
} from './imports.ts';
export { lineFields, readRecords, type FileRecord } from './import-files.ts';
export {
  isSealed,
  masterKey,
  newDataKey,
  open as openSecret,
  parseMasterKey,
  seal as sealSecret,
  unwrapDataKey,
  wrapDataKey,
  wrappedKeyId,
  type MasterKey,
} from './envelope.ts';
