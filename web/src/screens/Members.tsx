import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import { apiError } from "../lib/graphql";
import { useCan, useViewer } from "../lib/viewer";
import { AdminPage } from "../ui/admin";
import { restart } from "../lib/auth";
import { Card, CopyBlock, Dialog, Empty, ErrorBox, Loading, Time } from "../ui/ui";

const MembersQuery = graphql(`
  query Members {
    members {
      id
      userId
      email
      role
      createdAt
    }
    invitations {
      id
      email
      role
      createdAt
      expiresAt
    }
  }
`);

const Invite = graphql(`
  mutation CreateInvitation($email: String!, $role: Role!) {
    createInvitation(email: $email, role: $role) {
      path
      invitation {
        id
      }
    }
  }
`);

const RevokeInvitation = graphql(`
  mutation RevokeInvitation($id: ID!) {
    revokeInvitation(id: $id) {
      id
    }
  }
`);

const UpdateMember = graphql(`
  mutation UpdateMember($id: ID!, $role: Role!) {
    updateMember(id: $id, role: $role) {
      id
      role
    }
  }
`);

const RemoveMember = graphql(`
  mutation RemoveMember($id: ID!) {
    removeMember(id: $id) {
      id
    }
  }
`);

export const roles = ["owner", "admin", "developer", "viewer"] as const;
type Role = (typeof roles)[number];

export const roleWords: Record<Role, string> = {
  owner: "everything, members' roles included",
  admin: "also keys, projects and members",
  developer: "files, jobs and webhooks",
  viewer: "reads everything, changes nothing",
};

function InviteForm({ onInvited }: { onInvited: (link: string) => void }) {
  const canOwners = useCan("organization");
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("developer");
  const [res, invite] = useMutation(Invite);
  const err = apiError(res.error);
  return (
    <form
      className="form"
      onSubmit={async (e) => {
        e.preventDefault();
        const r = await invite({ email, role });
        if (r.data) onInvited(location.origin + r.data.createInvitation.path);
      }}
    >
      <div className="field">
        <label htmlFor="invite-email">Email</label>
        <input id="invite-email" type="email" required value={email} onChange={(e) => setEmail(e.target.value)} aria-invalid={err?.param === "email" || undefined} />
      </div>
      <div className="field">
        <label htmlFor="invite-role">Role</label>
        <select id="invite-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {roles.map((r) => (
            <option key={r} value={r} disabled={r === "owner" && !canOwners}>
              {r} — {roleWords[r]}
            </option>
          ))}
        </select>
      </div>
      {err && <ErrorBox error={err} />}
      <div className="form-actions">
        <button type="submit" className="btn btn-primary" disabled={res.fetching}>
          Invite member
        </button>
      </div>
    </form>
  );
}

export function Members() {
  const can = useCan("manage");
  const canRoles = useCan("organization");
  const viewer = useViewer();
  const [{ data, error, fetching }, refetch] = useQuery({ query: MembersQuery, pause: !can });
  const [open, setOpen] = useState(false);
  const [link, setLink] = useState<string | null>(null);
  const [upd, update] = useMutation(UpdateMember);
  const [rem, remove] = useMutation(RemoveMember);
  const [rinv, revoke] = useMutation(RevokeInvitation);
  const reload = () => refetch({ requestPolicy: "network-only" });
  const close = () => {
    setOpen(false);
    setLink(null);
    reload();
  };
  const err = apiError(error);
  const mutErr = apiError(upd.error ?? rem.error ?? rinv.error);
  return (
    <AdminPage title="Members" subtitle="People who sign in to this organization, each with a role." action="Invite member" onAction={() => setOpen(true)}>
      {mutErr && <ErrorBox error={mutErr} />}
      <Card title="Members">
        {err && !data && <ErrorBox error={err} onRetry={reload} />}
        {!data && fetching && <Loading />}
        {data && (
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Member since</th>
                <th scope="col"><span className="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {data.members.map((m) => {
                const self = m.email === viewer?.email;
                return (
                  <tr key={m.id} data-member-id={m.id}>
                    <td>
                      {m.email} {self && <span className="badge">you</span>}
                    </td>
                    <td>
                      {canRoles ? (
                        <select
                          aria-label={`Role of ${m.email}`}
                          value={m.role}
                          disabled={upd.fetching}
                          onChange={async (e) => {
                            await update({ id: m.id, role: e.target.value as Role });
                            reload();
                          }}
                        >
                          {roles.map((r) => (
                            <option key={r} value={r}>
                              {r}
                            </option>
                          ))}
                        </select>
                      ) : (
                        m.role
                      )}
                    </td>
                    <td>
                      <Time iso={m.createdAt} date />
                    </td>
                    <td className="num">
                      <button
                        type="button"
                        className="btn btn-small btn-danger"
                        disabled={rem.fetching || (!self && m.role === "owner" && !canRoles)}
                        onClick={async () => {
                          if (!confirm(self ? "Leave this organization?" : `Remove ${m.email}? Their sessions end at once.`)) return;
                          const r = await remove({ id: m.id });
                          if (r.data && self) restart("/console/");
                          else reload();
                        }}
                      >
                        {self ? "Leave" : `Remove`}
                        <span className="sr-only"> {m.email}</span>
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </Card>
      <Card title="Pending invitations">
        {data && data.invitations.length === 0 && <Empty title="No pending invitations" />}
        {data && data.invitations.length > 0 && (
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Expires</th>
                <th scope="col"><span className="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {data.invitations.map((i) => (
                <tr key={i.id}>
                  <td>{i.email}</td>
                  <td>{i.role}</td>
                  <td>
                    <Time iso={i.expiresAt} />
                  </td>
                  <td className="num">
                    <button
                      type="button"
                      className="btn btn-small btn-danger"
                      disabled={rinv.fetching}
                      onClick={async () => {
                        await revoke({ id: i.id });
                        reload();
                      }}
                    >
                      Withdraw<span className="sr-only"> the invitation of {i.email}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
      <Dialog open={open} title={link ? "Invitation link" : "Invite member"} onClose={close}>
        {link ? (
          <div className="secret-once">
            <p>
              <strong>Send this link to the person you invited.</strong> It works once, for 7 days, and is shown only now.
            </p>
            <CopyBlock label="Invitation link" text={link} />
            <div className="form-actions">
              <button type="button" className="btn btn-primary" onClick={close}>
                Done
              </button>
            </div>
          </div>
        ) : (
          <InviteForm onInvited={setLink} />
        )}
      </Dialog>
    </AdminPage>
  );
}
