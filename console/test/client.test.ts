import { describe, expect, it } from 'vitest';
import { ApiError, createStaffClient } from '../src/client.ts';

/**
 * The console's API client against a fake fetch: requests are laid out from the staff contracts,
 * and an answer is handed to a page only when the contract's response schema accepts it.
 */
interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

function fakeServer(answer: (req: Sent) => { status?: number; body: unknown }) {
  const sent: Sent[] = [];
  const store = new Map<string, string>();
  let signedOut = 0;
  const client = createStaffClient({
    fetch: async (url, init) => {
      const req: Sent = {
        url,
        method: init.method ?? 'GET',
        headers: Object.fromEntries(new Headers(init.headers).entries()),
        body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
      };
      sent.push(req);
      const { status = 200, body } = answer(req);
      return new Response(typeof body === 'string' ? body : JSON.stringify(body), {
        status,
        headers: { 'content-type': 'application/json' },
      });
    },
    storage: () => ({
      getItem: (k) => store.get(k) ?? null,
      setItem: (k, v) => void store.set(k, v),
      removeItem: (k) => void store.delete(k),
    }),
  });
  client.whenSignedOut(() => (signedOut += 1));
  return { client, sent, store, signedOut: () => signedOut };
}

const card = { id: 7, name: 'Coffee points', unique_identifier: 'coffee', reward_system: 'points', currency: 'EUR' };
const member = {
  id: 42,
  name: 'Ana Silva',
  email: 'ana@example.com',
  phone: null,
  is_active: true,
  created_at: '2026-03-14T09:00:00.000Z',
};

/** The ApiError a call rejected with. */
async function failure(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(err)}`);
  return err;
}

describe('console API client', () => {
  it('lays a request out from the contract and returns the checked answer', async () => {
    const { client, sent } = fakeServer(() => ({ body: { success: true, data: { member } } }));
    client.session.set('tok-1');
    const r = await client.call('staff.members.find', { query: { email: 'ana@example.com' } });
    expect(r.member.name).toBe('Ana Silva');
    expect(sent[0]).toMatchObject({
      url: '/staff/v1/members?email=ana%40example.com',
      method: 'GET',
      headers: { authorization: 'Bearer tok-1' },
      body: undefined,
    });
    expect(sent[0]!.headers['idempotency-key']).toBeUndefined();
  });

  it('fills path parameters and sends a fresh Idempotency-Key with each change', async () => {
    const adjustment = {
      transaction_id: 9,
      card_id: 7,
      member_id: 42,
      direction: 'add',
      points: 25,
      previous_balance: 150,
      new_balance: 175,
      reason: 'Machine was down',
      created_at: '2026-03-14T09:00:00.000Z',
    };
    const { client, sent } = fakeServer(() => ({ body: { success: true, data: { adjustment } } }));
    const body = { card_id: 7, member_id: 42, direction: 'add', points: 25, reason: 'Machine was down' } as const;
    expect((await client.call('staff.adjustments.create', { body })).adjustment.new_balance).toBe(175);
    await client.call('staff.adjustments.create', { body });
    expect(sent.map((s) => [s.method, s.url])).toEqual([
      ['POST', '/staff/v1/adjustments'],
      ['POST', '/staff/v1/adjustments'],
    ]);
    expect(sent[0]!.body).toEqual(body);
    expect(sent[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]!.headers['idempotency-key']).not.toBe(sent[0]!.headers['idempotency-key']);

    const team = fakeServer(() => ({
      body: { success: false, error: { code: 'staff_not_found', message: 'No such staff user.' } },
      status: 404,
    }));
    const err = await failure(
      team.client.call('staff.team.update', { params: { staff_id: 5 }, body: { active: false } }),
    );
    expect(team.sent[0]).toMatchObject({ method: 'POST', url: '/staff/v1/staff/5', body: { active: false } });
    expect(err).toMatchObject({ status: 404, code: 'staff_not_found', message: 'No such staff user.' });
  });

  it('refuses an answer the contract does not describe, saying where it is wrong', async () => {
    // The card's id as a string and its reward system unknown: a page must never render this.
    const { client } = fakeServer(() => ({
      body: { success: true, data: { cards: [{ ...card, id: '7', reward_system: 'stamps' }] } },
    }));
    const err = await failure(client.call('staff.cards.list'));
    expect(err.code).toBe('unexpected_answer');
    expect(err.message).toMatch(/^The server's answer to GET \/staff\/v1\/cards does not match the staff API contract/);
    expect(err.message).toContain('cards.0.id:');
    expect(err.message).toContain('cards.0.reward_system:');
    expect(err.message).toContain('Reload the page');
  });

  it('refuses a missing field and a malformed change answer, and says the change may have happened', async () => {
    const { member: _dropped, ...noMember } = { member };
    const find = fakeServer(() => ({ body: { success: true, data: noMember } }));
    expect((await failure(find.client.call('staff.members.get', { params: { member_id: 42 } }))).message).toContain(
      'member:',
    );
    const approve = fakeServer(() => ({ body: { success: true, data: { claim_request: { id: 3 } } } }));
    const err = await failure(approve.client.call('staff.claims.approve', { params: { request_id: 3 }, body: {} }));
    expect(err.code).toBe('unexpected_answer');
    expect(err.message).toMatch(/\(and \d+ more\)/);
    expect(err.message).toContain('The change may have been made: reload to see.');
  });

  it('refuses an answer that is not the envelope, and one that is not JSON', async () => {
    const bare = fakeServer(() => ({ body: { cards: [card] } }));
    expect(await failure(bare.client.call('staff.cards.list'))).toMatchObject({ code: 'bad_response', status: 200 });
    const html = fakeServer(() => ({ status: 502, body: '<html>Bad gateway</html>' }));
    expect(await failure(html.client.call('staff.cards.list'))).toMatchObject({
      code: 'bad_response',
      status: 502,
      message: 'The server answered 502 without a readable answer.',
    });
  });

  it('forgets a token the server refused and says so once', async () => {
    const { client, signedOut } = fakeServer(() => ({
      status: 401,
      body: { success: false, error: { code: 'invalid_staff_token', message: 'Sign in again.' } },
    }));
    client.session.set('tok-old');
    expect((await failure(client.call('staff.me'))).code).toBe('invalid_staff_token');
    expect(client.session.token).toBeNull();
    expect(signedOut()).toBe(1);
  });

  it('reports an unreachable server as a network error', async () => {
    const client = createStaffClient({
      fetch: () => Promise.reject(new TypeError('fetch failed')),
      storage: () => ({ getItem: () => null, setItem: () => undefined, removeItem: () => undefined }),
    });
    expect(await failure(client.call('staff.me'))).toMatchObject({ status: 0, code: 'network_error' });
  });
});
