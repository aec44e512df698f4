export declare const root: string;
export declare const NATS_USERS: string[];
export declare const secretsFile: string;
export declare const natsServerFile: string;
export declare function ensureAuthenticatedNats(): Promise<{ url: string; passwords: Record<string, string> }>;
export declare function natsInfo(port: number, host?: string): Promise<{ auth_required?: boolean } | null>;
export declare function natsLogin(port: number, user: string, pass: string, host?: string): Promise<boolean>;
