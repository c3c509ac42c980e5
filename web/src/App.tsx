import { lazy, Suspense, useEffect, useState, type ComponentType, type ReactElement, type ReactNode } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "./gql";
import { base, Link, match, useLocation } from "./lib/router";
import { onLinkState, type LinkState, apiError } from "./lib/graphql";
import { clearSelection, hasCredentials, restart, select } from "./lib/auth";
import { ErrorBox, Loading } from "./ui/ui";
import { Icon, type IconName } from "./ui/icons";
import type { Client } from "@urql/core";
import { ViewerContext, type ViewerInfo } from "./lib/viewer";
import { prefetchJobs } from "./screens/jobsQuery";

// Each screen is its own chunk, fetched when it first opens: a first load runs the
// shell and the one screen it shows, whose chunk startLoading fetches beside the
// Viewer query before the first render. A screen whose module is in renders at once;
// only one not fetched yet suspends (React holds back the reveal of a suspended
// screen for a while after its fallback showed: a first load must not suspend).
type Loader = () => Promise<unknown>;
const loaders = new Map<unknown, Loader>();
function screen<M, K extends keyof M>(load: () => Promise<M>, name: K): M[K] {
  let mod: M | undefined;
  let p: Promise<M> | undefined;
  const once = () =>
    (p ??= load().then(
      (m) => (mod = m),
      (err) => {
        p = undefined; // tried again when the screen renders
        throw err;
      },
    ));
  const Lazy = lazy(() => once().then((m) => ({ default: m[name] as ComponentType<any> })));
  function Screen(props: any) {
    const C = mod?.[name] as ComponentType<any> | undefined;
    return C ? <C {...props} /> : <Lazy {...props} />;
  }
  loaders.set(Screen, once);
  return Screen as M[K];
}

const Overview = screen(() => import("./screens/Overview"), "Overview");
const Files = screen(() => import("./screens/Files"), "Files");
const FileDetail = screen(() => import("./screens/FileDetail"), "FileDetail");
const Jobs = screen(() => import("./screens/Jobs"), "Jobs");
const JobDetail = screen(() => import("./screens/JobDetail"), "JobDetail");
const BatchDetail = screen(() => import("./screens/BatchDetail"), "BatchDetail");
const Run = screen(() => import("./screens/Run"), "Run");
const Webhooks = screen(() => import("./screens/Webhooks"), "Webhooks");
const WebhookDetail = screen(() => import("./screens/WebhookDetail"), "WebhookDetail");
const Usage = screen(() => import("./screens/Usage"), "Usage");
const Keys = screen(() => import("./screens/Keys"), "Keys");
const Projects = screen(() => import("./screens/Projects"), "Projects");
const Members = screen(() => import("./screens/Members"), "Members");
const Account = screen(() => import("./screens/Account"), "Account");
const AiReady = screen(() => import("./screens/AiReady"), "default");
const SignIn = screen(() => import("./screens/SignIn"), "SignIn");
const SetPassword = screen(() => import("./screens/SignIn"), "SetPassword");
const AcceptInvitation = screen(() => import("./screens/SignIn"), "AcceptInvitation");

const ViewerQuery = graphql(`
  query Viewer {
    viewer {
      user {
        id
        email
      }
      role
      scopes
      environment
      organization {
        id
        name
      }
      project {
        id
        name
      }
    }
    projects {
      id
      name
    }
  }
`);

const SignOutMutation = graphql(`
  mutation SignOut {
    signOut {
      id
    }
  }
`);

const nav: { to: string; label: string; icon: IconName; section?: string }[] = [
  { to: "/", label: "Overview", icon: "home" },
  { to: "/files", label: "Files", icon: "file" },
  { to: "/run", label: "Run", icon: "play" },
  { to: "/jobs", label: "Jobs", icon: "jobs" },
  { to: "/webhooks", label: "Webhooks", icon: "hook" },
  { to: "/usage", label: "Usage", icon: "chart" },
  { to: "/keys", label: "Keys", icon: "key", section: "Organization" },
  { to: "/projects", label: "Projects", icon: "folder" },
  { to: "/members", label: "Members", icon: "users" },
  { to: "/account", label: "Account", icon: "user" },
];

