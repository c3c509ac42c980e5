import { useState, type FormEvent } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import { apiError } from "../lib/graphql";
import { useLocation } from "../lib/router";
import { usePaging } from "../lib/paging";
import { useCan, useViewer } from "../lib/viewer";
import { AdminPage } from "../ui/admin";
import { number } from "../lib/format";
import { Card, CopyBlock, Dialog, Empty, ErrorBox, Loading, Pager, Time } from "../ui/ui";

const KeysQuery = graphql(`
  query ApiKeys($first: Int, $after: String) {
    apiKeys(first: $first, after: $after) {
      nodes {
        id
        name
        masked
        environment
        projectId
        scopes
        ipAllowList
        allowedOperations
        allowedProjects
        spendLimit
        rateLimit
        expiresAt
        revokedAt
        lastUsedAt
        createdAt
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
    projects {
      id
      name
    }
  }
`);

const CreateKey = graphql(`
  mutation CreateApiKey($input: CreateApiKeyInput!) {
    createApiKey(input: $input) {
      secret
      apiKey {
        id
        masked
      }
    }
  }
`);

const RevokeKey = graphql(`
  mutation RevokeApiKey($id: ID!) {
    revokeApiKey(id: $id) {
      id
      revokedAt
    }
  }
`);

/** The scopes a key may list: the data scopes, then the management ones. */
export const keyScopes = ["files:read", "files:write", "jobs:read", "jobs:write", "webhooks:read", "webhooks:write", "usage:read", "manage", "organization"];

const list = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

function CreateKeyForm({ projects, onCreated }: { projects: { id: string; name: string }[]; onCreated: (secret: string) => void }) {
  const viewer = useViewer();
  const [name, setName] = useState("");
  const [environment, setEnvironment] = useState(viewer?.environment ?? "live");
  const [projectId, setProjectId] = useState(viewer?.project.id ?? "");
  const [scopes, setScopes] = useState<string[]>(["files:read", "files:write", "jobs:read", "jobs:write"]);
  const [ips, setIps] = useState("");
  const [ops, setOps] = useState("");
  const [allowed, setAllowed] = useState<string[]>([]);
  const [spend, setSpend] = useState("");
  const [expires, setExpires] = useState("");
  const [res, create] = useMutation(CreateKey);
  const err = apiError(res.error);
  const held = viewer?.scopes ?? keyScopes;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await create({
      input: {
        name,
        environment: environment as "live" | "test",
        projectId: projectId || null,
        scopes,
        ipAllowList: list(ips),
        allowedOperations: list(ops),
        allowedProjects: allowed,
        spendLimit: spend ? Number(spend) : 0,
        expiresAt: expires ? new Date(expires + "T23:59:59").toISOString() : null,
      },
    });
    if (r.data) onCreated(r.data.createApiKey.secret);
  };
  return (
    <form className="form" onSubmit={submit}>
      <div className="form-grid">
        <label>
          Name
          <input required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} aria-invalid={err?.param === "name" || undefined} />
        </label>
        <label>
          Environment
          <select value={environment} onChange={(e) => setEnvironment(e.target.value)}>
            <option value="live">live</option>
            <option value="test">test</option>
          </select>
        </label>
        <label>
          Project
          <select value={projectId} onChange={(e) => setProjectId(e.target.value)}>
            {projects.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Expires
          <input type="date" value={expires} onChange={(e) => setExpires(e.target.value)} />
          <small className="muted">Empty: never.</small>
        </label>
        <fieldset className="field-group">
          <legend>Scopes</legend>
          <div className="scopes-pick">
            {keyScopes.map((s) => (
              <label key={s} className="check">
                <input
                  type="checkbox"
                  checked={scopes.includes(s)}
                  disabled={!held.includes(s)}
                  onChange={(e) => setScopes(e.target.checked ? [...scopes, s] : scopes.filter((x) => x !== s))}
                />
                <span className="mono">{s}</span>
              </label>
            ))}
          </div>
          <small className="muted">None checked: every data scope. A key never holds a scope you lack.</small>
        </fieldset>
        <label>
          IP allow-list
          <input placeholder="203.0.113.0/24, 198.51.100.7" value={ips} onChange={(e) => setIps(e.target.value)} aria-invalid={err?.param === "ipAllowList" || undefined} />
          <small className="muted">Empty: any address.</small>
        </label>
        <label>
          Monthly spend limit (credits)
          <input type="number" min={0} value={spend} onChange={(e) => setSpend(e.target.value)} />
          <small className="muted">Empty: none.</small>
        </label>
        <label>
          Allowed operations
          <input placeholder="image.convert, ocr" value={ops} onChange={(e) => setOps(e.target.value)} />
          <small className="muted">Empty: all.</small>
        </label>
        <fieldset className="field-group">
          <legend>Allowed projects</legend>
          {projects.map((p) => (
            <label key={p.id} className="check">
              <input type="checkbox" checked={allowed.includes(p.id)} onChange={(e) => setAllowed(e.target.checked ? [...allowed, p.id] : allowed.filter((x) => x !== p.id))} />
              <span>{p.name}</span>
            </label>
          ))}
          <small className="muted">None checked: every project of the organization.</small>
        </fieldset>
      </div>
      {err && <ErrorBox error={err} />}
      <div className="form-actions">
        <button type="submit" className="btn btn-primary" disabled={res.fetching}>
          Create key
        </button>
      </div>
    </form>
  );
}

