import { toCents } from './money.ts';

/** A finite amount with at most two decimals (a currency amount). */
function isMoney(v: number): boolean {
  return Number.isFinite(v) && Math.abs(v) < 1e13 && Math.abs(Math.round(v * 100) - v * 100) < 1e-6;
}

/**
 * Tiers of a card: the ladder, how members qualify, and the pure decisions on it (which tier a
 * qualifying total reaches, what a review keeps). Amounts are the card's qualifying unit: points,
 * or cents (amount_spent, and points_earned on a cashback card, which earns cents).
 */

export const TIER_METRICS = ['points_earned', 'amount_spent'] as const;
export type TierMetric = (typeof TIER_METRICS)[number];
export const TIER_WINDOWS = ['rolling', 'calendar_year', 'anniversary', 'lifetime'] as const;
export type TierWindow = (typeof TIER_WINDOWS)[number];

export const MAX_TIERS = 10;
/** The largest threshold (points or cents): as large as a balance may be. */
export const MAX_THRESHOLD = 1_000_000_000_000;

export interface TierStep {
  rank: number;
  name: string;
  description: string | null;
  /** Points or cents. */
  entry: number;
  retain: number;
}

/** A card's ladder and qualification settings (steps lowest rank first). */
export interface TierLadder {
  metric: TierMetric;
  countBonuses: boolean;
  window: TierWindow;
  windowDays: number;
  validityDays: number | null;
  warningDays: number;
  version: number;
  updatedAt: Date;
  steps: TierStep[];
}

/** The settings as a PUT writes them (thresholds in the API's units). */
export interface TierSettingsDraft {
  tiers: { name: string; rank: number; entry_threshold: number; retain_threshold: number; description?: string }[];
  metric: string;
  count_bonuses: boolean;
  window: string;
  window_days: number;
  validity_days: number | null;
  warning_days: number;
}

export interface Problem {
  field: string;
  message: string;
}

/** Whether a ladder on this card counts cents (currency units in the API) rather than points. */
export function countsMoney(metric: TierMetric, rewardSystem: 'points' | 'cashback'): boolean {
  return metric === 'amount_spent' || rewardSystem === 'cashback';
}

function isMetric(v: string): v is TierMetric {
  return TIER_METRICS.some((m) => m === v);
}
function isWindow(v: string): v is TierWindow {
  return TIER_WINDOWS.some((w) => w === v);
}
const wholeIn = (v: number, min: number, max: number) => Number.isInteger(v) && v >= min && v <= max;

type Complain = (field: string, message: string) => void;

/** The settings beyond the steps. */
function checkSettings(d: TierSettingsDraft, no: Complain): void {
  if (!isMetric(d.metric)) no('metric', 'must be points_earned or amount_spent');
  if (!isWindow(d.window)) no('window', 'must be rolling, calendar_year, anniversary or lifetime');
  if (!wholeIn(d.window_days, 1, 3660)) no('window_days', 'must be a whole number of days from 1 to 3660');
  if (d.validity_days !== null && !wholeIn(d.validity_days, 1, 3660))
    no('validity_days', 'must be null or a whole number of days from 1 to 3660');
  if (!wholeIn(d.warning_days, 0, 365)) no('warning_days', 'must be a whole number of days from 0 to 365');
  if (d.tiers.length > MAX_TIERS) no('tiers', `must have at most ${MAX_TIERS} tiers`);
}

/** A threshold in the ladder's unit (points, or cents from currency units); undefined: refused. */
function threshold(v: number, money: boolean, field: string, no: Complain): number | undefined {
  if (money) {
    if (isMoney(v) && v >= 0 && toCents(v) <= MAX_THRESHOLD) return toCents(v);
    no(field, 'must be an amount of at least 0 with at most two decimals');
    return undefined;
  }
  if (wholeIn(v, 0, MAX_THRESHOLD)) return v;
  no(field, 'must be a whole number of points of at least 0');
  return undefined;
}

