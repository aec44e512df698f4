// The platform's Grafana dashboards as data: API, services, event pipeline, business.
// scripts/observability.ts writes them to deploy/observability/dashboards/*.json. Every panel
// queries the data source chosen in the `datasource` variable (no data source uid is written in),
// and every metric is one the processes expose (test/observability checks both).
import { EARN_ROUTES, serviceLevels } from './rules.ts';

const DS = { type: 'prometheus', uid: '${datasource}' };
const RATE = '$__rate_interval';

interface Target {
  expr: string;
  legend?: string;
}
interface PanelSpec {
  title: string;
  description?: string;
  targets: Target[];
  unit?: string;
  /** timeseries (default), stat, or a full-width row heading. */
  type?: 'timeseries' | 'stat' | 'row';
  width?: number;
  stack?: boolean;
}
interface VariableSpec {
  name: string;
  label: string;
  /** label_values(<metric>, <label>) */
  query: string;
  multi?: boolean;
}
interface DashboardSpec {
  uid: string;
  title: string;
  description: string;
  variables: VariableSpec[];
  panels: PanelSpec[];
}

const q = (expr: string, legend?: string): Target => ({ expr, legend });
const row = (title: string): PanelSpec => ({ title, type: 'row', targets: [] });
/** p50, p95 and p99 of a histogram, by `by` (plus le). */
const quantiles = (metric: string, selector: string, by: string, legend: string): Target[] =>
  [0.5, 0.95, 0.99].map((p) =>
    q(
      `histogram_quantile(${p}, sum by (${by ? `${by}, ` : ''}le) (rate(${metric}_bucket{${selector}}[${RATE}])))`,
      `p${p * 100} ${legend}`.trim(),
    ),
  );

const api: DashboardSpec = {
  uid: 'loyalty-api',
  title: 'Loyalty · API',
  description: 'The public API at the gateway: rate, errors and latency per operation (route), and the service levels.',
  variables: [
    {
      name: 'route',
      label: 'Route',
      query: 'label_values(loyalty_http_request_duration_seconds_count{service="gateway"}, route)',
      multi: true,
    },
  ],
  panels: [
    row('Service levels'),
    ...serviceLevels.map((slo): PanelSpec => ({
      title: `${slo.title}: bad ratio, 1 h (budget ${Number(((1 - slo.objective) * 100).toPrecision(3))} %)`,
      description: `Objective: ${slo.promise}. The share of bad events over the last hour; above the budget the budget burns faster than it refills.`,
      type: 'stat',
      unit: 'percentunit',
      width: 8,
      targets: [q(`loyalty:${slo.name}:error_ratio_rate1h`, slo.title)],
    })),
    row('Per operation'),
    {
      title: 'Requests per second by route',
      unit: 'reqps',
      targets: [
        q(
          `sum by (route) (rate(loyalty_http_request_duration_seconds_count{service="gateway",route=~"$route"}[${RATE}]))`,
          '{{route}}',
        ),
      ],
    },
    {
      title: '5xx ratio by route',
      unit: 'percentunit',
      targets: [
        q(
          `sum by (route) (rate(loyalty_http_request_duration_seconds_count{service="gateway",route=~"$route",status=~"5.."}[${RATE}]))
/
sum by (route) (rate(loyalty_http_request_duration_seconds_count{service="gateway",route=~"$route"}[${RATE}]))`,
          '{{route}}',
        ),
      ],
    },
    {
      title: 'Failures by route and error code',
      description: 'Every failure envelope the gateway answered (4xx and 5xx), by its error code.',
      unit: 'reqps',
      stack: true,
      targets: [
        q(
          `sum by (route, code) (rate(loyalty_http_errors_total{service="gateway",route=~"$route"}[${RATE}]))`,
          '{{route}} {{code}}',
        ),
      ],
    },
    {
      title: 'Responses by status',
      unit: 'reqps',
      stack: true,
      targets: [
        q(
          `sum by (status) (rate(loyalty_http_request_duration_seconds_count{service="gateway",route=~"$route"}[${RATE}]))`,
          '{{status}}',
        ),
      ],
    },
    {
      title: 'Latency p99 by route',
      unit: 's',
      targets: [
        q(
          `histogram_quantile(0.99, sum by (route, le) (rate(loyalty_http_request_duration_seconds_bucket{service="gateway",route=~"$route"}[${RATE}])))`,
          '{{route}}',
        ),
      ],
    },
    {
      title: 'Latency p50 by route',
      unit: 's',
      targets: [
        q(
          `histogram_quantile(0.5, sum by (route, le) (rate(loyalty_http_request_duration_seconds_bucket{service="gateway",route=~"$route"}[${RATE}])))`,
          '{{route}}',
        ),
      ],
    },
    {
      title: 'Earn latency (points and cashback)',
      description: 'The earn service level: 99.9 % in 100 ms or less.',
      unit: 's',
      targets: quantiles(
        'loyalty_http_request_duration_seconds',
        `service="gateway",route=~"${EARN_ROUTES.join('|')}"`,
        '',
        'earn',
      ),
    },
    {
      title: 'NATS round trip from the gateway, p99 by operation',
      description: 'The request/reply to the owning service as the gateway saw it (network, queueing and handler).',
      unit: 's',
      targets: [
        q(
          `histogram_quantile(0.99, sum by (to, operation, le) (rate(loyalty_nats_client_request_duration_seconds_bucket{service="gateway"}[${RATE}])))`,
          '{{to}} {{operation}}',
        ),
      ],
    },
  ],
};

