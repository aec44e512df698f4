/**
 * Exact money and rates. Amounts are integer cents, rates are decimals held as a scaled integer
 * (`units / 10^scale`); every formula works on BigInt, so no binary floating point takes part in
 * any arithmetic. JSON numbers are converted once at the edge (`toCents`, `decimal`) and back
 * (`fromCents`).
 */

/** A decimal number held exactly: value = units / 10^scale. */
export interface Decimal {
  units: bigint;
  scale: number;
}

/**
 * A JSON number with at most `scale` decimals as an exact decimal. The contract has already
 * checked the number of decimals, so rounding to `scale` digits only removes the binary noise of
 * the JSON number (0.30000000000000004 is 0.30).
 */
export function decimal(value: number, scale: number): Decimal {
  const text = value.toFixed(scale);
  const negative = text.startsWith('-');
  const digits = text.replace('-', '').replace('.', '');
  const units = BigInt(digits);
  return { units: negative ? -units : units, scale };
}

/** A decimal from its exact text, e.g. Postgres numeric '2.5000'. */
export function parseDecimal(text: string): Decimal {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m) throw new Error(`not a decimal: ${text}`);
  const fraction = m[3] ?? '';
  const units = BigInt(`${m[2]}${fraction}`);
  return { units: m[1] ? -units : units, scale: fraction.length };
}

/** The decimal's text (for Postgres numeric parameters). */
export function decimalText(d: Decimal): string {
  const negative = d.units < 0n;
  const digits = (negative ? -d.units : d.units).toString().padStart(d.scale + 1, '0');
  const whole = d.scale === 0 ? digits : `${digits.slice(0, -d.scale)}.${digits.slice(-d.scale)}`;
  return negative ? `-${whole}` : whole;
}

/** The decimal as a JSON number (the nearest double, which prints as the decimal). */
export function decimalNumber(d: Decimal): number {
  return Number(decimalText(d));
}

/**
 * The largest balance an account may hold (cents on a cashback card, points on a points card):
 * 10^15, i.e. 10 trillion in currency units. Balances and journal amounts are int8 in Postgres
 * but numbers in JS, exact only up to 2^53 - 1 (~9.007 x 10^15); keeping every balance (and so
 * every credit) at most 10^15 keeps them all exact, and a sum of two never overflows int8. A
 * credit that would pass it is refused (balance_limit_exceeded) in the posting statement itself.
 */
export const MAX_BALANCE = 1_000_000_000_000_000;

/** Money as a JSON number -> integer cents. */
export function toCents(amount: number): number {
  const cents = decimal(amount, 2).units;
  if (cents > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('amount too large');
  return Number(cents);
}

/** Integer cents -> a JSON number with (at most) two decimals. */
export function fromCents(cents: number): number {
  return decimalNumber({ units: BigInt(cents), scale: 2 });
}

/** numerator / denominator rounded half-up (both non-negative). */
export function divideHalfUp(numerator: bigint, denominator: bigint): bigint {
  return (numerator * 2n + denominator) / (denominator * 2n);
}

/** numerator / denominator rounded down (both non-negative). */
export function divideFloor(numerator: bigint, denominator: bigint): bigint {
  return numerator / denominator;
}

/** 10^0 .. 10^18: the scales of cents, rates and ratios (every rule and formula asks for one). */
const POWERS_OF_TEN = Array.from({ length: 19 }, (_, n) => 10n ** BigInt(n));

export const pow10 = (n: number): bigint => POWERS_OF_TEN[n] ?? 10n ** BigInt(n);
