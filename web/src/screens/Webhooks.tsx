import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import { apiError, newIdempotencyKey } from "../lib/graphql";
import { Link, useLocation } from "../lib/router";
import { usePaging } from "../lib/paging";
import { notAllowed, useCan, useViewer } from "../lib/viewer";
import { Card, CopyBlock, Dialog, Empty, ErrorBox, Loading, PageHeader, Pager, StateBadge, Time } from "../ui/ui";

const EndpointsQuery = graphql(`
  query WebhookEndpoints($first: Int, $after: String) {
    webhookEndpoints(first: $first, after: $after) {
      nodes {
        id
        createdAt
        url
        enabledEvents
        status
        disabledReason
        failingSince
        deliveries(first: 1) {
          nodes {
            id
            status
            createdAt
            lastStatusCode
          }
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

const CreateEndpoint = graphql(`
  mutation CreateWebhookEndpoint($input: CreateWebhookEndpointInput!, $key: String) {
    createWebhookEndpoint(input: $input, idempotencyKey: $key) {
      webhookEndpoint {
        id
        url
      }
      secret
    }
  }
`);

/** The events an endpoint may subscribe to (the contract's list). */
export const eventTypes = ["job.succeeded", "job.failed", "job.cancelled", "file.ready", "file.rejected", "file.deleted", "file.expired"];

function CreateForm({ onCreated }: { onCreated: (id: string, url: string, secret: string) => void }) {
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<string[]>(["job.succeeded", "job.failed"]);
  const [key] = useState(newIdempotencyKey);
  const [res, create] = useMutation(CreateEndpoint);
  const err = apiError(res.error);
  return (
    <form
      className="form"
      onSubmit={async (e) => {
        e.preventDefault();
        const r = await create({ input: { url, enabledEvents: events }, key });
        if (r.data) onCreated(r.data.createWebhookEndpoint.webhookEndpoint.id, r.data.createWebhookEndpoint.webhookEndpoint.url, r.data.createWebhookEndpoint.secret);
      }}
    >
      <div className="field">
        <label htmlFor="wh-url">Endpoint URL</label>
        <input id="wh-url" type="url" required placeholder="https://example.com/filemill" value={url} onChange={(e) => setUrl(e.target.value)} aria-invalid={err?.param === "url" || undefined} />
        <small className="muted">HTTPS only. Deliveries are signed (Standard Webhooks).</small>
      </div>
      <fieldset className="events-pick">
        <legend>Events</legend>
        {eventTypes.map((t) => (
          <label key={t} className="check">
            <input type="checkbox" checked={events.includes(t)} onChange={(e) => setEvents(e.target.checked ? [...events, t] : events.filter((x) => x !== t))} />
            <span className="mono">{t}</span>
          </label>
        ))}
      </fieldset>
      {err && <ErrorBox error={err} />}
      <div className="form-actions">
        <button type="submit" className="btn btn-primary" disabled={res.fetching || !events.length}>
          Create endpoint
        </button>
      </div>
    </form>
  );
}

/** A secret shown this once, with the warning that goes with it. */
export function SecretOnce({ secret }: { secret: string }) {
  return (
    <div className="secret-once">
      <p>
        <strong>Copy the signing secret now.</strong> It is shown only this once; rotate it if it is lost.
      </p>
      <CopyBlock label="Signing secret" text={secret} />
    </div>
  );
}

export function Webhooks() {
  const { path, query } = useLocation();
  const paging = usePaging(path, query);
  const [{ data, error, fetching }, refetch] = useQuery({ query: EndpointsQuery, variables: { first: 20, after: paging.after } });
  const [open, setOpen] = useState(false);
  const [created, setCreated] = useState<{ id: string; url: string; secret: string } | null>(null);
  const can = useCan("webhooks:write");
  const viewer = useViewer();
  const close = () => {
    setOpen(false);
    setCreated(null);
  };

  return (
    <div className="page">
      <PageHeader
        title="Webhooks"
        subtitle="Signed deliveries of job and file events, with every attempt recorded."
        actions={
          <button type="button" className="btn btn-primary" disabled={!can} title={can ? undefined : notAllowed(viewer?.role)} onClick={() => setOpen(true)}>
            Create endpoint
          </button>
        }
      />
      <Dialog open={open} title={created ? "Endpoint created" : "New endpoint"} onClose={close}>
        {created ? (
          <div>
            <p>
              Deliveries go to <span className="mono">{created.url}</span>.
            </p>
            <SecretOnce secret={created.secret} />
            <div className="form-actions">
              <Link className="btn" to={`/webhooks/${created.id}`} onClick={close}>
                Open endpoint
              </Link>
              <button type="button" className="btn btn-primary" onClick={close}>
                Done
              </button>
            </div>
          </div>
        ) : (
          <CreateForm
            onCreated={(id, url, secret) => {
              setCreated({ id, url, secret });
              refetch({ requestPolicy: "network-only" });
            }}
          />
        )}
      </Dialog>
      <Card title="Endpoints">
        {error && !data ? (
          <ErrorBox error={apiError(error)!} onRetry={() => refetch({ requestPolicy: "network-only" })} />
        ) : !data ? (
          fetching && <Loading label="Loading endpoints" />
        ) : data.webhookEndpoints.nodes.length === 0 ? (
          <Empty title="No endpoints">Create an endpoint to receive signed job and file events.</Empty>
        ) : (
          <>
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Status</th>
                  <th scope="col">Events</th>
                  <th scope="col">Last delivery</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {data.webhookEndpoints.nodes.map((ep) => {
                  const last = ep.deliveries.nodes[0];
                  return (
                    <tr key={ep.id}>
                      <td>
                        <Link to={`/webhooks/${ep.id}`} className="strong break">{ep.url}</Link>
                        <div className="mono muted small">{ep.id}</div>
                      </td>
                      <td>
                        <StateBadge state={ep.status} />
                        {ep.failingSince && <div className="bad-text small">failing since <Time iso={ep.failingSince} rel /></div>}
                      </td>
                      <td className="small">{ep.enabledEvents.join(", ")}</td>
                      <td>{last ? <><StateBadge state={last.status} /> <span className="muted small"><Time iso={last.createdAt} rel /></span></> : <span className="muted">none yet</span>}</td>
                      <td><Time iso={ep.createdAt} rel /></td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
            <Pager hasPrev={paging.hasPrev} hasNext={data.webhookEndpoints.pageInfo.hasNextPage} onPrev={paging.previous} onNext={() => paging.next(data.webhookEndpoints.pageInfo.endCursor)} />
          </>
        )}
      </Card>
    </div>
  );
}
