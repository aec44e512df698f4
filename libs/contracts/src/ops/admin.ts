import { z } from 'zod';
import { Email, Id, IdParam, Text, Timestamp } from '../common.ts';
import { Scope } from '../messages.ts';
import { defineOperations } from './types.ts';

/**
 * Provisioning (operator) API: served by the gateway under /admin/v1 behind the operator token,
 * forwarded to the owning service like any other operation. Not part of the merchant interface.
 */
const base = { scope: null, memberToken: false, idempotent: false, tag: 'Provisioning (operator)' } as const;

const Tenant = z
  .object({
    id: Id,
    name: z.string(),
    sandbox: z.boolean(),
    contact_email: z
      .string()
      .nullable()
      .describe("where the platform writes about the tenant's integration (a webhook endpoint it disabled)"),
    status: z
      .enum(['active', 'inactive'])
      .describe('inactive: deactivated by the operator (apps 403 tenant_inactive, staff refused, webhooks paused)'),
    created_at: Timestamp,
  })
  .meta({ id: 'Tenant' });
const App = z
  .object({
    app_id: z.string(),
    tenant_id: Id,
    name: z.string(),
    scopes: z.array(Scope),
    created_at: Timestamp,
    revoked_at: Timestamp.nullable(),
  })
  .meta({ id: 'App' });
const AppWithKey = z
  .object({ ...App.shape, api_key: z.string().describe('shown once; only a hash is stored') })
  .meta({ id: 'AppWithKey' });
const TenantParams = z.object({ tenant_id: IdParam });
const AppParams = z.object({ app_id: Text.min(1).max(64) });

export const adminOperations = defineOperations({
  'admin.tenant.create': {
    ...base,
    service: 'identity',
    method: 'POST',
    path: '/admin/v1/tenants',
    operation: 'admin.tenant.create',
    summary: 'Create a tenant (a merchant programme); sandbox tenants return OTP codes in responses',
    body: z.object({
      name: Text.trim().min(1).max(200),
      sandbox: z.boolean().default(false),
      contact_email: Email.optional(),
    }),
    response: z.object({ tenant: Tenant }),
    errors: ['invalid_operator_token'],
  },
  'admin.tenant.update': {
    ...base,
    service: 'identity',
    method: 'PATCH',
    path: '/admin/v1/tenants/:tenant_id',
    operation: 'admin.tenant.update',
    summary: "Set or clear a tenant's contact email (null: the operator's address is used)",
    params: TenantParams,
    body: z.object({ contact_email: Email.nullable() }).strict(),
    response: z.object({ tenant: Tenant }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.tenant.list': {
    ...base,
    service: 'identity',
    method: 'GET',
    path: '/admin/v1/tenants',
    operation: 'admin.tenant.list',
    summary: 'List tenants',
    response: z.object({ tenants: z.array(Tenant) }),
    errors: ['invalid_operator_token'],
  },
  'admin.app.create': {
    ...base,
    service: 'identity',
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/apps',
    operation: 'admin.app.create',
    summary: 'Create an app with scopes; its API key is shown once',
    params: TenantParams,
    body: z.object({ name: Text.trim().min(1).max(200), scopes: z.array(Scope).default([]) }),
    response: z.object({ app: AppWithKey }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.app.list': {
    ...base,
    service: 'identity',
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/apps',
    operation: 'admin.app.list',
    summary: 'List the apps of a tenant (never their keys)',
    params: TenantParams,
    response: z.object({ apps: z.array(App) }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.app.rotate_key': {
    ...base,
    service: 'identity',
    method: 'POST',
    path: '/admin/v1/apps/:app_id/rotate-key',
    operation: 'admin.app.rotate_key',
    summary: 'Issue a new API key for an app; the old key stops working at once',
    params: AppParams,
    response: z.object({ app: AppWithKey }),
    errors: ['invalid_operator_token', 'app_not_found'],
  },
  'admin.app.revoke': {
    ...base,
    service: 'identity',
    method: 'POST',
    path: '/admin/v1/apps/:app_id/revoke',
    operation: 'admin.app.revoke',
    summary: 'Revoke an app: its key stops working at once',
    params: AppParams,
    response: z.object({ app: App }),
    errors: ['invalid_operator_token', 'app_not_found'],
  },
});
