import { useState } from 'preact/hooks';
import { call, session, type Answer, type Me } from '../api.ts';
import { Notice, PageTitle, problemText } from '../components/ui.tsx';

const TENANT_KEY = 'loyalty.staff.tenant';

/** The tenant to sign in to: `?tenant=N` in the console's address, else the last one used here. */
function initialTenant(): string {
  return new URLSearchParams(location.search).get('tenant') ?? localStorage.getItem(TENANT_KEY) ?? '';
}

/**
 * Sign-in with email and a one-time code mailed to the staff user. A sandbox tenant's code is
 * shown here (the API returns it), so a test tenant can be tried without a mailbox.
 */
export function SignIn(props: { onSignedIn: (me: Me) => void; notice?: string }) {
  const [tenant, setTenant] = useState(initialTenant());
  const [email, setEmail] = useState('');
  const [code, setCode] = useState('');
  const [step, setStep] = useState<'email' | 'code'>('email');
  const [sent, setSent] = useState<Answer<'staff.auth.request_code'>>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function requestCode(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const r = await call('staff.auth.request_code', { body: { tenant_id: Number(tenant), email } });
      localStorage.setItem(TENANT_KEY, tenant);
      setSent(r);
      setStep('code');
    } catch (err) {
      setError(problemText(err));
    } finally {
      setBusy(false);
    }
  }

  async function verify(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const r = await call('staff.auth.verify_code', { body: { tenant_id: Number(tenant), email, code: code.trim() } });
      session.set(r.staff_token);
      props.onSignedIn(await call('staff.me'));
    } catch (err) {
      setError(problemText(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" tabIndex={-1} class="sign-in">
      <PageTitle>Staff console</PageTitle>
      <p class="lead">Sign in with your work email. We mail you a one-time code.</p>
      {props.notice && <Notice kind="error">{props.notice}</Notice>}
      {step === 'email' ? (
        <form onSubmit={requestCode} class="stack">
          <label>
            Merchant (tenant) number
            <input
              name="tenant"
              inputMode="numeric"
              pattern="[0-9]+"
              required
              value={tenant}
              onInput={(e) => setTenant(e.currentTarget.value)}
            />
          </label>
          <label>
            Email
            <input
              name="email"
              type="email"
              autoComplete="username"
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
          </label>
          <button type="submit" class="primary" disabled={busy}>
            Send me a code
          </button>
        </form>
      ) : (
        <form onSubmit={verify} class="stack">
          <Notice kind="ok">{sent?.message}</Notice>
          {sent?.code && (
            <p class="sandbox-code" data-testid="sandbox-code">
              Sandbox tenant: your code is <strong>{sent.code}</strong>
            </p>
          )}
          <label>
            One-time code
            <input
              name="code"
              inputMode="numeric"
              autoComplete="one-time-code"
              pattern="[0-9]{6}"
              maxLength={6}
              required
              value={code}
              onInput={(e) => setCode(e.currentTarget.value)}
            />
          </label>
          <button type="submit" class="primary" disabled={busy}>
            Sign in
          </button>
          <button type="button" class="link" onClick={() => (setStep('email'), setCode(''))}>
            Use another email
          </button>
        </form>
      )}
      {error && <Notice kind="error">{error}</Notice>}
    </main>
  );
}
