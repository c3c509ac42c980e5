import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import { apiError, newIdempotencyKey } from "../lib/graphql";
import { navigate, useLocation } from "../lib/router";
import { usePaging } from "../lib/paging";
import { Card, Dialog, Empty, ErrorBox, PageHeader, Pager, StateBadge, Time, screenState } from "../ui/ui";
import { SecretOnce } from "./Webhooks";
import { notAllowed, useCan, useViewer } from "../lib/viewer";

const EndpointQuery = graphql(`
  query WebhookEndpoint($id: ID!, $first: Int, $after: String) {
    webhookEndpoint(id: $id) {
      id
      createdAt
      url
      enabledEvents
      status
      disabledReason
      disabledAt
      failingSince
      previousSecretExpiresAt
      deliveries(first: $first, after: $after) {
        nodes {
          id
          createdAt
          eventId
          eventType
          status
          attemptCount
          nextAttemptAt
          lastStatusCode
          lastError
          attempts {
            attempt
            createdAt
            statusCode
            durationMs
            responseSnippet
            error
            nextAttemptAt
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

const SendTest = graphql(`
  mutation SendTestEvent($id: ID!) {
    sendTestEvent(webhookEndpointId: $id) {
      id
      eventId
      eventType
    }
  }
`);
const Enable = graphql(`
  mutation EnableWebhookEndpoint($id: ID!) {
    enableWebhookEndpoint(id: $id) {
      id
      status
      disabledReason
    }
  }
`);
const Disable = graphql(`
  mutation DisableWebhookEndpoint($id: ID!) {
    disableWebhookEndpoint(id: $id) {
      id
      status
      disabledReason
    }
  }
`);
const Rotate = graphql(`
  mutation RotateWebhookSecret($id: ID!, $key: String) {
    rotateWebhookSecret(id: $id, idempotencyKey: $key) {
      secret
      webhookEndpoint {
        id
        previousSecretExpiresAt
      }
    }
  }
`);
const Retry = graphql(`
  mutation RetryDelivery($endpoint: ID!, $delivery: ID!, $key: String) {
    retryDelivery(webhookEndpointId: $endpoint, deliveryId: $delivery, idempotencyKey: $key) {
      id
      status
      attemptCount
    }
  }
`);
const Delete = graphql(`
  mutation DeleteWebhookEndpoint($id: ID!) {
    deleteWebhookEndpoint(id: $id) {
      id
    }
  }
`);

export function WebhookDetail({ id }: { id: string }) {
  const { path, query } = useLocation();
  const paging = usePaging(path, query);
  const [{ data, error, fetching }, refetch] = useQuery({ query: EndpointQuery, variables: { id, first: 20, after: paging.after } });
  const [test, sendTest] = useMutation(SendTest);
  const [rot, rotate] = useMutation(Rotate);
  const [retry, doRetry] = useMutation(Retry);
  const [del, doDelete] = useMutation(Delete);
  const [en, enable] = useMutation(Enable);
  const [dis, disable] = useMutation(Disable);
  const can = useCan("webhooks:write");
  const viewer = useViewer();
  const [secret, setSecret] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const reload = () => refetch({ requestPolicy: "network-only" });
  const ep = data?.webhookEndpoint;
  const head = <PageHeader title="Webhook endpoint" subtitle={<span className="mono">{id}</span>} />;
  const state = screenState(head, { data, error, fetching }, reload);
  if (state || !data) return state;
  if (!ep) return <div className="page">{head}<Empty title="Endpoint not found" /></div>;
  const mutErr = apiError(test.error ?? rot.error ?? retry.error ?? del.error ?? en.error ?? dis.error);
  const why = can ? undefined : notAllowed(viewer?.role);

  return (
    <div className="page">
      <PageHeader
        title={<span className="break">{ep.url}</span>}
        subtitle={<><span className="mono">{ep.id}</span> · created <Time iso={ep.createdAt} /></>}
        actions={
          <>
            <button type="button" className="btn" title={why} disabled={!can || test.fetching || ep.status !== "enabled"} onClick={async () => { const r = await sendTest({ id: ep.id }); if (!r.error) setTimeout(reload, 800); }}>
              Send test event
            </button>
            {ep.status === "enabled" ? (
              <button type="button" className="btn" title={why} disabled={!can || dis.fetching} onClick={async () => { await disable({ id: ep.id }); reload(); }}>
                Disable
              </button>
            ) : (
              <button type="button" className="btn" title={why} disabled={!can || en.fetching} onClick={async () => { await enable({ id: ep.id }); reload(); }}>
                Enable
              </button>
            )}
            <button type="button" className="btn" title={why} disabled={!can || rot.fetching} onClick={async () => { const r = await rotate({ id: ep.id, key: newIdempotencyKey() }); if (r.data) setSecret(r.data.rotateWebhookSecret.secret); }}>
              Rotate secret
            </button>
            <button type="button" className="btn btn-danger" title={why} disabled={!can || del.fetching} onClick={async () => { if (!confirm("Delete this endpoint? Deliveries stop.")) return; const r = await doDelete({ id: ep.id }); if (!r.error) navigate("/webhooks"); }}>
              Delete
            </button>
          </>
        }
      />
      {mutErr && <ErrorBox error={mutErr} />}
      {test.data && <p className="notice" role="status">Test event <span className="mono">{test.data.sendTestEvent.eventId}</span> sent; its delivery appears below.</p>}
      <Dialog open={!!secret} title="New signing secret" onClose={() => setSecret(null)}>
        {secret && <SecretOnce secret={secret} />}
        <p className="muted small">The previous secret keeps signing beside it for a day, so receivers can switch without missing deliveries.</p>
        <div className="form-actions"><button type="button" className="btn btn-primary" onClick={() => setSecret(null)}>Done</button></div>
      </Dialog>
      <Card>
        <dl className="kv kv-wide">
          <dt>Status</dt>
          <dd>
            <StateBadge state={ep.status} />
            {ep.disabledReason && <span className="muted"> — {ep.disabledReason} (<Time iso={ep.disabledAt} />)</span>}
          </dd>
          <dt>Events</dt>
          <dd>{ep.enabledEvents.map((e) => <span key={e} className="tag mono">{e}</span>)}</dd>
          {ep.failingSince && (<><dt>Failing since</dt><dd className="bad-text"><Time iso={ep.failingSince} /></dd></>)}
          {ep.previousSecretExpiresAt && (<><dt>Previous secret</dt><dd>signs until <Time iso={ep.previousSecretExpiresAt} /></dd></>)}
        </dl>
      </Card>
      <Card title="Deliveries" actions={<button type="button" className="btn btn-small" onClick={reload}>Refresh</button>}>
        {ep.deliveries.nodes.length === 0 ? (
          <Empty title="No deliveries yet">Events this endpoint listens to are delivered here; send a test event to try it.</Empty>
        ) : (
          <>
            <table className="table deliveries">
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="num">Attempts</th>
                  <th scope="col" className="num">Last code</th>
                  <th scope="col">Created</th>
                  <th scope="col"><span className="sr-only">Actions</span></th>
                </tr>
              </thead>
              {ep.deliveries.nodes.map((d) => (
                <tbody key={d.id}>
                  <tr>
                    <td>
                      <button type="button" className="linklike" aria-expanded={open === d.id} onClick={() => setOpen(open === d.id ? null : d.id)}>
                        <span className="mono">{d.eventType}</span>
                      </button>
                      <div className="mono muted small">{d.eventId}</div>
                    </td>
                    <td><StateBadge state={d.status} />{d.nextAttemptAt && <div className="muted small">next <Time iso={d.nextAttemptAt} rel /></div>}</td>
                    <td className="num">{d.attemptCount}</td>
                    <td className="num">{d.lastStatusCode ?? "—"}</td>
                    <td><Time iso={d.createdAt} rel /></td>
                    <td className="row-actions">
                      <button type="button" className="btn btn-small" title={why} disabled={!can || retry.fetching} onClick={async () => { const r = await doRetry({ endpoint: ep.id, delivery: d.id, key: newIdempotencyKey() }); if (!r.error) { setOpen(d.id); setTimeout(reload, 800); } }}>
                        Resend
                      </button>
                    </td>
                  </tr>
                  {open === d.id && (
                    <tr className="attempts-row">
                      <td colSpan={6}>
                        {d.attempts.length === 0 ? (
                          <p className="muted">No attempt yet.</p>
                        ) : (
                          <ol className="attempts">
                            {d.attempts.map((a) => (
                              <li key={a.attempt}>
                                <div className="attempt-head">
                                  <strong>Attempt {a.attempt}</strong>
                                  <span className={a.statusCode && a.statusCode < 300 ? "ok-text" : "bad-text"}>{a.statusCode ?? "no response"}</span>
                                  <span className="muted">{a.durationMs} ms</span>
                                  <Time iso={a.createdAt} />
                                  {a.nextAttemptAt && <span className="muted">retry <Time iso={a.nextAttemptAt} rel /></span>}
                                </div>
                                {a.error && <div className="bad-text small">{a.error}</div>}
                                {a.responseSnippet && <pre className="code small" tabIndex={0} aria-label={`Response body of attempt ${a.attempt}`}>{a.responseSnippet}</pre>}
                              </li>
                            ))}
                          </ol>
                        )}
                      </td>
                    </tr>
                  )}
                </tbody>
              ))}
            </table>
            <Pager hasPrev={paging.hasPrev} hasNext={ep.deliveries.pageInfo.hasNextPage} onPrev={paging.previous} onNext={() => paging.next(ep.deliveries.pageInfo.endCursor)} />
          </>
        )}
      </Card>
    </div>
  );
}
