import { afterAll, beforeAll, expect, it } from 'vitest';
import { apiClient, startTestSystem, type TestSystem } from './support/system.ts';

let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem();
});
afterAll(async () => sys?.stop());

it('registers and verifies', async () => {
  const t = await sys.tenant();
  const api = apiClient(sys.url, t);
  const r = await api('POST', '/api/v1/auth/member/register', {
    body: { name: 'Jane', email: 'jane@example.com', phone: '+15551234567' },
  });
  console.log(JSON.stringify(r.body));
  expect(r.status).toBe(200);
  const code = await sys.mail.codeFor('jane@example.com');
  const v = await api('POST', '/api/v1/auth/member/verify-otp', { body: { email: 'jane@example.com', code } });
  console.log(JSON.stringify(v.body));
  expect(v.status).toBe(200);
});
