import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from "react";

// A small history router: every screen and filter has a URL under /console/, so reload
// and the back button work (the server answers index.html for any /console/ path).

export const base = "/console";

function subscribe(cb: () => void) {
  window.addEventListener("popstate", cb);
  window.addEventListener("filemill:navigate", cb);
  return () => {
    window.removeEventListener("popstate", cb);
    window.removeEventListener("filemill:navigate", cb);
  };
}
const snapshot = () => location.pathname + location.search;

/** The path below /console (always starting with /) and the query. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const loc = useSyncExternalStore(subscribe, snapshot, snapshot);
  const [p, q = ""] = loc.split("?");
  let path = p.startsWith(base) ? p.slice(base.length) : p;
  if (!path.startsWith("/")) path = "/" + path;
  return { path, query: new URLSearchParams(q) };
}

export function href(to: string): string {
  return base + (to.startsWith("/") ? to : "/" + to);
}

export function navigate(to: string, opts: { replace?: boolean } = {}) {
  const url = href(to);
  if (url === snapshot()) return;
  if (opts.replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  window.dispatchEvent(new Event("filemill:navigate"));
  if (!opts.replace) window.scrollTo(0, 0);
}

/** The query with changes made (empty values removed). */
export function changedQuery(query: URLSearchParams, changes: Record<string, string | null | undefined>): URLSearchParams {
  const q = new URLSearchParams(query);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === undefined || v === "") q.delete(k);
    else q.set(k, v);
  }
  return q;
}

/**
 * Sets query parameters of the current screen (empty values removed), as a new history
 * entry. before(q), when given, sees the new query first, to send its request: the
 * address then moves in a task of its own, once the request is out (the GraphQL
 * client sends it a few microtasks later), so the screen renders while the server
 * works rather than before the request leaves.
 */
export function setQuery(path: string, query: URLSearchParams, changes: Record<string, string | null | undefined>, before?: (q: URLSearchParams) => void) {
  const q = changedQuery(query, changes);
  const s = q.toString();
  const go = () => navigate(path + (s ? "?" + s : ""));
  if (!before) return go();
  before(q);
  setTimeout(go);
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { to: string };

export function Link({ to, onClick, ...rest }: LinkProps) {
  return (
    <a
      {...rest}
      href={href(to)}
      onClick={(e: MouseEvent<HTMLAnchorElement>) => {
        onClick?.(e);
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(to);
      }}
    />
  );
}

/** Matches a path against a pattern with :params; null when it does not match. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split("/").filter(Boolean);
  const b = path.split("/").filter(Boolean);
  if (a.length !== b.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(":")) params[a[i].slice(1)] = decodeURIComponent(b[i]);
    else if (a[i] !== b[i]) return null;
  }
  return params;
}