const services: DashboardSpec = {
  uid: 'loyalty-services',
  title: 'Loyalty · Services',
  description:
    'One service at a time: its NATS handlers (latency, errors), the NATS round trip the gateway sees, its database pool, its consumers and outbox, its process.',
  variables: [
    {
      name: 'service',
      label: 'Service',
      query: 'label_values(loyalty_nats_request_duration_seconds_count, service)',
    },
  ],
  panels: [
    row('Handlers'),
    {
      title: 'Requests per second by operation',
      unit: 'reqps',
      targets: [
        q(
          `sum by (operation) (rate(loyalty_nats_request_duration_seconds_count{service="$service"}[${RATE}]))`,
          '{{operation}}',
        ),
      ],
    },
    {
      title: 'Failure replies by operation and code',
      unit: 'reqps',
      stack: true,
      targets: [
        q(
          `sum by (operation, code) (rate(loyalty_nats_request_errors_total{service="$service"}[${RATE}]))`,
          '{{operation}} {{code}}',
        ),
      ],
    },
    {
      title: 'Handler latency p99 by operation',
      description: 'From the request message to its reply, in the service.',
      unit: 's',
      targets: [
        q(
          `histogram_quantile(0.99, sum by (operation, le) (rate(loyalty_nats_request_duration_seconds_bucket{service="$service"}[${RATE}])))`,
          '{{operation}}',
        ),
      ],
    },
    {
      title: 'NATS request latency p99 (the gateway’s round trip to this service)',
      description: 'The same requests seen from the gateway: the handler plus NATS and queueing.',
      unit: 's',
      targets: [
        q(
          `histogram_quantile(0.99, sum by (operation, le) (rate(loyalty_nats_client_request_duration_seconds_bucket{to="$service"}[${RATE}])))`,
          '{{operation}}',
        ),
      ],
    },
    row('Database pool'),
    {
      title: 'Pool connections by replica',
      description: 'Busy (checked out) and idle connections against the pool size (DATABASE_POOL_SIZE).',
      unit: 'short',
      targets: [
        q(`sum by (instance) (loyalty_db_pool_connections{service="$service",state="busy"})`, 'busy {{instance}}'),
        q(`sum by (instance) (loyalty_db_pool_connections{service="$service",state="idle"})`, 'idle {{instance}}'),
        q(`max(loyalty_db_pool_max{service="$service"})`, 'size'),
      ],
    },
    {
      title: 'Queries waiting for a connection',
      unit: 'short',
      targets: [q(`sum by (instance) (loyalty_db_pool_waiting{service="$service"})`, '{{instance}}')],
    },
    row('Events'),
    {
      title: 'Consumer lag (events pending) by consumer',
      unit: 'short',
      targets: [q(`max by (consumer) (loyalty_consumer_pending{service="$service"})`, '{{consumer}}')],
    },
    {
      title: 'Outbox backlog and oldest age',
      unit: 'short',
      targets: [
        q(`max(loyalty_outbox_backlog{service="$service"})`, 'rows'),
        q(`max(loyalty_outbox_oldest_age_seconds{service="$service"})`, 'oldest (s)'),
      ],
    },
    row('Process'),
    {
      title: 'CPU (cores) by replica',
      unit: 'short',
      targets: [q(`sum by (instance) (rate(process_cpu_seconds_total{service="$service"}[${RATE}]))`, '{{instance}}')],
    },
    {
      title: 'Resident memory by replica',
      unit: 'bytes',
      targets: [q(`max by (instance) (process_resident_memory_bytes{service="$service"})`, '{{instance}}')],
    },
    {
      title: 'Event loop delay p99 by replica',
      unit: 's',
      targets: [q(`max by (instance) (nodejs_eventloop_lag_p99_seconds{service="$service"})`, '{{instance}}')],
    },
    {
      title: 'Replica cache hit ratio',
      unit: 'percentunit',
      targets: [
        q(
          `sum by (cache) (rate(loyalty_cache_lookups_total{service="$service",result="hit"}[${RATE}]))
/
sum by (cache) (rate(loyalty_cache_lookups_total{service="$service"}[${RATE}]))`,
          '{{cache}}',
        ),
      ],
    },
  ],
};

