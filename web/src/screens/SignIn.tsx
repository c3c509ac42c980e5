import { useState, type FormEvent, type ReactNode } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import { apiError } from "../lib/graphql";
import { clearSelection, restart } from "../lib/auth";
import { ErrorBox, Loading } from "../ui/ui";

// The screens of a person who is not signed in: sign in, set a password from the
// admin command's link, accept an invitation. Each ends with a session (its cookie set
// by the server) and a fresh page.

const SignInMutation = graphql(`
  mutation SignIn($email: String!, $password: String!) {
    signIn(email: $email, password: $password) {
      role
      csrfToken
    }
  }
`);

const SetPasswordMutation = graphql(`
  mutation SetPassword($token: String!, $password: String!) {
    setPassword(token: $token, password: $password) {
      role
    }
  }
`);

const InvitationQuery = graphql(`
  query InvitationPreview($token: String!) {
    invitation(token: $token) {
      email
      role
      expiresAt
      hasAccount
      organization {
        id
        name
      }
    }
  }
`);

const AcceptMutation = graphql(`
  mutation AcceptInvitation($token: String!, $password: String!) {
    acceptInvitation(token: $token, password: $password) {
      role
    }
  }
`);

/** The token of a one-time link: it travels in the fragment, never sent to a server. */
function linkToken(): string {
  return new URLSearchParams(location.hash.slice(1)).get("token") ?? "";
}

function Frame({ title, children }: { title: string; children: ReactNode }) {
  return (
    <main id="main" className="auth-page">
      <div className="auth-card card">
        <div className="brand auth-brand">
          <svg aria-hidden="true" width="28" height="28" viewBox="0 0 32 32">
            <rect width="32" height="32" rx="7" fill="var(--accent)" />
            <path d="M9 23V9h13v3.2h-9.4v2.6h8v3.1h-8V23z" fill="#fff" />
          </svg>
          <span>filemill</span>
        </div>
        <h1>{title}</h1>
        {children}
      </div>
    </main>
  );
}

/** Signs in with an email and a password; on success the page starts over where it was. */
export function SignIn({ notice }: { notice?: string }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [res, signIn] = useMutation(SignInMutation);
  const err = apiError(res.error);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await signIn({ email, password });
    if (r.data) {
      clearSelection();
      restart(location.pathname + location.search);
    }
  };
  return (
    <Frame title="Sign in">
      {notice && <p className="notice">{notice}</p>}
      <form className="form" onSubmit={submit}>
        <div className="field">
          <label htmlFor="signin-email">Email</label>
          <input id="signin-email" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="signin-password">Password</label>
          <input id="signin-password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        </div>
        {err && <ErrorBox error={err} />}
        <button type="submit" className="btn btn-primary btn-block" disabled={res.fetching}>
          Sign in
        </button>
      </form>
      <p className="muted small">
        No account? An admin of your organization invites you, or an operator runs <code>filemill admin users create</code>.
      </p>
    </Frame>
  );
}

function NewPassword({ label, busy, onSubmit, submitLabel, error }: { label: string; busy: boolean; onSubmit: (pw: string) => void; submitLabel: string; error: ReturnType<typeof apiError> }) {
  const [pw, setPw] = useState("");
  const [again, setAgain] = useState("");
  const mismatch = again !== "" && pw !== again;
  return (
    <form
      className="form"
      onSubmit={(e) => {
        e.preventDefault();
        if (!mismatch) onSubmit(pw);
      }}
    >
      <div className="field">
        <label htmlFor="new-password">{label}</label>
        <input id="new-password" type="password" autoComplete="new-password" required minLength={10} maxLength={256} value={pw} onChange={(e) => setPw(e.target.value)} />
        <small className="muted">10 to 256 characters.</small>
      </div>
      <div className="field">
        <label htmlFor="new-password-again">Repeat the password</label>
        <input id="new-password-again" type="password" autoComplete="new-password" required value={again} onChange={(e) => setAgain(e.target.value)} aria-invalid={mismatch || undefined} />
        {mismatch && <small className="bad-text">The two differ.</small>}
      </div>
      {error && <ErrorBox error={error} />}
      <button type="submit" className="btn btn-primary btn-block" disabled={busy || mismatch}>
        {submitLabel}
      </button>
    </form>
  );
}

/** Sets a password through the one-time link `filemill admin users create` printed. */
export function SetPassword() {
  const [token] = useState(linkToken);
  const [res, set] = useMutation(SetPasswordMutation);
  return (
    <Frame title="Set your password">
      {!token ? (
        <ErrorBox error={{ code: "invalid_request", message: "This link carries no token: open the whole link you were given." }} />
      ) : (
        <NewPassword
          label="New password"
          busy={res.fetching}
          error={apiError(res.error)}
          submitLabel="Set password and sign in"
          onSubmit={async (password) => {
            const r = await set({ token, password });
            if (r.data) {
              clearSelection();
              restart("/console/");
            }
          }}
        />
      )}
    </Frame>
  );
}

/** Accepts an invitation: a new account chooses its password, an existing one gives it. */
export function AcceptInvitation() {
  const [token] = useState(linkToken);
  const [{ data, error, fetching }] = useQuery({ query: InvitationQuery, variables: { token }, pause: !token });
  const [res, accept] = useMutation(AcceptMutation);
  const [password, setPassword] = useState("");
  const done = async (pw: string) => {
    const r = await accept({ token, password: pw });
    if (r.data) {
      clearSelection();
      restart("/console/");
    }
  };
  const inv = data?.invitation;
  return (
    <Frame title="Join an organization">
      {!token && <ErrorBox error={{ code: "invalid_request", message: "This link carries no token: open the whole link you were given." }} />}
      {token && fetching && !data && <Loading />}
      {error && !data && <ErrorBox error={apiError(error)!} />}
      {data && !inv && <ErrorBox error={{ code: "not_found", message: "This invitation is not valid: it was used, revoked or has expired." }} />}
      {inv && (
        <>
          <p>
            <strong>{inv.email}</strong> is invited to <strong>{inv.organization.name}</strong> as <strong>{inv.role}</strong>.
          </p>
          {inv.hasAccount ? (
            <form
              className="form"
              onSubmit={(e) => {
                e.preventDefault();
                done(password);
              }}
            >
              <div className="field">
                <label htmlFor="invite-password">Password</label>
                <input id="invite-password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
                <small className="muted">This email has an account: give its password.</small>
              </div>
              {res.error && <ErrorBox error={apiError(res.error)!} />}
              <button type="submit" className="btn btn-primary btn-block" disabled={res.fetching}>
                Accept invitation
              </button>
            </form>
          ) : (
            <NewPassword label="Choose a password" busy={res.fetching} error={apiError(res.error)} submitLabel="Accept invitation" onSubmit={done} />
          )}
        </>
      )}
    </Frame>
  );
}
