import { adminOperations } from './ops/admin.ts';
import { authOperations } from './ops/auth.ts';
import { claimsOperations } from './ops/claims.ts';
import { cashbackOperations, ledgerAdminOperations, memberPinOperations, pointsOperations } from './ops/ledger.ts';
import { jobAdminOperations, jobOperations } from './ops/jobs.ts';
import { memberDataOperations } from './ops/members.ts';
import { quoteOperations } from './ops/quotes.ts';
import { reportAdminOperations, reportOperations } from './ops/reports.ts';
import { importAdminOperations, importOperations } from './ops/imports.ts';
import { exportAdminOperations, exportOperations } from './ops/exports.ts';
import { ruleAdminOperations, ruleOperations } from './ops/rules.ts';
import { tierAdminOperations, tierOperations } from './ops/tiers.ts';
import { referralOperations } from './ops/referrals.ts';
import { webhookAdminOperations, webhookOperations } from './ops/webhooks.ts';
import { operationExamples } from './ops/examples.ts';
import { staffAdminOperations, staffOperations } from './ops/staff.ts';
import { staffOperationExamples } from './ops/staff-examples.ts';
import { transferOperationExamples, transferOperations } from './ops/transfers.ts';
import { tenantOffboardingExamples, tenantOffboardingOperations } from './ops/tenant-offboarding.ts';
import { memberMergeExamples, memberMergeOperations } from './ops/member-merge.ts';
import { mailExamples, mailOperations, mailTemplateOperations, memberLocaleOperations } from './ops/mail.ts';
import type { Operation, OperationExample } from './ops/types.ts';

/** Examples kept beside their operations (ops/transfers.ts, ...). */
const moreExamples: Record<string, OperationExample> = {
  ...transferOperationExamples,
  ...tenantOffboardingExamples,
  ...memberMergeExamples,
  ...mailExamples,
};

/** The table with each operation's example (ops/examples.ts) attached. */
function withExamples(ops: Record<string, Operation>): Record<string, Operation> {
  return Object.fromEntries(
    Object.entries(ops).map(([id, op]) => [
      id,
      { ...op, example: operationExamples[id] ?? staffOperationExamples[id] ?? moreExamples[id] },
    ]),
  );
}

/**
 * The contract table: every HTTP operation of `/api/v1`. The gateway registers its routes from
 * this table in one loop and the OpenAPI document is generated from it.
 * Adding an endpoint = one entry here + one handler in the owning service.
 */
export const operations: Record<string, Operation> = withExamples({
  ...authOperations,
  ...claimsOperations,
  ...referralOperations,
  ...cashbackOperations,
  ...pointsOperations,
  ...transferOperations,
  ...quoteOperations,
  ...memberPinOperations,
  ...webhookOperations,
  ...ruleOperations,
  ...tierOperations,
  ...jobOperations,
  ...memberDataOperations,
  ...reportOperations,
  ...memberMergeOperations,
  ...importOperations,
  ...memberLocaleOperations,
  ...exportOperations,
});

/** The operator (provisioning) table, served under /admin/v1 behind the operator token. */
export const operatorOperations: Record<string, Operation> = withExamples({
  ...adminOperations,
  ...ledgerAdminOperations,
  ...ruleAdminOperations,
  ...tierAdminOperations,
  ...staffAdminOperations,
  ...webhookAdminOperations,
  ...jobAdminOperations,
  ...reportAdminOperations,
  ...tenantOffboardingOperations,
  ...importAdminOperations,
  ...mailOperations,
  ...mailTemplateOperations,
  ...exportAdminOperations,
});

/** The staff API table, served under /staff/v1 behind staff tokens (the console uses it); its own document. */
export const staffApiOperations: Record<string, Operation> = withExamples({ ...staffOperations });