const events: DashboardSpec = {
  uid: 'loyalty-events',
  title: 'Loyalty · Event pipeline',
  description:
    'Outbox relays, JetStream consumers and webhook delivery. Gauges read from the database or JetStream are the same in every replica: aggregated with max.',
  variables: [],
  panels: [
    row('Outbox and consumers'),
    {
      title: 'JetStream consumer lag by consumer',
      description: 'Events not yet delivered to or acknowledged by each durable consumer.',
      unit: 'short',
      targets: [q('max by (consumer) (loyalty_consumer_pending)', '{{consumer}}')],
    },
    {
      title: 'Outbox backlog by service',
      unit: 'short',
      targets: [q('max by (service) (loyalty_outbox_backlog)', '{{service}}')],
    },
    {
      title: 'Outbox oldest unpublished row by service',
      unit: 's',
      targets: [q('max by (service) (loyalty_outbox_oldest_age_seconds)', '{{service}}')],
    },
    {
      title: 'Notification mails waiting (identity)',
      unit: 'short',
      targets: [q('max(loyalty_outgoing_mails)', 'mails')],
    },
    row('Webhooks'),
    {
      title: 'Webhook backlog by tenant (top tenants and other)',
      unit: 'short',
      stack: true,
      targets: [q('max by (tenant) (loyalty_webhook_backlog)', '{{tenant}}')],
    },
    {
      title: 'Oldest pending webhook delivery by tenant',
      unit: 's',
      targets: [q('max by (tenant) (loyalty_webhook_oldest_pending_age_seconds)', '{{tenant}}')],
    },
    {
      title: 'Delivery outcomes (final)',
      unit: 'ops',
      stack: true,
      targets: [q(`sum by (outcome) (rate(loyalty_webhook_deliveries_total[${RATE}]))`, '{{outcome}}')],
    },
    {
      title: 'Attempts by outcome',
      unit: 'ops',
      stack: true,
      targets: [q(`sum by (outcome) (rate(loyalty_webhook_attempts_total[${RATE}]))`, '{{outcome}}')],
    },
    {
      title: 'Event to delivery by the attempt that delivered it',
      description: 'The webhook service level: 99 % of first-attempt deliveries within 60 s of the event.',
      unit: 's',
      targets: [
        q(
          `histogram_quantile(0.99, sum by (attempt, le) (rate(loyalty_webhook_event_to_delivery_seconds_bucket[${RATE}])))`,
          'p99 {{attempt}}',
        ),
        q(
          `histogram_quantile(0.5, sum by (attempt, le) (rate(loyalty_webhook_event_to_delivery_seconds_bucket[${RATE}])))`,
          'p50 {{attempt}}',
        ),
      ],
    },
    {
      title: 'Attempt duration',
      unit: 's',
      targets: quantiles('loyalty_webhook_attempt_duration_seconds', '', '', ''),
    },
    {
      title: 'Endpoints disabled (per hour)',
      unit: 'short',
      targets: [q('sum(increase(loyalty_webhook_endpoints_disabled_total[1h]))', 'disabled')],
    },
    {
      title: 'Secrets not yet under the current SECRETS_KEY',
      unit: 'short',
      targets: [q('max(loyalty_webhook_secrets_pending)', 'pending')],
    },
  ],
};

