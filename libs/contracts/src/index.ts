// The contracts' public surface: what services, the gateway, tests and tools import. A name the
// rest of the platform needs is added here by hand, so nothing internal leaks by accident.

// Errors and the messages between the gateway and the services.
export { AppError, errorCatalogue, httpStatusOf, type ErrorBody, type ErrorCode } from './errors.ts';
export {
  AdminMeta,
  Meta,
  REQUEST_ID_HEADER,
  Scope,
  ServiceMeta,
  StaffActorMeta,
  StaffMeta,
  StaffSignInMeta,
  type ReplyMessage,
} from './messages.ts';
export { services, Subjects, type ServiceName } from './subjects.ts';
export { Email, Id, IdParam, Metadata, Money, Phone, PositiveMoney } from './common.ts';
export { buildOperationInput, MAX_INPUT_DEPTH, nestsDeeperThan, operationInput, tooDeepIssue } from './input.ts';

// The operation tables (HTTP and internal) and their documents.
export {
  defineInternalOperations,
  type InternalOperation,
  type Operation,
  type OperationInput,
  type OperationOutput,
} from './ops/types.ts';
export { operations, operatorOperations, staffApiOperations } from './operations.ts';
export {
  Job,
  JobErrorRecord,
  JobId,
  jobAdminOperations,
  jobOperations,
  jobOwner,
  jobResultScope,
  JobResultPart,
  JobResultPartRequest,
  JobStatus,
} from './ops/jobs.ts';
export { adminOperations } from './ops/admin.ts';
export {
  MAIL_KINDS,
  MailKind,
  MailLocale,
  MailPreview,
  MailTemplate,
  MailTemplateBody,
  MailTemplateKind,
  mailOperations,
  mailTemplateOperations,
  mailTemplateStaffOperations,
  StaffMailSettings,
  StaffMailSettingsBody,
  memberLocaleOperations,
  TenantMailSettings,
  TenantMailSettingsBody,
} from './ops/mail.ts';
export { authOperations } from './ops/auth.ts';
export { ClaimRequestRecord, claimsOperations, ClaimStatus } from './ops/claims.ts';
export { cashbackOperations, ledgerAdminOperations, memberPinOperations, pointsOperations } from './ops/ledger.ts';
export { TransferRecord, transferOperations } from './ops/transfers.ts';
export {
  StartTenantDataReply,
  StartTenantDataRequest,
  TenantDataKind,
  tenantDataInternalOperations,
  TenantLifecycle,
  tenantOffboardingOperations,
} from './ops/tenant-offboarding.ts';
export {
  MergeMemberDataReply,
  MergeMemberDataRequest,
  memberMergeInternalOperations,
  memberMergeOperations,
} from './ops/member-merge.ts';
export { CashbackQuoteBody, PointsQuoteBody, quoteOperations, QuoteWarning } from './ops/quotes.ts';
export {
  earnRuleFields,
  LineItem,
  RefundLineItem,
  RuleApplied,
  ruleAdminOperations,
  RuleInput,
  ruleOperations,
  RulePatch,
  RuleRecord,
  RuleTraceEntry,
} from './ops/rules.ts';
export {
  EraseMemberDataReply,
  Consent,
  ConsentPurpose,
  EraseMemberDataRequest,
  ExportMemberDataReply,
  ExportMemberDataRequest,
  memberDataInternalOperations,
  memberDataOperations,
  PersonalData,
} from './ops/members.ts';
export {
  IMPORT_MAX_BYTES,
  importAdminOperations,
  importContentTypes,
  importInternalOperations,
  importKindOwner,
  importKinds,
  importOperations,
  importOwner,
  ImportRecord,
  importRowId,
  UPLOAD_CHUNK_BYTES,
  UploadChunk,
  type ImportKind,
} from './ops/imports.ts';
export {
  DOWNLOAD_PAGE_BYTES,
  DownloadCursor,
  DownloadPage,
  DOWNLOAD_PAGE_HEADER,
  EXPORT_ENTITIES,
  exportContentTypes,
  exportEntities,
  exportAdminOperations,
  exportOperations,
  exportOwner,
  ExportQuery,
  isExportTime,
  type ExportEntity,
} from './ops/exports.ts';
export { ProgrammeReport, reportAdminOperations, reportOperations } from './ops/reports.ts';
export { ISO_TIME_FORM, parseIsoTime, readIsoTime } from './time.ts';
export {
  EarnTier,
  ManualTierInput,
  MemberTier,
  TierBadge,
  TierInput,
  tierAdminOperations,
  tierOperations,
  TierSettings,
  tierStaffOperations,
  TierSettingsInput,
} from './ops/tiers.ts';
export { referralOperations, ReferralPeriod, referralPeriods } from './ops/referrals.ts';
export { queryDateRange, staffAdminOperations, staffOperations } from './ops/staff.ts';
export {
  webhookAdminOperations,
  WebhookDelivery,
  WebhookEndpoint,
  webhookOperations,
  webhookUrlProblem,
} from './ops/webhooks.ts';
export {
  AuthenticateReply,
  CardSummary,
  identityOperations,
  internalOperations,
  ledgerOperations,
  MembersChanged,
  StaffCredentialsChanged,
  MemberSummary,
  RewardSummary,
} from './internal.ts';
export {
  buildOpenApiDocument,
  buildOperatorOpenApiDocument,
  buildStaffOpenApiDocument,
  edgeResponses,
  successStatus,
} from './openapi.ts';

// Events: domain events, audit entries, the public webhook events.
export { type DomainEvent } from './events.ts';
export {
  AUDIT_ANCHORED_EVENT,
  AUDIT_ANCHOR_TOKEN,
  AUDIT_EVENT,
  AuditActor,
  AuditAnchor,
  AuditEntry,
  StaffRole,
} from './audit.ts';
export {
  WEBHOOK_HEADERS,
  webhookEnvelopeSchema,
  webhookEventNames,
  webhookEventTypes,
  webhookTypeOfDomainEvent,
  type WebhookEventName,
} from './webhook-events.ts';
