import { jsonCodec, packageDir, pingEndpoint, runService, systemClock, type Clock, type Logger, type RunningService } from '@loyalty/runtime';
import type { IdentityConfig } from './config.ts';
import { identityEndpoints } from './endpoints.ts';
import { Mailer } from './mailer.ts';
import { memberAuth } from './member-auth.ts';
import { provisioning } from './provisioning.ts';

export const SERVICE_VERSION = '0.1.0';

/** Composition root: config -> connections -> endpoints -> shutdown. */
export async function startIdentity(config: IdentityConfig, opts: { clock?: Clock; log?: Logger } = {}): Promise<RunningService> {
  return runService({
    name: 'identity',
    version: SERVICE_VERSION,
    config,
    log: opts.log,
    migrationsDir: packageDir(import.meta.url, '../migrations'),
    async setup({ pool, nc, subjects, log }) {
      const mailer = new Mailer(config.SMTP_URL, config.SANDBOX_SMTP_URL ?? config.SMTP_URL, config.MAIL_FROM, log);
      const auth = memberAuth({
        pool,
        clock: opts.clock ?? systemClock,
        mailer,
        tokenTtlMinutes: config.MEMBER_TOKEN_TTL_MINUTES,
        otp: {
          secret: config.OTP_SECRET,
          ttlMinutes: config.OTP_TTL_MINUTES,
          maxAttempts: config.OTP_MAX_ATTEMPTS,
          cooldownSeconds: config.OTP_RESEND_COOLDOWN_SECONDS,
          hourlyLimit: config.OTP_HOURLY_LIMIT,
        },
      });
      // Tell every gateway replica to forget a rotated or revoked key.
      const admin = provisioning(pool, (appId) => nc.publish(subjects.credentialsChanged(), jsonCodec.encode({ app_id: appId })));
      return {
        endpoints: { ...identityEndpoints(auth, admin), 'system.ping': pingEndpoint('identity', SERVICE_VERSION) },
        stop: async () => mailer.close(),
      };
    },
  });
}
