import { AppError, type Scope } from '@loyalty/contracts';
import type { Pool } from '@loyalty/runtime';
import { newApiKey, newAppId, sha256 } from './domain/secrets.ts';
import { createApp, listApps, revokeApp, rotateKey } from './store/apps.ts';
import { createTenant, findTenant, listTenants, updateContactEmail } from './store/tenants.ts';

/** Operator provisioning: tenants and apps. `onCredentialsChanged` tells every gateway to forget a cached key. */
export function provisioning(pool: Pool, onCredentialsChanged: (appId: string) => void) {
  async function tenantOrFail(id: number) {
    const tenant = await findTenant(pool, id);
    if (!tenant) throw new AppError('tenant_not_found');
    return tenant;
  }
  return {
    createTenant: async (d: { name: string; sandbox: boolean; contact_email?: string }) => ({
      tenant: await createTenant(pool, { name: d.name, sandbox: d.sandbox, contactEmail: d.contact_email ?? null }),
    }),
    async updateTenant(d: { tenant_id: number; contact_email: string | null }) {
      const tenant = await updateContactEmail(pool, d.tenant_id, d.contact_email);
      if (!tenant) throw new AppError('tenant_not_found');
      return { tenant };
    },
    /** The tenant of a service's request (other services ask before acting for a tenant named in a path). */
    async getTenant(tenantId: number) {
      const tenant = await tenantOrFail(tenantId);
      return { tenant: { id: tenant.id, sandbox: tenant.sandbox } };
    },
    listTenants: async () => ({ tenants: await listTenants(pool) }),
    async createApp(d: { tenant_id: number; name: string; scopes: Scope[] }) {
      await tenantOrFail(d.tenant_id);
      const apiKey = newApiKey();
      const scopes = [...new Set(d.scopes)];
      const app = await createApp(pool, {
        id: newAppId(),
        tenantId: d.tenant_id,
        name: d.name,
        scopes,
        keyHash: sha256(apiKey),
      });
      return { app: { ...app, api_key: apiKey } };
    },
    async listApps(d: { tenant_id: number }) {
      await tenantOrFail(d.tenant_id);
      return { apps: await listApps(pool, d.tenant_id) };
    },
    async rotateKey(d: { app_id: string }) {
      const apiKey = newApiKey();
      const app = await rotateKey(pool, d.app_id, sha256(apiKey));
      if (!app) throw new AppError('app_not_found', 'Application not found (or revoked).');
      onCredentialsChanged(d.app_id);
      return { app: { ...app, api_key: apiKey } };
    },
    async revoke(d: { app_id: string }) {
      const app = await revokeApp(pool, d.app_id);
      if (!app) throw new AppError('app_not_found');
      onCredentialsChanged(d.app_id);
      return { app };
    },
  };
}
