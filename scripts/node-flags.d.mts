export declare const SERVICE_NODE_OPTIONS: string;
export declare function serviceNodeOptions(extra?: string): string;
export declare const SERVICE_ENV: Record<string, string>;
