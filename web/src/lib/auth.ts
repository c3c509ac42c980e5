// The one place that knows how the console proves who it is to the GraphQL door.
// Every request (fetch and the websocket's connection_init) takes its credentials from
// here.
//
// A person signs in with signIn (screens/SignIn): the server sets an HttpOnly session
// cookie this script never sees, and a filemill_csrf cookie whose value every request
// repeats in the X-CSRF-Token header (double submit: another site can neither read the
// cookie nor send the header). The project and environment the console acts on travel
// in headers too; they are kept in localStorage, per browser.

const csrfCookie = "filemill_csrf";
const projectKey = "filemill.project";
const environmentKey = "filemill.environment";

/** The CSRF token of the session, from its cookie; null when signed out. */
export function csrfToken(): string | null {
  for (const part of (globalThis.document?.cookie ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === csrfCookie && v.length) return decodeURIComponent(v.join("="));
  }
  return null;
}

function stored(key: string): string | null {
  try {
    return globalThis.localStorage?.getItem(key) ?? null;
  } catch {
    return null;
  }
}

/** The project and environment chosen in this browser (null: the server's default). */
export function selection(): { project: string | null; environment: string | null } {
  return { project: stored(projectKey), environment: stored(environmentKey) };
}

/** Chooses what the console acts on, and reloads it there (every screen reads afresh). */
export function select(project: string | null, environment: string | null) {
  try {
    if (project) localStorage.setItem(projectKey, project);
    else localStorage.removeItem(projectKey);
    if (environment) localStorage.setItem(environmentKey, environment);
    else localStorage.removeItem(environmentKey);
  } catch {
    // Storage may be off: the choice then lasts this page only.
  }
  location.reload();
}

/** Headers for a GraphQL request over HTTP. */
export function authHeaders(): Record<string, string> {
  const h: Record<string, string> = {};
  const csrf = csrfToken();
  if (csrf) h["X-CSRF-Token"] = csrf;
  const { project, environment } = selection();
  if (project) h["X-Filemill-Project"] = project;
  if (environment) h["X-Filemill-Environment"] = environment;
  return h;
}

/** fetch options for GraphQL requests: the headers, and cookies of this origin only. */
export function fetchOptions(): RequestInit {
  return { headers: authHeaders(), credentials: "same-origin" };
}

/** The payload of the websocket's connection_init: the session's proof and choice. */
export function connectionParams(): Record<string, unknown> {
  const { project, environment } = selection();
  return { csrfToken: csrfToken() ?? "", ...(project ? { project } : {}), ...(environment ? { environment } : {}) };
}

/** Whether this browser holds a session (the server may still find it ended). */
export function hasCredentials(): boolean {
  return csrfToken() !== null;
}

/** After signing in or out: a fresh page, so the client and its websocket start over. */
export function restart(to = "/console/") {
  location.assign(to);
}

/** Forgets a choice the server refused (a project of another organization). */
export function clearSelection() {
  try {
    localStorage.removeItem(projectKey);
    localStorage.removeItem(environmentKey);
  } catch {
    // nothing kept
  }
}