function route(path: string): { screen: ReactElement | null; section: string } {
  let m: Record<string, string> | null;
  if (path === "/" || path === "") return { screen: <Overview />, section: "/" };
  if (path === "/files") return { screen: <Files />, section: "/files" };
  if ((m = match("/files/:id", path))) return { screen: <FileDetail id={m.id} />, section: "/files" };
  if (path === "/run") return { screen: <Run />, section: "/run" };
  if (path === "/jobs") return { screen: <Jobs />, section: "/jobs" };
  if ((m = match("/jobs/:id", path))) return { screen: <JobDetail id={m.id} />, section: "/jobs" };
  if ((m = match("/jobs/:id/ai-ready", path)))
    return { screen: <AiReady jobId={m.id} />, section: "/jobs" };
  if ((m = match("/batches/:id", path))) return { screen: <BatchDetail id={m.id} />, section: "/jobs" };
  if (path === "/webhooks") return { screen: <Webhooks />, section: "/webhooks" };
  if ((m = match("/webhooks/:id", path))) return { screen: <WebhookDetail id={m.id} />, section: "/webhooks" };
  if (path === "/usage") return { screen: <Usage />, section: "/usage" };
  if (path === "/keys") return { screen: <Keys />, section: "/keys" };
  if (path === "/projects") return { screen: <Projects />, section: "/projects" };
  if (path === "/members") return { screen: <Members />, section: "/members" };
  if (path === "/account") return { screen: <Account />, section: "/account" };
  return { screen: <NotFound />, section: "" };
}

/** Starts fetching the chunk of the screen at path (below /console), if not yet. */
function preloadScreen(path: string): Promise<unknown> {
  const { screen } = route(path);
  return loaders.get(screen?.type)?.() ?? Promise.resolve();
}

/**
 * What a first load can start before React renders: the chunk of the screen in the
 * address and, signed in, the Viewer query (and the jobs screen's query), so none
 * waits for another.
 */
export function startLoading(client: Client, pathname: string, search: string): Promise<unknown> {
  let path = pathname.startsWith(base) ? pathname.slice(base.length) : pathname;
  if (!path.startsWith("/")) path = "/" + path;
  if (path === "/invitation" || path === "/set-password" || !hasCredentials()) {
    return loaders.get(path === "/invitation" ? AcceptInvitation : path === "/set-password" ? SetPassword : SignIn)!();
  }
  const chunk = preloadScreen(path);
  if (path === "/jobs") prefetchJobs(client, new URLSearchParams(search));
  // The shell's useQuery shares it while in flight (the client dedupes by key) and
  // reads its answer from the cache after.
  void client.query(ViewerQuery, {}).toPromise();
  return chunk;
}

function NotFound() {
  return (
    <div className="page">
      <h1>Not found</h1>
      <p>
        Nothing lives at this address. <Link to="/">Go to the overview</Link>.
      </p>
    </div>
  );
}

function LinkIndicator() {
  const [s, setS] = useState<LinkState>("connecting");
  useEffect(() => onLinkState(setS), []);
  if (s !== "reconnecting") return null;
  return (
    <div className="link-state" role="status" aria-live="polite">
      <span className="dot" aria-hidden="true" /> Live updates reconnecting…
    </div>
  );
}

/** The project and environment the console acts on; changing either reloads it there. */
function Scope({ viewer, projects }: { viewer: ViewerInfo; projects: { id: string; name: string }[] }) {
  return (
    <div className="scope">
      <label className="scope-label" htmlFor="scope-project">
        Project
      </label>
      <select id="scope-project" className="scope-select" value={viewer.project.id} onChange={(e) => select(e.target.value, viewer.environment)}>
        {projects.map((p) => (
          <option key={p.id} value={p.id}>
            {p.name}
          </option>
        ))}
      </select>
      <div className="env-switch" role="group" aria-label="Environment">
        {["live", "test"].map((env) => (
          <button
            key={env}
            type="button"
            className={"env env-" + env + (viewer.environment === env ? " on" : "")}
            aria-pressed={viewer.environment === env}
            onClick={() => viewer.environment !== env && select(viewer.project.id, env)}
          >
            {env}
          </button>
        ))}
      </div>
    </div>
  );
}

