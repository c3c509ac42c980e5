import { StrictMode, useEffect, useMemo, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import { createClient, type Client as WSClient } from "graphql-ws";
import { authHeaders, connectionParams, hasCredentials } from "../lib/auth";
import "../styles.css";
import "./play.css";

// The GraphQL playground at /graphql/play: a page of our own, served from the binary,
// that loads nothing from elsewhere. Queries and mutations go over HTTP, subscriptions
// over the same /graphql websocket the console uses.

const starter = `# Ctrl+Enter runs the operation.
query Me {
  viewer {
    organization { id name }
    project { id name }
    apiKey { name environment scopes }
  }
}
`;

type Field = { name: string; description?: string | null; args: { name: string; type: TypeRef }[]; type: TypeRef };
type TypeRef = { kind: string; name?: string | null; ofType?: TypeRef | null };
type Root = { name: string; fields: Field[] };

const introspection = `query PlaygroundSchema {
  __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types { name kind fields { name description args { name type { ...T } } type { ...T } } }
  }
}
fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } }`;

function typeName(t: TypeRef): string {
  if (t.kind === "NON_NULL") return typeName(t.ofType!) + "!";
  if (t.kind === "LIST") return `[${typeName(t.ofType!)}]`;
  return t.name ?? "?";
}

function headersFrom(text: string): Record<string, string> {
  try {
    const h = JSON.parse(text || "{}");
    return typeof h === "object" && h ? h : {};
  } catch {
    return {};
  }
}

async function post(query: string, variables: unknown, headers: Record<string, string>) {
  const res = await fetch("/graphql", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", ...authHeaders(), ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  try {
    return { status: res.status, requestId: res.headers.get("X-Request-Id"), body: JSON.parse(text) };
  } catch {
    return { status: res.status, requestId: res.headers.get("X-Request-Id"), body: text };
  }
}

function Playground() {
  const [query, setQuery] = useState(() => localStorage.getItem("filemill.play.query") ?? starter);
  const [vars, setVars] = useState(() => localStorage.getItem("filemill.play.vars") ?? "{}");
  // Signed in to the console, the playground acts as that person (the session's cookie
  // and CSRF header); otherwise it needs a key.
  const [hdrs, setHdrs] = useState(() => sessionStorage.getItem("filemill.play.headers") ?? (hasCredentials() ? "{}" : '{\n  "Authorization": "Bearer fm_test_…"\n}'));
  const [out, setOut] = useState<string>("");
  const [meta, setMeta] = useState<string>("");
  const [busy, setBusy] = useState(false);
  const [roots, setRoots] = useState<Root[] | null>(null);
  const [schemaErr, setSchemaErr] = useState<string>("");
  const sub = useRef<(() => void) | null>(null);
  const ws = useRef<WSClient | null>(null);

  useEffect(() => localStorage.setItem("filemill.play.query", query), [query]);
  useEffect(() => localStorage.setItem("filemill.play.vars", vars), [vars]);
  useEffect(() => sessionStorage.setItem("filemill.play.headers", hdrs), [hdrs]);

  const loadSchema = async () => {
    const r = await post(introspection, {}, headersFrom(hdrs)).catch((e) => ({ status: 0, requestId: null, body: String(e) }));
    const s = r.body?.data?.__schema;
    if (!s) {
      setSchemaErr(r.body?.errors?.[0]?.message ?? "the schema could not be read");
      return;
    }
    setSchemaErr("");
    const byName = new Map<string, { fields: Field[] | null }>(s.types.map((t: { name: string; fields: Field[] | null }) => [t.name, t]));
    const pick = (n?: { name: string } | null) => (n ? { name: n.name, fields: byName.get(n.name)?.fields ?? [] } : null);
    setRoots([pick(s.queryType), pick(s.mutationType), pick(s.subscriptionType)].filter(Boolean) as Root[]);
  };
  useEffect(() => {
    loadSchema();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  const run = async () => {
    sub.current?.();
    sub.current = null;
    let variables: unknown = {};
    try {
      variables = JSON.parse(vars || "{}");
    } catch {
      setOut("Variables are not valid JSON.");
      return;
    }
    if (/^\s*(#.*\n\s*)*subscription\b/m.test(query)) {
      const h = headersFrom(hdrs);
      ws.current?.dispose();
      const u = new URL("/graphql", location.href);
      u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
      ws.current = createClient({ url: u.toString(), connectionParams: () => (h.Authorization ? { authorization: h.Authorization } : connectionParams()) });
      const lines: string[] = [];
      setMeta("subscribed — messages appear as they come");
      sub.current = ws.current.subscribe(
        { query, variables: variables as Record<string, unknown> },
        {
          next: (m) => {
            lines.unshift(JSON.stringify(m, null, 2));
            setOut(lines.slice(0, 50).join("\n\n"));
          },
          error: (e) => setMeta("ended: " + (e instanceof Error ? e.message : JSON.stringify(e))),
          complete: () => setMeta("completed"),
        },
      );
      return;
    }
    setBusy(true);
    const t0 = performance.now();
    try {
      const r = await post(query, variables, headersFrom(hdrs));
      setMeta(`HTTP ${r.status} · ${Math.round(performance.now() - t0)} ms${r.requestId ? ` · ${r.requestId}` : ""}`);
      setOut(typeof r.body === "string" ? r.body : JSON.stringify(r.body, null, 2));
    } catch (e) {
      setMeta("network error");
      setOut(String(e));
    } finally {
      setBusy(false);
    }
  };

  const insert = (kind: string, f: Field) => {
    const args = f.args.length ? `(${f.args.map((a) => `${a.name}: $${a.name}`).join(", ")})` : "";
    const decl = f.args.length ? `(${f.args.map((a) => `$${a.name}: ${typeName(a.type)}`).join(", ")})` : "";
    setQuery(`${kind.toLowerCase()} ${f.name[0].toUpperCase() + f.name.slice(1)}${decl} {\n  ${f.name}${args} {\n    __typename\n  }\n}\n`);
  };

  const docs = useMemo(
    () =>
      roots?.map((r) => (
        <details key={r.name} open={r.name === "Query"}>
          <summary>{r.name}</summary>
          <ul>
            {r.fields.map((f) => (
              <li key={f.name}>
                <button type="button" className="linklike" onClick={() => insert(r.name === "Subscription" ? "subscription" : r.name === "Mutation" ? "mutation" : "query", f)}>
                  <span className="mono">{f.name}</span>
                </button>
                <span className="muted mono small">: {typeName(f.type)}</span>
                {f.description && <div className="muted small">{f.description}</div>}
              </li>
            ))}
          </ul>
        </details>
      )),
    [roots],
  );

  return (
    <div className="play" onKeyDown={(e) => (e.ctrlKey || e.metaKey) && e.key === "Enter" && (e.preventDefault(), run())}>
      <header className="play-head">
        <strong>filemill GraphQL playground</strong>
        <span className="muted small">POST /graphql · subscriptions over the /graphql websocket</span>
        <span className="grow" />
        <a href="/console/">Console</a>
        <button type="button" className="btn btn-primary" onClick={run} disabled={busy}>
          Run
        </button>
      </header>
      <div className="play-body">
        <section className="play-editor">
          <label htmlFor="q">Operation</label>
          <textarea id="q" spellCheck={false} value={query} onChange={(e) => setQuery(e.target.value)} />
          <div className="play-pair">
            <div>
              <label htmlFor="v">Variables (JSON)</label>
              <textarea id="v" spellCheck={false} value={vars} onChange={(e) => setVars(e.target.value)} />
            </div>
            <div>
              <label htmlFor="h">Headers (JSON)</label>
              <textarea id="h" spellCheck={false} value={hdrs} onChange={(e) => setHdrs(e.target.value)} />
            </div>
          </div>
        </section>
        <section className="play-result" aria-live="polite">
          <div className="play-meta">
            <span>Result</span>
            <span className="muted small">{meta}</span>
          </div>
          <pre tabIndex={0} aria-label="Result">{out}</pre>
        </section>
        <aside className="play-docs" aria-label="Schema">
          <div className="play-meta">
            <span>Schema</span>
            <button type="button" className="btn btn-small" onClick={loadSchema}>
              Reload
            </button>
          </div>
          {schemaErr ? <p className="muted small">{schemaErr} — set an Authorization header and reload.</p> : docs ?? <p className="muted small">Loading…</p>}
        </aside>
      </div>
    </div>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <Playground />
  </StrictMode>,
);