const earnOps = 'points.earn|cashback.earn';
const redeemOps = 'points.redeem|cashback.redeem';
const business: DashboardSpec = {
  uid: 'loyalty-business',
  title: 'Loyalty · Business',
  description:
    'Earns, redemptions, refunds and transfers answered by the ledger, the claims waiting for staff, and lot expiries.',
  variables: [],
  panels: [
    {
      title: 'Earns per second',
      unit: 'ops',
      stack: true,
      targets: [
        q(
          `sum by (operation) (rate(loyalty_nats_request_duration_seconds_count{service="ledger",operation=~"${earnOps}",outcome="ok"}[${RATE}]))`,
          '{{operation}}',
        ),
      ],
    },
    {
      title: 'Redemptions per second',
      unit: 'ops',
      stack: true,
      targets: [
        q(
          `sum by (operation) (rate(loyalty_nats_request_duration_seconds_count{service="ledger",operation=~"${redeemOps}",outcome="ok"}[${RATE}]))`,
          '{{operation}}',
        ),
      ],
    },
    {
      title: 'Earns in the last 24 h',
      type: 'stat',
      unit: 'short',
      width: 6,
      targets: [
        q(
          `sum(increase(loyalty_nats_request_duration_seconds_count{service="ledger",operation=~"${earnOps}",outcome="ok"}[24h]))`,
          'earns',
        ),
      ],
    },
    {
      title: 'Redemptions in the last 24 h',
      type: 'stat',
      unit: 'short',
      width: 6,
      targets: [
        q(
          `sum(increase(loyalty_nats_request_duration_seconds_count{service="ledger",operation=~"${redeemOps}",outcome="ok"}[24h]))`,
          'redemptions',
        ),
      ],
    },
    {
      title: 'Claims pending (waiting for staff)',
      type: 'stat',
      unit: 'short',
      width: 6,
      targets: [q('max(loyalty_claims_pending)', 'pending')],
    },
    {
      title: 'Lots expired in the last 24 h',
      type: 'stat',
      unit: 'short',
      width: 6,
      targets: [q('sum(increase(loyalty_ledger_lots_expired_total[24h]))', 'expired')],
    },
    {
      title: 'Refunds and transfers per second',
      unit: 'ops',
      targets: [
        q(
          `sum by (operation) (rate(loyalty_nats_request_duration_seconds_count{service="ledger",operation=~"points.refund|cashback.refund|points.transfer",outcome="ok"}[${RATE}]))`,
          '{{operation}}',
        ),
      ],
    },
    {
      title: 'Refused earns and redemptions by code',
      description: 'Business refusals (insufficient points, limits, unknown cards...) and faults alike.',
      unit: 'ops',
      stack: true,
      targets: [
        q(
          `sum by (operation, code) (rate(loyalty_nats_request_errors_total{service="ledger",operation=~"${earnOps}|${redeemOps}"}[${RATE}]))`,
          '{{operation}} {{code}}',
        ),
      ],
    },
    {
      title: 'Claims pending over time',
      unit: 'short',
      targets: [q('max(loyalty_claims_pending)', 'pending')],
    },
    {
      title: 'Lot expiries and expiry warnings (per hour)',
      unit: 'short',
      targets: [
        q('sum(increase(loyalty_ledger_lots_expired_total[1h]))', 'expired'),
        q('sum(increase(loyalty_ledger_lots_warned_total[1h]))', 'warned'),
      ],
    },
  ],
};

