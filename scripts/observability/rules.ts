// The platform's Prometheus rules as data: service levels (recording rules of their error ratios
// over the burn-rate windows, and multi-window multi-burn-rate alerts on them) and the alerts on
// the pipeline, the pools and the keys. scripts/observability.ts writes them to
// deploy/observability/rules.yaml and into the production overlay's PrometheusRule.

export interface RecordingRule {
  record: string;
  expr: string;
  labels?: Record<string, string>;
}
export interface AlertingRule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
export type Rule = RecordingRule | AlertingRule;
export interface RuleGroup {
  name: string;
  interval?: string;
  rules: Rule[];
}

/** Where the runbooks are: docs/runbooks.md, one section per alert (anchor = the alert's name in lower case). */
export const RUNBOOKS = 'docs/runbooks.md';
export const runbookAnchor = (alert: string): string => alert.toLowerCase();

/** The routes of an earn (points and cashback): the earn latency service level is about these. */
export const EARN_ROUTES = ['/api/v1/loyalty/points/earn', '/api/v1/cashback/cashback/earn'];
const earnRoutes = EARN_ROUTES.join('|');

/** A written service level: good events / all events ≥ objective, measured over 30 days. */
export interface ServiceLevel {
  /** Used in the recording rules' names: loyalty:<name>:error_ratio_rate<window>. */
  name: string;
  /** The alert's name stem (…BudgetBurnFast, …BudgetBurnSlow). */
  alert: string;
  title: string;
  objective: number;
  /** What it promises, in words (the alerts' descriptions and docs/observability.md). */
  promise: string;
  /** The ratio of bad events over a window (`$w` is replaced by the window). */
  errorRatio: string;
}

export const serviceLevels: ServiceLevel[] = [
  {
    name: 'api_availability',
    alert: 'LoyaltyApiAvailability',
    title: 'API availability',
    objective: 0.999,
    promise: '99.9 % of API requests are answered without a 5xx',
    errorRatio: `sum(rate(loyalty_http_request_duration_seconds_count{status=~"5.."}[$w]))
/
sum(rate(loyalty_http_request_duration_seconds_count[$w]))`,
  },
  {
    name: 'earn_latency',
    alert: 'LoyaltyEarnLatency',
    title: 'Earn latency',
    objective: 0.999,
    promise: '99.9 % of earns (points and cashback) are answered in 100 ms or less, without a 5xx',
    errorRatio: `1 - (
  sum(rate(loyalty_http_request_duration_seconds_bucket{route=~"${earnRoutes}",le="0.1",status!~"5.."}[$w]))
  /
  sum(rate(loyalty_http_request_duration_seconds_count{route=~"${earnRoutes}"}[$w]))
)`,
  },
  {
    name: 'webhook_delivery',
    alert: 'LoyaltyWebhookDelivery',
    title: 'Webhook delivery',
    objective: 0.99,
    promise:
      '99 % of webhook events are delivered within 60 s of the event while the endpoint is healthy (delivered by the first attempt)',
    errorRatio: `1 - (
  sum(rate(loyalty_webhook_event_to_delivery_seconds_bucket{attempt="first",le="60"}[$w]))
  /
  sum(rate(loyalty_webhook_event_to_delivery_seconds_count{attempt="first"}[$w]))
)`,
  },
];

/**
 * The burn-rate alerts of the SRE workbook for a 30-day budget: a page when 2 % of the budget
 * burns in an hour (14.4×, long window 1 h, short 5 m) or 5 % in six hours (6×, 6 h and 30 m); a
 * ticket when 10 % burns in a day (3×, 1 d and 2 h) or 10 % in three days (1×, 3 d and 6 h).
 */
export const burnRates = [
  { severity: 'page', long: '1h', short: '5m', factor: 14.4 },
  { severity: 'page', long: '6h', short: '30m', factor: 6 },
  { severity: 'ticket', long: '1d', short: '2h', factor: 3 },
  { severity: 'ticket', long: '3d', short: '6h', factor: 1 },
] as const;
const windows = ['5m', '30m', '1h', '2h', '6h', '1d', '3d'];

