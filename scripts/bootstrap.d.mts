export declare const root: string;
export declare const NATS_USERS: string[];
export declare const secretsFile: string;
export declare const natsServerFile: string;
export declare function ensureAuthenticatedNats(): Promise<{
  url: string;
  passwords: Record<string, string>;
  /** The nats-server this call started; undefined when it was already running. */
  process?: { pid: number };
}>;
export declare function stopProcess(pid: number, seconds?: number): Promise<void>;
export declare function natsInfo(port: number, host?: string): Promise<{ auth_required?: boolean } | null>;
export declare function natsLogin(port: number, user: string, pass: string, host?: string): Promise<boolean>;
export declare function has(command: string): boolean;
export declare function reachable(port: number, host?: string, timeoutMs?: number): Promise<boolean>;
export declare function serverAddresses(env?: Record<string, string | undefined>): {
  postgres: string;
  redis: string;
  nats: string | null;
};
export declare function containerImages(env?: Record<string, string | undefined>): {
  postgres: string;
  nats: string;
  redis: string;
};
export declare function addressOf(url: string, kind: 'postgres' | 'nats' | 'redis'): { host: string; port: number };
export declare function ensureSecrets(): {
  nats: Record<string, string>;
  otp_secret: string;
  operator_token: string;
  audit_key: string;
};
export declare function missingServersMessage(
  missing: { kind: 'postgres' | 'nats' | 'redis'; where: string }[],
): string;
export declare function missingWhere(kind: 'postgres' | 'nats' | 'redis', url: string | null): string;
export declare function chromiumPath(env?: Record<string, string | undefined>): string | undefined;
export declare function ensureChromium(): void;
export declare const PNPM_VERSION: string;
export declare const pnpmEntry: string;
export declare const PNPM_SETTINGS: Record<string, string>;
export declare function ensurePnpm(): void;
export declare function installDependencies(): void;
export declare function pnpmEnv(env?: Record<string, string | undefined>): Record<string, string | undefined>;
export declare function pnpmCommand(args: string): string;
export declare function runPnpm(args: string, opts?: { env?: Record<string, string | undefined> }): void;
export declare function promtoolPath(env?: Record<string, string | undefined>): string | undefined;
export declare function ensurePromtool(): string | undefined;