export const dashboardSpecs: DashboardSpec[] = [api, services, events, business];

/** The Grafana dashboard JSON (schema 39) of a spec. */
export function dashboardJson(spec: DashboardSpec): Record<string, unknown> {
  let id = 0;
  let x = 0;
  let y = 0;
  let rowHeight = 0;
  const panels = spec.panels.map((p) => {
    id += 1;
    const type = p.type ?? 'timeseries';
    const w = type === 'row' ? 24 : (p.width ?? 12);
    const h = type === 'row' ? 1 : type === 'stat' ? 5 : 8;
    if (x + w > 24 || type === 'row') {
      x = 0;
      y += rowHeight;
      rowHeight = 0;
    }
    const gridPos = { h, w, x, y };
    x += w;
    rowHeight = Math.max(rowHeight, h);
    if (type === 'row') {
      x = 24; // the next panel starts a new line
      return { id, type, title: p.title, collapsed: false, gridPos, panels: [] };
    }
    return {
      id,
      type,
      title: p.title,
      ...(p.description ? { description: p.description } : {}),
      datasource: DS,
      gridPos,
      targets: p.targets.map((t, i) => ({
        refId: String.fromCharCode(65 + i),
        datasource: DS,
        expr: t.expr,
        ...(t.legend ? { legendFormat: t.legend } : {}),
        range: true,
      })),
      fieldConfig: {
        defaults: {
          unit: p.unit ?? 'short',
          ...(type === 'timeseries'
            ? {
                custom: {
                  drawStyle: 'line',
                  lineWidth: 1,
                  fillOpacity: p.stack ? 30 : 10,
                  stacking: { mode: p.stack ? 'normal' : 'none' },
                },
              }
            : {}),
        },
        overrides: [],
      },
      options:
        type === 'stat'
          ? {
              reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
              colorMode: 'value',
              graphMode: 'area',
            }
          : {
              legend: { displayMode: 'list', placement: 'bottom', showLegend: true },
              tooltip: { mode: 'multi', sort: 'desc' },
            },
    };
  });
  return {
    uid: spec.uid,
    title: spec.title,
    description: spec.description,
    tags: ['loyalty'],
    timezone: 'utc',
    editable: true,
    graphTooltip: 1,
    schemaVersion: 39,
    version: 1,
    refresh: '30s',
    time: { from: 'now-6h', to: 'now' },
    templating: {
      list: [
        {
          name: 'datasource',
          label: 'Data source',
          type: 'datasource',
          query: 'prometheus',
          current: {},
          hide: 0,
          refresh: 1,
          options: [],
        },
        ...spec.variables.map((v) => ({
          name: v.name,
          label: v.label,
          type: 'query',
          datasource: DS,
          definition: v.query,
          query: { query: v.query, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
          refresh: 2,
          sort: 1,
          current: {},
          options: [],
          hide: 0,
          ...(v.multi ? { multi: true, includeAll: true, allValue: '.*' } : { multi: false, includeAll: false }),
        })),
      ],
    },
    annotations: { list: [] },
    panels,
  };
}
