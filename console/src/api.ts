/**
 * The staff API as the console calls it: same origin, `Authorization: Bearer <staff token>`, the
 * envelope unwrapped (a failure is thrown as an ApiError with the catalogue code), a fresh
 * Idempotency-Key for every action the staff user takes.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

const TOKEN_KEY = 'loyalty.staff.token';

/** The staff token lives in this tab's session storage: closing the tab signs out. */
export const session = {
  get token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  set(token: string): void {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  clear(): void {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

/** Called when the server says the token no longer works (expired, signed out elsewhere, deactivated). */
let onSignedOut: () => void = () => undefined;
export function whenSignedOut(fn: () => void): void {
  onSignedOut = fn;
}

async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown, idempotent = false): Promise<T> {
  const headers: Record<string, string> = {};
  const token = session.token;
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idempotent) headers['idempotency-key'] = crypto.randomUUID();
  let res: Response;
  try {
    res = await fetch(`/staff/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The server cannot be reached; check the connection and try again.');
  }
  const json = (await res.json().catch(() => null)) as
    | { success: true; data: T }
    | { success: false; error: { code: string; message: string } & Record<string, unknown> }
    | null;
  if (!json) throw new ApiError(res.status, 'bad_response', `The server answered ${res.status}.`);
  if (json.success) return json.data;
  const { code, message, ...details } = json.error;
  if (code === 'invalid_staff_token' || code === 'staff_token_required') {
    session.clear();
    onSignedOut();
  }
  throw new ApiError(res.status, code, message, details);
}

/** A query string of the defined, non-empty values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const api = {
  get: <T>(path: string) => call<T>('GET', path),
  post: <T>(path: string, body: unknown = {}) => call<T>('POST', path, body),
  /** A change: sent with its own Idempotency-Key, so a retried request never acts twice. */
  act: <T>(path: string, body: unknown = {}) => call<T>('POST', path, body, true),
};

// ---- the shapes the console reads (the staff API's OpenAPI document has them all) -----------------

export type Role = 'staff' | 'manager';
export interface StaffUser {
  id: number;
  email: string;
  name: string;
  role: Role;
  active: boolean;
  created_at: string;
  last_sign_in_at: string | null;
}
export interface Me {
  staff: StaffUser;
  tenant: { id: number; name: string; sandbox: boolean };
}
export interface Card {
  id: number;
  name: string;
  reward_system: 'points' | 'cashback';
  currency: string;
}
export interface Pagination {
  limit: number;
  offset: number;
  total: number;
  has_more: boolean;
}
export interface Claim {
  id: number;
  status: 'pending' | 'approved' | 'rejected' | 'expired';
  member: { id: number; name: string | null; email: string | null };
  card_id: number;
  reward: { id: number; name: string; points_cost: number };
  member_note: string | null;
  staff_note: string | null;
  points_deducted: number | null;
  created_at: string;
  member_points_balance: number | null;
}
export interface Member {
  id: number;
  name: string;
  email: string | null;
  phone: string | null;
  is_active: boolean;
  created_at: string;
}
export interface Balance {
  card_id: number;
  card_name: string;
  reward_system: 'points' | 'cashback';
  currency: string;
  points_balance?: number;
  cashback_balance?: number;
  pending_points?: number;
  held_points?: number;
  pending_cashback?: number;
  held_cashback?: number;
  next_expiries?: { points?: number; amount?: number; expires_at: string }[];
}
export interface AuditRow {
  seq: number;
  occurred_at: string;
  actor: { type: 'staff'; email: string; role: Role } | { type: 'app'; id: string } | { type: 'operator' };
  action: string;
  target: Record<string, number | string>;
  amounts: Record<string, number>;
  details: Record<string, unknown>;
  request_id: string;
  service: string;
  hash: string;
}
export interface Verification {
  valid: boolean;
  rows_checked: number;
  head: { seq: number; hash: string };
  problem: { seq: number; reason: string } | null;
}
