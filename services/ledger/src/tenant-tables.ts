import type { TenantTable } from '@loyalty/runtime';

/** Rows of the tenant's cards, for tables that name the card only. */
const CARDS = 'card_id IN (SELECT id FROM ledger.cards WHERE tenant_id = $1)';

/** The ledger's tables holding a tenant's data, children first (the operator's export and purge of a tenant). */
export const ledgerTenantTables: TenantTable[] = [
  {
    table: 'hold_lots',
    where: 'hold_id IN (SELECT id FROM ledger.holds WHERE tenant_id = $1)',
    key: 'hold_id, lot_id',
  },
  {
    table: 'journal_rules',
    where: 'journal_id IN (SELECT id FROM ledger.journal WHERE tenant_id = $1)',
    key: 'journal_id',
  },
  { table: 'holds' },
  { table: 'lots' },
  { table: 'transfers' },
  { table: 'journal' },
  { table: 'merged_members', key: 'source_member_id' },
  { table: 'member_events', key: 'card_id, reference' },
  {
    table: 'rule_member_usage',
    where: 'rule_id IN (SELECT id FROM ledger.rules WHERE tenant_id = $1)',
    key: 'rule_id, member_id, period_key',
  },
  {
    table: 'rule_versions',
    where: 'rule_id IN (SELECT id FROM ledger.rules WHERE tenant_id = $1)',
    key: 'rule_id, version',
  },
  { table: 'rules' },
  // A PIN's hash is a secret: exported without it.
  { table: 'member_pins', key: 'tenant_id, member_id', omit: ['pin_hash'] },
  { table: 'tier_days', where: CARDS, key: 'card_id, member_id, day' },
  { table: 'member_tiers', key: 'card_id, member_id' },
  { table: 'tiers', where: CARDS, key: 'card_id, rank' },
  { table: 'tier_ladders', key: 'card_id' },
  { table: 'report_active', where: CARDS, key: 'card_id, day, member_id' },
  { table: 'report_active_periods', where: CARDS, key: 'card_id, period, start, member_id' },
  { table: 'report_active_counts', where: CARDS, key: 'card_id, period, start' },
  { table: 'report_active_years', where: CARDS, key: 'card_id, year, member_id' },
  { table: 'report_days', key: 'card_id, day, event, reward_id' },
  { table: 'report_deltas' },
  { table: 'history_entries' },
  { table: 'accounts', key: 'card_id, member_id' },
  { table: 'rewards' },
  { table: 'cards' },
];
