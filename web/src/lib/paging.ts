import { setQuery } from "./router";

// Server paging with cursors kept in the URL: `after` is this page's cursor and `prev`
// the cursors of the pages before it, so reload and the back button land on the same page.

/** before(q), when given, sees the query of the page to open before it opens. */
export function usePaging(path: string, query: URLSearchParams, before?: (q: URLSearchParams) => void) {
  const after = query.get("after") || undefined;
  const prev = (query.get("prev") || "").split(",").filter(Boolean);
  return {
    after,
    hasPrev: !!after,
    next(endCursor: string | null | undefined) {
      if (!endCursor) return;
      setQuery(path, query, { after: endCursor, prev: [...prev, after ?? "~"].join(",") }, before);
    },
    previous() {
      const p = [...prev];
      const c = p.pop();
      setQuery(path, query, { after: c && c !== "~" ? c : null, prev: p.join(",") || null }, before);
    },
  };
}

/** Query changes that also go back to the first page (a new filter). */
export function filterChange(changes: Record<string, string | null | undefined>) {
  return { ...changes, after: null, prev: null };
}
