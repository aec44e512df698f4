export { startWebhooks, type RunningWebhooks, type WebhooksHooks, type WebhooksOptions } from './service.ts';
export { readConfig as readWebhooksConfig, WebhooksConfig } from './config.ts';
