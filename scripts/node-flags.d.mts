export declare const SERVICE_NODE_OPTIONS: string;
export declare function serviceNodeOptions(extra?: string): string;