export function App() {
  return (
    <Suspense fallback={<Loading />}>
      <Door />
    </Suspense>
  );
}

function Door() {
  const { path } = useLocation();
  // The one-time links work signed out (and signed in as someone else alike).
  if (path === "/invitation") return <AcceptInvitation />;
  if (path === "/set-password") return <SetPassword />;
  if (!hasCredentials()) return <SignIn />;
  return <Console />;
}

function Console() {
  const { path } = useLocation();
  const { screen, section } = route(path);
  // Read once, by startLoading, before the first render.
  const [{ data, error }, refetch] = useQuery({ query: ViewerQuery, requestPolicy: "cache-first" });
  const [out, signOut] = useMutation(SignOutMutation);
  const titleLabel = nav.find((n) => n.to === section)?.label;
  useEffect(() => {
    document.title = titleLabel ? `${titleLabel} · filemill` : "filemill console";
  }, [titleLabel]);

  const err = apiError(error);
  if (err && !data && (err.code === "invalid_session" || err.code === "missing_credentials")) {
    return <SignIn notice="Your session has ended: sign in again." />;
  }
  if (err && !data && err.param === "project") {
    // A project chosen in this browser that the server refuses: back to the default.
    clearSelection();
  }
  const viewer: ViewerInfo | null =
    data && data.viewer.user
      ? { email: data.viewer.user.email, role: data.viewer.role ?? "", scopes: data.viewer.scopes, environment: data.viewer.environment,
          organization: data.viewer.organization, project: data.viewer.project }
      : null;

  // The screen opens while the viewer is still on its way: its own query needs only
  // the session and the stored project choice, both sent with every request. Until
  // the viewer is known, actions that need a role stay off (useCan).
  let main: ReactNode = <Suspense fallback={<Loading />}>{screen}</Suspense>;
  if (err && !data) {
    main = (
      <div className="page">
        <ErrorBox error={err} onRetry={() => refetch({ requestPolicy: "network-only" })} />
      </div>
    );
  }

  return (
    <ViewerContext.Provider value={viewer}>
      <div className="shell">
        <a className="skip" href="#main">
          Skip to content
        </a>
        <aside className="sidebar">
          <div className="brand">
            <svg aria-hidden="true" width="28" height="28" viewBox="0 0 32 32">
              <rect width="32" height="32" rx="7" fill="var(--accent)" />
              <path d="M9 23V9h13v3.2h-9.4v2.6h8v3.1h-8V23z" fill="#fff" />
            </svg>
            <span>filemill</span>
          </div>
          {viewer && (
            <div className="org">
              <div className="org-name">{viewer.organization.name}</div>
              <div className="org-project">
                {viewer.project.name} · <span className={"env env-" + viewer.environment}>{viewer.environment}</span>
              </div>
            </div>
          )}
          <nav aria-label="Console">
            <ul>
              {nav.map((n) => (
                <li key={n.to}>
                  {n.section && <div className="nav-section" aria-hidden="true">{n.section}</div>}
                  <Link
                    to={n.to}
                    className={"nav-link" + (section === n.to ? " active" : "")}
                    aria-current={section === n.to ? "page" : undefined}
                    // The screen's chunk is on its way before the click.
                    onPointerEnter={() => void preloadScreen(n.to)}
                    onFocus={() => void preloadScreen(n.to)}
                  >
                    <Icon name={n.icon} />
                    <span>{n.label}</span>
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
          <div className="sidebar-foot">
            {viewer && data && <Scope viewer={viewer} projects={data.projects} />}
            {viewer && (
              <div className="who">
                <div className="who-email">{viewer.email}</div>
                <div className="who-role">{viewer.role}</div>
                <button
                  type="button"
                  className="btn btn-small btn-ghost who-out"
                  disabled={out.fetching}
                  onClick={async () => {
                    await signOut({});
                    restart("/console/");
                  }}
                >
                  Sign out
                </button>
              </div>
            )}
            <a href="/graphql/play" className="nav-link subtle">
              <Icon name="code" />
              <span>GraphQL playground</span>
            </a>
          </div>
        </aside>
        <main id="main" tabIndex={-1}>
          <LinkIndicator />
          {main}
        </main>
      </div>
    </ViewerContext.Provider>
  );
}
