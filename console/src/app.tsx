import { useEffect, useState } from 'preact/hooks';
import { ApiError, call, session, whenSignedOut, type Card, type Me } from './api.ts';
import { Notice, problemText } from './components/ui.tsx';
import { AdjustmentsPage } from './pages/adjustments.tsx';
import { AuditPage } from './pages/audit.tsx';
import { ClaimsPage } from './pages/claims.tsx';
import { ImportsPage } from './pages/imports.tsx';
import { MailPage } from './pages/mail.tsx';
import { ExportsPage } from './pages/exports.tsx';
import { MemberPage, MemberSearch } from './pages/members.tsx';
import { ProgrammePage } from './pages/programme.tsx';
import { ReferralsPage } from './pages/referrals.tsx';
import { RulesPage } from './pages/rules.tsx';
import { SignIn } from './pages/sign-in.tsx';
import { TeamPage } from './pages/team.tsx';
import { TiersPage } from './pages/tiers.tsx';

/** The route: the part of the address after `#`, e.g. `/members/42` or `/adjust?member=42`. */
function useRoute(): { path: string; params: URLSearchParams } {
  const read = () => {
    const [path, q] = (location.hash.replace(/^#/, '') || '/claims').split('?');
    return { path: path || '/claims', params: new URLSearchParams(q ?? '') };
  };
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

const SIGNED_OUT = new Set(['invalid_staff_token', 'staff_token_required']);

const NAV: { path: string; label: string; managers?: boolean }[] = [
  { path: '/claims', label: 'Claims' },
  { path: '/members', label: 'Members' },
  { path: '/adjust', label: 'Adjustments', managers: true },
  { path: '/programme', label: 'Programme', managers: true },
  { path: '/referrals', label: 'Referrals' },
  { path: '/tiers', label: 'Tiers' },
  { path: '/rules', label: 'Earning rules', managers: true },
  { path: '/imports', label: 'Imports', managers: true },
  { path: '/mail', label: 'Mail', managers: true },
  { path: '/exports', label: 'Exports', managers: true },
  { path: '/audit', label: 'Audit log', managers: true },
  { path: '/team', label: 'Team', managers: true },
];

export function App() {
  const [me, setMe] = useState<Me | null | undefined>(session.token ? undefined : null);
  /** The tenant's cards; undefined until loaded, since the pages choose their first card from them. */
  const [cards, setCards] = useState<Card[]>();
  const [notice, setNotice] = useState<string>();
  const [cardsProblem, setCardsProblem] = useState<string>();
  const route = useRoute();

  useEffect(() => {
    whenSignedOut(() => {
      setMe(null);
      setNotice('Your session ended (expired or signed out). Please sign in again.');
    });
    if (session.token)
      call('staff.me').then(setMe, (err: unknown) => {
        setMe(null);
        // A token the server refused already said so (whenSignedOut); anything else is shown as it is.
        if (!(err instanceof ApiError && SIGNED_OUT.has(err.code))) setNotice(problemText(err));
      });
  }, []);
  useEffect(() => {
    if (!me) return;
    setCards(undefined); // a new sign-in (perhaps of another tenant) loads its own
    call('staff.cards.list').then(
      (r) => (setCards(r.cards), setCardsProblem(undefined)),
      (err: unknown) => (setCards([]), setCardsProblem(problemText(err))),
    );
  }, [me]);

  if (me === undefined) return <p class="loading">Loading…</p>;
  if (me === null)
    return (
      <SignIn
        notice={notice}
        onSignedIn={(m) => {
          setNotice(undefined);
          setMe(m);
        }}
      />
    );
  if (cards === undefined) return <p class="loading">Loading…</p>;

  const isManager = me.staff.role === 'manager';
  const memberMatch = /^\/members\/(\d+)$/.exec(route.path);
  const page = memberMatch ? (
    <MemberPage key={memberMatch[1]} memberId={Number(memberMatch[1])} cards={cards} isManager={isManager} />
  ) : route.path === '/members' ? (
    <MemberSearch />
  ) : route.path === '/adjust' ? (
    <AdjustmentsPage
      key={route.params.get('member') ?? ''}
      cards={cards}
      isManager={isManager}
      memberId={route.params.has('member') ? Number(route.params.get('member')) : undefined}
    />
  ) : route.path === '/referrals' ? (
    <ReferralsPage key={cards.length} cards={cards} />
  ) : route.path === '/programme' ? (
    <ProgrammePage cards={cards} isManager={isManager} />
  ) : route.path === '/tiers' ? (
    <TiersPage cards={cards} isManager={isManager} />
  ) : route.path === '/rules' ? (
    <RulesPage cards={cards} isManager={isManager} />
  ) : route.path === '/imports' ? (
    <ImportsPage cards={cards} isManager={isManager} />
  ) : route.path === '/mail' ? (
    <MailPage isManager={isManager} />
  ) : route.path === '/exports' ? (
    <ExportsPage cards={cards} isManager={isManager} />
  ) : route.path === '/audit' ? (
    <AuditPage isManager={isManager} />
  ) : route.path === '/team' ? (
    <TeamPage isManager={isManager} meId={me.staff.id} />
  ) : (
    <ClaimsPage cards={cards} />
  );

  async function signOut() {
    await call('staff.auth.logout').catch(() => undefined);
    session.clear();
    setMe(null);
  }

  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <div class="brand">
          <span class="tenant">{me.tenant.name}</span>
          {me.tenant.sandbox && <span class="badge badge-sandbox">sandbox</span>}
        </div>
        <nav aria-label="Console">
          <ul>
            {NAV.filter((n) => !n.managers || isManager).map((n) => {
              const current = route.path === n.path || route.path.startsWith(`${n.path}/`);
              return (
                <li key={n.path}>
                  <a href={`#${n.path}`} aria-current={current ? 'page' : undefined}>
                    {n.label}
                  </a>
                </li>
              );
            })}
          </ul>
        </nav>
        <div class="who">
          <span>
            {me.staff.name} · {me.staff.role}
          </span>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      {cardsProblem && <Notice kind="error">The cards could not be loaded: {cardsProblem}</Notice>}
      {page}
    </>
  );
}
