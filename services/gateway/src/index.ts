export { startGateway, type RunningGateway } from './service.ts';
export { readConfig as readGatewayConfig, GatewayConfig } from './config.ts';
