// The one place that knows how the console proves who it is to the GraphQL door.
// Every request (fetch and the websocket's connection_init) takes its credentials from
// here, so moving to cookie sessions with a CSRF header changes this file only.
//
// Today the GraphQL door authenticates API keys; the key is read from sessionStorage
// (the test harness puts it there), and nothing in the console asks a person for one.

const storageKey = "filemill.apiKey";

function apiKey(): string | null {
  try {
    return globalThis.sessionStorage?.getItem(storageKey) ?? null;
  } catch {
    return null;
  }
}

/** Headers for a GraphQL request over HTTP. */
export function authHeaders(): Record<string, string> {
  const key = apiKey();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

/** fetch options for GraphQL requests: the headers, and cookies of this origin only. */
export function fetchOptions(): RequestInit {
  return { headers: authHeaders(), credentials: "same-origin" };
}

/** The payload of the websocket's connection_init. */
export function connectionParams(): Record<string, unknown> {
  const key = apiKey();
  return key ? { authorization: `Bearer ${key}` } : {};
}

/** Whether the console holds credentials at all (without them every screen says so). */
export function hasCredentials(): boolean {
  return apiKey() !== null;
}
