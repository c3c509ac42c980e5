import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import { apiError } from "../lib/graphql";
import { restart } from "../lib/auth";
import { useViewer } from "../lib/viewer";
import { Card, ErrorBox, PageHeader, Time, screenState } from "../ui/ui";

const SessionsQuery = graphql(`
  query Sessions {
    sessions {
      id
      createdAt
      lastSeenAt
      expiresAt
      ip
      userAgent
      current
    }
  }
`);

const RevokeSession = graphql(`
  mutation RevokeSession($id: ID!) {
    revokeSession(id: $id) {
      id
    }
  }
`);

const SignOutEverywhere = graphql(`
  mutation SignOutEverywhere {
    signOutEverywhere
  }
`);

const ChangePassword = graphql(`
  mutation ChangePassword($current: String!, $next: String!) {
    changePassword(currentPassword: $current, newPassword: $next)
  }
`);

/** A browser's name from its user agent, for a person to recognise it. */
export function browserName(ua: string): string {
  const m = ua.match(/(Edg|Firefox|Chrome|Chromium|Safari)\/[\d.]+/);
  const os = ua.match(/\(([^;)]+)/)?.[1];
  if (!ua) return "unknown browser";
  return [m ? m[1].replace("Edg", "Edge") : ua.slice(0, 40), os].filter(Boolean).join(" on ");
}

export function Account() {
  const viewer = useViewer();
  const [{ data, error, fetching }, refetch] = useQuery({ query: SessionsQuery });
  const [rev, revoke] = useMutation(RevokeSession);
  const [all, everywhere] = useMutation(SignOutEverywhere);
  const [pw, change] = useMutation(ChangePassword);
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [changed, setChanged] = useState(false);
  const head = <PageHeader title="Account" subtitle={viewer ? `${viewer.email} · ${viewer.role} of ${viewer.organization.name}` : undefined} />;
  const state = screenState(head, { data, error, fetching }, () => refetch({ requestPolicy: "network-only" }));
  if (state || !data) return state;
  const mutErr = apiError(rev.error ?? all.error);
  return (
    <div className="page">
      {head}
      <Card
        title="Sessions"
        actions={
          <button
            type="button"
            className="btn btn-danger"
            disabled={all.fetching}
            onClick={async () => {
              if (!confirm("Sign out of every browser, this one included?")) return;
              const r = await everywhere({});
              if (!r.error) restart("/console/");
            }}
          >
            Sign out everywhere
          </button>
        }
      >
        {mutErr && <ErrorBox error={mutErr} />}
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Browser</th>
              <th scope="col">Address</th>
              <th scope="col">Signed in</th>
              <th scope="col">Last active</th>
              <th scope="col"><span className="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {data.sessions.map((s) => (
              <tr key={s.id}>
                <td>
                  {browserName(s.userAgent)} {s.current && <span className="badge">this browser</span>}
                </td>
                <td className="mono">{s.ip}</td>
                <td>
                  <Time iso={s.createdAt} />
                </td>
                <td>
                  <Time iso={s.lastSeenAt} rel />
                </td>
                <td className="num">
                  {!s.current && (
                    <button
                      type="button"
                      className="btn btn-small btn-danger"
                      disabled={rev.fetching}
                      onClick={async () => {
                        await revoke({ id: s.id });
                        refetch({ requestPolicy: "network-only" });
                      }}
                    >
                      Sign out<span className="sr-only"> that session</span>
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
      <Card title="Change password">
        <form
          className="form"
          onSubmit={async (e) => {
            e.preventDefault();
            setChanged(false);
            const r = await change({ current, next });
            if (r.data) {
              setCurrent("");
              setNext("");
              setChanged(true);
              refetch({ requestPolicy: "network-only" });
            }
          }}
        >
          <div className="form-grid">
            <label>
              Current password
              <input type="password" autoComplete="current-password" required value={current} onChange={(e) => setCurrent(e.target.value)} />
            </label>
            <label>
              New password
              <input type="password" autoComplete="new-password" required minLength={10} maxLength={256} value={next} onChange={(e) => setNext(e.target.value)} />
            </label>
          </div>
          {pw.error && <ErrorBox error={apiError(pw.error)!} />}
          {changed && (
            <p className="notice" role="status">
              Password changed; your other sessions were signed out.
            </p>
          )}
          <div className="form-actions">
            <button type="submit" className="btn btn-primary" disabled={pw.fetching}>
              Change password
            </button>
          </div>
        </form>
      </Card>
    </div>
  );
}