const ratio = (slo: ServiceLevel, w: string) => `loyalty:${slo.name}:error_ratio_rate${w}`;
/** A number as PromQL writes it, without binary floating-point noise (14.4 × 0.001 = 0.0144). */
const num = (n: number) => String(Number(n.toPrecision(6)));

function annotations(alert: string, summary: string, description: string): Record<string, string> {
  return { summary, description, runbook_url: `${RUNBOOKS}#${runbookAnchor(alert)}` };
}

function sloGroup(slo: ServiceLevel): RuleGroup {
  const budget = 1 - slo.objective;
  const rules: Rule[] = windows.map((w) => ({ record: ratio(slo, w), expr: slo.errorRatio.replaceAll('$w', w) }));
  for (const severity of ['page', 'ticket'] as const) {
    const pairs = burnRates.filter((b) => b.severity === severity);
    const alert = `${slo.alert}BudgetBurn${severity === 'page' ? 'Fast' : 'Slow'}`;
    rules.push({
      alert,
      expr: pairs
        .map(
          (b) =>
            `(${ratio(slo, b.long)} > ${num(b.factor * budget)} and ${ratio(slo, b.short)} > ${num(b.factor * budget)})`,
        )
        .join('\nor\n'),
      for: severity === 'page' ? '2m' : '15m',
      labels: { severity, slo: slo.name },
      annotations: annotations(
        alert,
        `${slo.title}: the error budget is burning ${severity === 'page' ? 'fast' : 'slowly'}`,
        `Objective: ${slo.promise}. The bad ratio is {{ $value | humanizePercentage }} over the last ${pairs
          .map((b) => b.long)
          .join(' or ')}, ${pairs.map((b) => `${b.factor}×`).join(' or ')} the budget of ${num(budget * 100)} %.`,
      ),
    });
  }
  return { name: `loyalty-slo-${slo.name.replaceAll('_', '-')}`, rules };
}

