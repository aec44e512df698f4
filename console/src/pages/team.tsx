import { useState } from 'preact/hooks';
import { call, type Role, type StaffUser } from '../api.ts';
import { Notice, PageTitle, problemText, useLoad, when } from '../components/ui.tsx';

const ROLES: readonly Role[] = ['staff', 'manager'];
/** The role a select's value names (the select offers only ROLES). */
const roleOf = (v: string): Role => ROLES.find((r) => r === v) ?? 'staff';

/** Managers invite staff users, change their role and deactivate (or reactivate) them. */
export function TeamPage(props: { isManager: boolean; meId: number }) {
  const team = useLoad(() => (props.isManager ? call('staff.team.list') : Promise.resolve(undefined)), []);
  const [invite, setInvite] = useState<{ email: string; name: string; role: Role }>({
    email: '',
    name: '',
    role: 'staff',
  });
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string }>();

  if (!props.isManager)
    return (
      <main id="main" tabIndex={-1}>
        <PageTitle>Team</PageTitle>
        <Notice kind="error">Only managers can manage staff.</Notice>
      </main>
    );

  async function run(action: () => Promise<string>) {
    setOutcome(undefined);
    try {
      setOutcome({ kind: 'ok', text: await action() });
      team.reload();
    } catch (err) {
      setOutcome({ kind: 'error', text: problemText(err) });
    }
  }

  const update = (s: StaffUser, change: { role?: Role; active?: boolean }) =>
    run(async () => {
      const r = await call('staff.team.update', { params: { staff_id: s.id }, body: change });
      return `${r.staff.name}: ${r.staff.role}, ${r.staff.active ? 'active' : 'deactivated'}.`;
    });

  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Team</PageTitle>
      <div aria-live="polite">{outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}</div>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Last sign-in</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {team.data?.staff.map((s) => (
              <tr key={s.id}>
                <td>{s.name}</td>
                <td>{s.email}</td>
                <td>
                  <label>
                    <span class="sr-only">Role of {s.name}</span>
                    <select value={s.role} onChange={(e) => update(s, { role: roleOf(e.currentTarget.value) })}>
                      <option value="staff">staff</option>
                      <option value="manager">manager</option>
                    </select>
                  </label>
                </td>
                <td>{s.last_sign_in_at ? when(s.last_sign_in_at) : 'never'}</td>
                <td>
                  <button
                    type="button"
                    class={s.active ? 'danger' : ''}
                    disabled={s.id === props.meId}
                    onClick={() => update(s, { active: !s.active })}
                  >
                    {s.active ? `Deactivate ${s.name}` : `Reactivate ${s.name}`}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <section aria-labelledby="invite-h">
        <h2 id="invite-h">Add a staff user</h2>
        <form
          class="filters"
          onSubmit={(e) => {
            e.preventDefault();
            void run(async () => {
              const r = await call('staff.team.invite', { body: invite });
              setInvite({ email: '', name: '', role: 'staff' });
              return `${r.staff.name} can now sign in with ${r.staff.email}.`;
            });
          }}
        >
          <label>
            Name
            <input
              required
              value={invite.name}
              onInput={(e) => setInvite({ ...invite, name: e.currentTarget.value })}
            />
          </label>
          <label>
            Email
            <input
              type="email"
              required
              value={invite.email}
              onInput={(e) => setInvite({ ...invite, email: e.currentTarget.value })}
            />
          </label>
          <label>
            Role
            <select value={invite.role} onChange={(e) => setInvite({ ...invite, role: roleOf(e.currentTarget.value) })}>
              <option value="staff">staff</option>
              <option value="manager">manager</option>
            </select>
          </label>
          <button type="submit" class="primary">
            Add
          </button>
        </form>
      </section>
    </main>
  );
}
