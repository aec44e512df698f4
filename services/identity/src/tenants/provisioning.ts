import { AppError, type AdminMeta, type Scope } from '@loyalty/contracts';
import { auditActor, recordAudit, withTransaction, type Outbox, type Pool, type Queryable } from '@loyalty/runtime';
import { newApiKey, newAppId, sha256 } from '../domain/secrets.ts';
import { createApp, listApps, revokeApp, rotateKey, type App } from '../store/apps.ts';
import { createTenant, findTenant, listTenants, updateContactEmail } from '../store/tenants.ts';

/** Records an operator's change to a tenant or app as an audit event, in the change's transaction. */
type Audit = (
  db: Queryable,
  meta: AdminMeta,
  tenantId: number,
  action: string,
  target: Record<string, string | number>,
  details?: Record<string, unknown>,
) => Promise<unknown>;

/**
 * Operator provisioning: tenants and apps. Every change is audited (operator actor) in its own
 * transaction. `onCredentialsChanged` tells every gateway to forget a cached key (after the commit).
 */
export function provisioning(pool: Pool, outbox: Outbox, onCredentialsChanged: (appId: string) => void) {
  const audit: Audit = (db, meta, tenantId, action, target, details = {}) =>
    recordAudit(outbox, db, tenantId, {
      actor: auditActor(meta),
      action,
      target,
      details,
      request_id: meta.request_id,
    });
  return { ...tenantAdmin(pool, audit), ...appAdmin(pool, audit, onCredentialsChanged) };
}

async function tenantOrFail(pool: Pool, id: number) {
  const tenant = await findTenant(pool, id);
  if (!tenant) throw new AppError('tenant_not_found');
  return tenant;
}

function tenantAdmin(pool: Pool, audit: Audit) {
  return {
    /** tenant_not_found unless the tenant exists. */
    requireTenant: (id: number) => tenantOrFail(pool, id),
    createTenant: (d: { name: string; sandbox: boolean; contact_email?: string }, meta: AdminMeta) =>
      withTransaction(pool, async (db) => {
        const tenant = await createTenant(db, {
          name: d.name,
          sandbox: d.sandbox,
          contactEmail: d.contact_email ?? null,
        });
        await audit(
          db,
          meta,
          tenant.id,
          'tenant.created',
          { tenant_id: tenant.id },
          { name: tenant.name, sandbox: tenant.sandbox },
        );
        return { tenant };
      }),
    updateTenant: (d: { tenant_id: number; contact_email: string | null }, meta: AdminMeta) =>
      withTransaction(pool, async (db) => {
        const tenant = await updateContactEmail(db, d.tenant_id, d.contact_email);
        if (!tenant) throw new AppError('tenant_not_found');
        await audit(
          db,
          meta,
          tenant.id,
          'tenant.updated',
          { tenant_id: tenant.id },
          {
            contact_email_set: d.contact_email !== null,
          },
        );
        return { tenant };
      }),
    /** The tenant of a service's request (other services ask before acting for a tenant named in a path). */
    async getTenant(tenantId: number) {
      const tenant = await tenantOrFail(pool, tenantId);
      return { tenant: { id: tenant.id, sandbox: tenant.sandbox } };
    },
    listTenants: async () => ({ tenants: await listTenants(pool) }),
  };
}

function appAdmin(pool: Pool, audit: Audit, onCredentialsChanged: (appId: string) => void) {
  const appTarget = (app: App) => ({ app_id: app.app_id });
  return {
    async createApp(d: { tenant_id: number; name: string; scopes: Scope[] }, meta: AdminMeta) {
      await tenantOrFail(pool, d.tenant_id);
      const apiKey = newApiKey();
      const scopes = [...new Set(d.scopes)];
      return withTransaction(pool, async (db) => {
        const app = await createApp(db, {
          id: newAppId(),
          tenantId: d.tenant_id,
          name: d.name,
          scopes,
          keyHash: sha256(apiKey),
        });
        await audit(db, meta, app.tenant_id, 'app.created', appTarget(app), { name: app.name, scopes: app.scopes });
        return { app: { ...app, api_key: apiKey } };
      });
    },
    async listApps(d: { tenant_id: number }) {
      await tenantOrFail(pool, d.tenant_id);
      return { apps: await listApps(pool, d.tenant_id) };
    },
    async rotateKey(d: { app_id: string }, meta: AdminMeta) {
      const apiKey = newApiKey();
      const app = await withTransaction(pool, async (db) => {
        const rotated = await rotateKey(db, d.app_id, sha256(apiKey));
        if (!rotated) throw new AppError('app_not_found', 'Application not found (or revoked).');
        await audit(db, meta, rotated.tenant_id, 'app.key_rotated', appTarget(rotated));
        return rotated;
      });
      onCredentialsChanged(d.app_id);
      return { app: { ...app, api_key: apiKey } };
    },
    async revoke(d: { app_id: string }, meta: AdminMeta) {
      const app = await withTransaction(pool, async (db) => {
        const revoked = await revokeApp(db, d.app_id);
        if (!revoked) throw new AppError('app_not_found');
        await audit(db, meta, revoked.tenant_id, 'app.revoked', appTarget(revoked));
        return revoked;
      });
      onCredentialsChanged(d.app_id);
      return { app };
    },
  };
}