/** The steps as given, each checked on its own (ranks and names unique, retain at most entry). */
function checkSteps(d: TierSettingsDraft, money: boolean, no: Complain): TierStep[] {
  const ranks = new Set<number>();
  const names = new Set<string>();
  return d.tiers.map((t, i) => {
    const at = `tiers[${i}]`;
    if (!wholeIn(t.rank, -1_000_000, 1_000_000)) no(`${at}.rank`, 'must be a whole number');
    else if (ranks.has(t.rank)) no(`${at}.rank`, 'must be unique in the ladder');
    ranks.add(t.rank);
    const key = t.name.toLowerCase();
    if (names.has(key)) no(`${at}.name`, 'must be unique in the ladder');
    names.add(key);
    const entry = threshold(t.entry_threshold, money, `${at}.entry_threshold`, no);
    const retain = threshold(t.retain_threshold, money, `${at}.retain_threshold`, no);
    if (entry !== undefined && retain !== undefined && retain > entry)
      no(`${at}.retain_threshold`, 'must be at most entry_threshold');
    return { rank: t.rank, name: t.name, description: t.description ?? null, entry: entry ?? 0, retain: retain ?? 0 };
  });
}

/** The ladder as a whole: the lowest rank enters at 0, entries rise with the rank. */
function checkOrder(steps: TierStep[], sorted: TierStep[], no: Complain): void {
  sorted.forEach((s, k) => {
    const field = `tiers[${steps.indexOf(s)}].entry_threshold`;
    const below = sorted[k - 1];
    if (below === undefined && s.entry !== 0) no(field, 'must be 0 for the lowest tier');
    if (below !== undefined && s.entry <= below.entry) no(field, 'must be above the entry threshold of the rank below');
  });
}

/** The ladder a PUT asks for, or every problem with it (each naming its field). */
export function checkedLadder(
  d: TierSettingsDraft,
  rewardSystem: 'points' | 'cashback',
): { ladder: Omit<TierLadder, 'version' | 'updatedAt'> } | { problems: Problem[] } {
  const problems: Problem[] = [];
  const no: Complain = (field, message) => problems.push({ field, message });
  checkSettings(d, no);
  const steps = checkSteps(d, isMetric(d.metric) && countsMoney(d.metric, rewardSystem), no);
  const sorted = [...steps].sort((a, b) => a.rank - b.rank);
  if (problems.length === 0) checkOrder(steps, sorted, no);
  if (problems.length > 0 || !isMetric(d.metric) || !isWindow(d.window)) return { problems };
  return {
    ladder: {
      metric: d.metric,
      countBonuses: d.count_bonuses,
      window: d.window,
      windowDays: d.window_days,
      validityDays: d.validity_days,
      warningDays: d.warning_days,
      steps: sorted,
    },
  };
}

/** The lowest rank of a ladder (every member starts there). */
export function lowestRank(ladder: Pick<TierLadder, 'steps'>): number {
  return ladder.steps[0]?.rank ?? 0;
}

/** The highest step whose entry threshold `total` meets (the lowest when none). */
export function stepFor(ladder: Pick<TierLadder, 'steps'>, total: number): TierStep {
  let best = lowestStep(ladder);
  for (const s of ladder.steps) if (s.entry <= Math.max(total, 0)) best = s;
  return best;
}

function lowestStep(ladder: Pick<TierLadder, 'steps'>): TierStep {
  const step = ladder.steps[0];
  if (step === undefined) throw new Error('a ladder without tiers');
  return step;
}

/** The step of `rank`, or (a rank no longer on the ladder) the highest below it, or the lowest. */
export function stepOfRank(ladder: Pick<TierLadder, 'steps'>, rank: number | undefined): TierStep {
  let best = lowestStep(ladder);
  if (rank === undefined) return best;
  for (const s of ladder.steps) if (s.rank <= rank) best = s;
  return best;
}

export function nextStep(ladder: Pick<TierLadder, 'steps'>, rank: number): TierStep | undefined {
  return ladder.steps.find((s) => s.rank > rank);
}

/**
 * What a member qualifies with on a movement: an earn counts its purchase (amount_spent), or what
 * it earned (points_earned; only the base earn when bonuses do not count). A bonus credit
 * (referral, adjustment, event) counts only for points_earned with bonuses counted.
 */
export function qualifyingOfEarn(
  ladder: Pick<TierLadder, 'metric' | 'countBonuses'>,
  e: { purchaseCents: number; amount: number; base: number },
): number {
  if (ladder.metric === 'amount_spent') return e.purchaseCents;
  return ladder.countBonuses ? e.amount : Math.min(e.base, e.amount);
}

export function qualifyingOfBonus(ladder: Pick<TierLadder, 'metric' | 'countBonuses'>, amount: number): number {
  return ladder.metric === 'points_earned' && ladder.countBonuses ? amount : 0;
}
