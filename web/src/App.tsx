import { lazy, Suspense, useEffect, useState, type ReactNode } from "react";
import { useQuery } from "urql";
import { graphql } from "./gql";
import { Link, match, useLocation } from "./lib/router";
import { onLinkState, type LinkState, apiError } from "./lib/graphql";
import { hasCredentials } from "./lib/auth";
import { ErrorBox, Loading } from "./ui/ui";
import { Icon, type IconName } from "./ui/icons";
import { Overview } from "./screens/Overview";
import { Files } from "./screens/Files";
import { FileDetail } from "./screens/FileDetail";
import { Jobs } from "./screens/Jobs";
import { JobDetail } from "./screens/JobDetail";
import { BatchDetail } from "./screens/BatchDetail";
import { Run } from "./screens/Run";
import { Webhooks } from "./screens/Webhooks";
import { WebhookDetail } from "./screens/WebhookDetail";
import { Usage } from "./screens/Usage";
import { Placeholder } from "./screens/Placeholder";

// The ai-ready viewer brings a markdown renderer: loaded when it opens.
const AiReady = lazy(() => import("./screens/AiReady"));

const ViewerQuery = graphql(`
  query Viewer {
    viewer {
      organization {
        id
        name
      }
      project {
        id
        name
      }
      apiKey {
        id
        name
        environment
      }
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
];

function route(path: string): { screen: ReactNode; section: string } {
  let m: Record<string, string> | null;
  if (path === "/" || path === "") return { screen: <Overview />, section: "/" };
  if (path === "/files") return { screen: <Files />, section: "/files" };
  if ((m = match("/files/:id", path))) return { screen: <FileDetail id={m.id} />, section: "/files" };
  if (path === "/run") return { screen: <Run />, section: "/run" };
  if (path === "/jobs") return { screen: <Jobs />, section: "/jobs" };
  if ((m = match("/jobs/:id", path))) return { screen: <JobDetail id={m.id} />, section: "/jobs" };
  if ((m = match("/jobs/:id/ai-ready", path)))
    return {
      screen: (
        <Suspense fallback={<Loading />}>
          <AiReady jobId={m.id} />
        </Suspense>
      ),
      section: "/jobs",
    };
  if ((m = match("/batches/:id", path))) return { screen: <BatchDetail id={m.id} />, section: "/jobs" };
  if (path === "/webhooks") return { screen: <Webhooks />, section: "/webhooks" };
  if ((m = match("/webhooks/:id", path))) return { screen: <WebhookDetail id={m.id} />, section: "/webhooks" };
  if (path === "/usage") return { screen: <Usage />, section: "/usage" };
  if (path === "/keys") return { screen: <Placeholder title="Keys" what="API keys: create with scopes and restrictions, see them masked with their last use, revoke." />, section: "/keys" };
  if (path === "/projects") return { screen: <Placeholder title="Projects" what="Projects: create, rename, and set each one's concurrency limit." />, section: "/projects" };
  if (path === "/members") return { screen: <Placeholder title="Members" what="Members and invitations: invite with a role, change roles, remove." />, section: "/members" };
  return { screen: <NotFound />, section: "" };
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

export function App() {
  const { path } = useLocation();
  const { screen, section } = route(path);
  const [{ data, error, fetching }, refetch] = useQuery({ query: ViewerQuery, pause: !hasCredentials() });
  const titleLabel = nav.find((n) => n.to === section)?.label;
  useEffect(() => {
    document.title = titleLabel ? `${titleLabel} · filemill` : "filemill console";
  }, [titleLabel]);

  let main: ReactNode = screen;
  if (!hasCredentials()) {
    main = (
      <div className="page">
        <ErrorBox error={{ code: "unauthenticated", message: "This browser is not signed in to filemill." }} />
      </div>
    );
  } else if (error && !data) {
    main = (
      <div className="page">
        <ErrorBox error={apiError(error)!} onRetry={() => refetch({ requestPolicy: "network-only" })} />
      </div>
    );
  } else if (fetching && !data) {
    main = <Loading />;
  }

  return (
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
        {data && (
          <div className="org">
            <div className="org-name">{data.viewer.organization.name}</div>
            <div className="org-project">
              {data.viewer.project.name} · <span className={"env env-" + data.viewer.apiKey.environment}>{data.viewer.apiKey.environment}</span>
            </div>
          </div>
        )}
        <nav aria-label="Console">
          <ul>
            {nav.map((n) => (
              <li key={n.to}>
                {n.section && <div className="nav-section" aria-hidden="true">{n.section}</div>}
                <Link to={n.to} className={"nav-link" + (section === n.to ? " active" : "")} aria-current={section === n.to ? "page" : undefined}>
                  <Icon name={n.icon} />
                  <span>{n.label}</span>
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="sidebar-foot">
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
  );
}
