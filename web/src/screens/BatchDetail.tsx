import { useQuery, useSubscription } from "urql";
import { graphql } from "../gql";
import { apiError } from "../lib/graphql";
import { Link } from "../lib/router";
import { number } from "../lib/format";
import { Card, Empty, ErrorBox, Loading, PageHeader, StateBadge, Time } from "../ui/ui";

const BatchFields = graphql(`
  fragment BatchFields on Batch {
    id
    createdAt
    operation
    preset
    options
    state
    counts {
      queued
      running
      succeeded
      failed
      cancelled
    }
    creditsEstimated
    creditsCharged
    items {
      fileId
      jobId
      state
      error {
        code
        message
      }
    }
  }
`);
void BatchFields;

const BatchQuery = graphql(`
  query BatchDetail($id: ID!) {
    batch(id: $id) {
      ...BatchFields
    }
  }
`);
const BatchLive = graphql(`
  subscription BatchLive($id: ID!) {
    batchUpdated(id: $id) {
      ...BatchFields
    }
  }
`);

export function BatchDetail({ id }: { id: string }) {
  const [{ data, error, fetching }, refetch] = useQuery({ query: BatchQuery, variables: { id } });
  const [live] = useSubscription({ query: BatchLive, variables: { id } });
  const b = live.data?.batchUpdated ?? data?.batch;
  const head = <PageHeader title="Batch" subtitle={<span className="mono">{id}</span>} />;
  if (!b) {
    if (error) return <div className="page">{head}<ErrorBox error={apiError(error)!} onRetry={() => refetch({ requestPolicy: "network-only" })} /></div>;
    if (data && !data.batch) return <div className="page">{head}<Empty title="Batch not found" /></div>;
    return <div className="page">{head}{fetching && <Loading />}</div>;
  }
  return (
    <div className="page">
      <PageHeader title={<>{b.operation ?? b.preset} <span className="muted">batch</span></>} subtitle={<><span className="mono">{b.id}</span> · <Time iso={b.createdAt} /></>} />
      <Card>
        <div className="job-summary">
          <div>
            <div className="stat-label">State</div>
            <div role="status" aria-label="Batch state"><StateBadge state={b.state} /></div>
          </div>
          {(["queued", "running", "succeeded", "failed", "cancelled"] as const).map((s) => (
            <div key={s}>
              <div className="stat-label">{s}</div>
              <div>{b.counts[s]}</div>
            </div>
          ))}
          <div>
            <div className="stat-label">Credits</div>
            <div>{number(b.creditsCharged)} <span className="muted small">of {number(b.creditsEstimated)} estimated</span></div>
          </div>
        </div>
      </Card>
      <Card title={`Items (${b.items.length})`}>
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">File</th>
              <th scope="col">State</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {b.items.map((it) => (
              <tr key={it.jobId}>
                <td><Link to={`/jobs/${it.jobId}`} className="mono">{it.jobId}</Link></td>
                <td><Link to={`/files/${it.fileId}`} className="mono">{it.fileId}</Link></td>
                <td><StateBadge state={it.state} /></td>
                <td>{it.error ? <><code>{it.error.code}</code> {it.error.message}</> : <span className="muted">—</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
    </div>
  );
}