const alerts: AlertingRule[] = [
  {
    alert: 'LoyaltyApiErrorRate',
    expr: `(
  sum by (route) (rate(loyalty_http_request_duration_seconds_count{status=~"5.."}[5m]))
  /
  sum by (route) (rate(loyalty_http_request_duration_seconds_count[5m]))
) > 0.05
and
sum by (route) (rate(loyalty_http_request_duration_seconds_count[5m])) > 0.1`,
    for: '10m',
    labels: { severity: 'ticket' },
    annotations: annotations(
      'LoyaltyApiErrorRate',
      'API route {{ $labels.route }} answers more than 5 % 5xx',
      '{{ $value | humanizePercentage }} of the requests to {{ $labels.route }} failed with a 5xx over 5 minutes.',
    ),
  },
  {
    alert: 'LoyaltyServiceInternalErrors',
    expr: `sum by (service, operation) (rate(loyalty_nats_request_errors_total{code="internal_error"}[5m])) > 0.05`,
    for: '10m',
    labels: { severity: 'ticket' },
    annotations: annotations(
      'LoyaltyServiceInternalErrors',
      '{{ $labels.service }} fails {{ $labels.operation }} with internal_error',
      '{{ $value | humanize }} internal errors a second in {{ $labels.service }} {{ $labels.operation }}: read the service log for "internal_error".',
    ),
  },
  {
    alert: 'LoyaltyConsumerLag',
    expr: `max by (service, consumer) (loyalty_consumer_pending) > 10000`,
    for: '10m',
    labels: { severity: 'ticket' },
    annotations: annotations(
      'LoyaltyConsumerLag',
      'JetStream consumer {{ $labels.consumer }} is {{ $value | humanize }} events behind',
      'The durable consumer {{ $labels.consumer }} of {{ $labels.service }} has had more than 10,000 events undelivered or unacknowledged for 10 minutes.',
    ),
  },
  {
    alert: 'LoyaltyOutboxStuck',
    expr: `max by (service) (loyalty_outbox_oldest_age_seconds) > 120`,
    for: '5m',
    labels: { severity: 'page' },
    annotations: annotations(
      'LoyaltyOutboxStuck',
      'The outbox of {{ $labels.service }} has not published for {{ $value | humanizeDuration }}',
      'The oldest unpublished outbox row of {{ $labels.service }} is older than 2 minutes: its events (webhooks, mails, referral bonuses) are not going out.',
    ),
  },
  {
    alert: 'LoyaltyOutboxBacklog',
    expr: `max by (service) (loyalty_outbox_backlog) > 10000`,
    for: '15m',
    labels: { severity: 'ticket' },
    annotations: annotations(
      'LoyaltyOutboxBacklog',
      'The outbox of {{ $labels.service }} holds {{ $value | humanize }} unpublished events',
      'More than 10,000 outbox rows of {{ $labels.service }} have been waiting for 15 minutes: the relay publishes more slowly than events are written.',
    ),
  },
  {
    alert: 'LoyaltyWebhookBacklog',
    expr: `sum(max by (tenant) (loyalty_webhook_backlog)) > 50000`,
    for: '15m',
    labels: { severity: 'ticket' },
    annotations: annotations(
      'LoyaltyWebhookBacklog',
      '{{ $value | humanize }} webhook deliveries pending',
      'More than 50,000 webhook deliveries have been pending for 15 minutes; loyalty_webhook_backlog names the tenants with the most.',
    ),
  },
  {
    alert: 'LoyaltyWebhookEndpointDisabled',
    expr: `sum(increase(loyalty_webhook_endpoints_disabled_total[1h])) > 0`,
    labels: { severity: 'info' },
    annotations: annotations(
      'LoyaltyWebhookEndpointDisabled',
      'Webhook endpoints were disabled after three days of failures',
      '{{ $value | humanize }} endpoint(s) disabled in the last hour; their tenants were mailed (endpoint_disabled).',
    ),
  },
  {
    alert: 'LoyaltyDatabasePoolExhausted',
    expr: `(
  sum by (service, instance) (loyalty_db_pool_connections{state="busy"})
  >= on (service, instance)
  max by (service, instance) (loyalty_db_pool_max)
)
and on (service, instance)
max by (service, instance) (loyalty_db_pool_waiting) > 0`,
    for: '5m',
    labels: { severity: 'ticket' },
    annotations: annotations(
      'LoyaltyDatabasePoolExhausted',
      'The database pool of {{ $labels.service }} ({{ $labels.instance }}) is exhausted',
      'Every connection of the pool is checked out and queries wait for one, for 5 minutes.',
    ),
  },
  {
    alert: 'LoyaltySecretsKeyRotationPending',
    expr: `max(loyalty_webhook_secrets_pending) > 0`,
    for: '1h',
    labels: { severity: 'ticket' },
    annotations: annotations(
      'LoyaltySecretsKeyRotationPending',
      '{{ $value | humanize }} webhook secrets or data keys are not under the current SECRETS_KEY',
      'Webhook secrets are still in plaintext or tenant data keys still under SECRETS_KEY_PREVIOUS an hour on: the previous key cannot be retired yet.',
    ),
  },
  {
    alert: 'LoyaltyCertificateExpiry',
    expr: `(min by (namespace, name) (certmanager_certificate_expiration_timestamp_seconds{namespace=~"loyalty|nats"}) - time()) < 14 * 86400`,
    for: '1h',
    labels: { severity: 'ticket' },
    annotations: annotations(
      'LoyaltyCertificateExpiry',
      'Certificate {{ $labels.namespace }}/{{ $labels.name }} expires in {{ $value | humanizeDuration }}',
      'A certificate of the platform (the NATS server TLS certificate, issued by cert-manager) expires in less than 14 days and has not been renewed.',
    ),
  },
];

/** Metrics the rules use that the platform's processes do not expose (another exporter's). */
export const externalMetrics: Record<string, string> = {
  certmanager_certificate_expiration_timestamp_seconds: 'cert-manager',
};

export const ruleGroups: RuleGroup[] = [...serviceLevels.map(sloGroup), { name: 'loyalty-alerts', rules: alerts }];

export const isAlert = (r: Rule): r is AlertingRule => 'alert' in r;
