import { expect } from 'vitest';
import type { apiClient } from './system.ts';

type Api = ReturnType<typeof apiClient>;

let n = 0;

/** Register a member and sign in (sandbox tenant: the code comes back in the response). */
export async function signedIn(api: Api): Promise<{ id: number; email: string; token: string }> {
  n += 1;
  const address = `signin${n}.${process.pid}.${Date.now()}@example.com`;
  const phone = `+1777${String(1_000_000 + ((n * 7919 + process.pid * 31 + Date.now()) % 9_000_000)).slice(-7)}`;
  const reg = await api('POST', '/api/v1/auth/member/register', { body: { name: 'Signed In', email: address, phone } });
  expect(reg.status, JSON.stringify(reg.body)).toBe(200);
  const v = await api('POST', '/api/v1/auth/member/verify-otp', {
    body: { email: address, code: reg.body.data!.otp_code },
  });
  expect(v.status, JSON.stringify(v.body)).toBe(200);
  return {
    id: (reg.body.data!.member as { id: number }).id,
    email: address,
    token: v.body.data!.member_token as string,
  };
}