function restrictions(k: { ipAllowList: string[]; allowedOperations: string[]; allowedProjects: string[]; spendLimit: number; rateLimit: number }): string {
  const r: string[] = [];
  if (k.ipAllowList.length) r.push(`IPs ${k.ipAllowList.join(", ")}`);
  if (k.allowedOperations.length) r.push(`runs ${k.allowedOperations.join(", ")}`);
  if (k.allowedProjects.length) r.push(`${k.allowedProjects.length} project${k.allowedProjects.length === 1 ? "" : "s"}`);
  if (k.spendLimit) r.push(`${number(k.spendLimit)} credits/month`);
  if (k.rateLimit) r.push(`${number(k.rateLimit)} req/min`);
  return r.join(" · ") || "none";
}

export function Keys() {
  const { path, query } = useLocation();
  const paging = usePaging(path, query);
  const can = useCan("manage");
  const [{ data, error, fetching }, refetch] = useQuery({ query: KeysQuery, variables: { first: 20, after: paging.after }, pause: !can });
  const [open, setOpen] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const [rev, revoke] = useMutation(RevokeKey);
  const close = () => {
    setOpen(false);
    setSecret(null);
    refetch({ requestPolicy: "network-only" });
  };
  const projectName = (id: string) => data?.projects.find((p) => p.id === id)?.name ?? id;
  const err = apiError(error);
  return (
    <AdminPage
      title="Keys"
      subtitle="API keys of the organization: each acts in one environment, from one project, with the scopes and restrictions it lists."
      action="Create key"
      onAction={() => setOpen(true)}
    >
      <Card>
        {err && !data && <ErrorBox error={err} onRetry={() => refetch({ requestPolicy: "network-only" })} />}
        {!data && fetching && <Loading />}
        {rev.error && <ErrorBox error={apiError(rev.error)!} />}
        {data && data.apiKeys.nodes.length === 0 && <Empty title="No keys yet">Create one for an app or a CI job.</Empty>}
        {data && data.apiKeys.nodes.length > 0 && (
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Project · env</th>
                <th scope="col">Scopes</th>
                <th scope="col">Restrictions</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col"><span className="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {data.apiKeys.nodes.map((k) => (
                <tr key={k.id} data-key-id={k.id}>
                  <td>{k.name || <span className="muted">—</span>}</td>
                  <td className="mono">{k.masked}</td>
                  <td>
                    {projectName(k.projectId)} · <span className={"badge badge-env-" + k.environment}>{k.environment}</span>
                  </td>
                  <td className="small">{k.scopes.length ? k.scopes.join(", ") : <span className="muted">data scopes</span>}</td>
                  <td className="small">{restrictions(k)}</td>
                  <td>{k.lastUsedAt ? <Time iso={k.lastUsedAt} rel /> : <span className="muted">never</span>}</td>
                  <td>{k.expiresAt ? <Time iso={k.expiresAt} date /> : <span className="muted">never</span>}</td>
                  <td>
                    {k.revokedAt ? (
                      <span className="badge badge-failed">revoked</span>
                    ) : (
                      <button
                        type="button"
                        className="btn btn-small btn-danger"
                        aria-label={`Revoke ${k.name || k.masked}`}
                        disabled={rev.fetching}
                        onClick={async () => {
                          if (!confirm(`Revoke ${k.name || k.masked}? Requests with it are refused at once.`)) return;
                          await revoke({ id: k.id });
                          refetch({ requestPolicy: "network-only" });
                        }}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {data && <Pager hasPrev={paging.hasPrev} hasNext={data.apiKeys.pageInfo.hasNextPage} onPrev={paging.previous} onNext={() => paging.next(data.apiKeys.pageInfo.endCursor)} />}
      </Card>
      <Dialog open={open} title={secret ? "Key created" : "Create key"} onClose={close}>
        {secret ? (
          <div className="secret-once">
            <p>
              <strong>Copy the key now.</strong> It is shown only this once; the list shows its first characters.
            </p>
            <CopyBlock label="API key" text={secret} />
            <div className="form-actions">
              <button type="button" className="btn btn-primary" onClick={close}>
                Done
              </button>
            </div>
          </div>
        ) : (
          data && <CreateKeyForm projects={data.projects} onCreated={setSecret} />
        )}
      </Dialog>
    </AdminPage>
  );
}
