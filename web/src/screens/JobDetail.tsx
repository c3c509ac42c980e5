import { useState } from "react";
import { useMutation, useQuery, useSubscription } from "urql";
import { notAllowed, useCan, useViewer } from "../lib/viewer";
import { graphql } from "../gql";
import { apiError, newIdempotencyKey } from "../lib/graphql";
import { Link } from "../lib/router";
import { useTick } from "../lib/live";
import { bytes, jobDuration, number } from "../lib/format";
import { Card, Empty, ErrorBox, Loading, PageHeader, Progress, Time } from "../ui/ui";
import { DownloadButton, Preview } from "./preview";

const JobFields = graphql(`
  fragment JobFields on Job {
    id
    createdAt
    projectId
    fileId
    file {
      id
      filename
    }
    batchId
    operation
    preset
    options
    state
    progress
    attempts
    creditsReserved
    creditsCharged
    error {
      code
      message
    }
    artifacts {
      id
      name
      step
      mimeType
      byteSize
      createdAt
    }
    startedAt
    finishedAt
  }
`);
void JobFields;

const JobQuery = graphql(`
  query JobDetail($id: ID!) {
    job(id: $id) {
      ...JobFields
    }
  }
`);

const JobLive = graphql(`
  subscription JobLive($id: ID!) {
    jobUpdated(id: $id) {
      ...JobFields
    }
  }
`);

const CancelJob = graphql(`
  mutation CancelJob($id: ID!, $key: String) {
    cancelJob(id: $id, idempotencyKey: $key) {
      ...JobFields
    }
  }
`);

export function JobDetail({ id }: { id: string }) {
  const [{ data, error, fetching }, refetch] = useQuery({ query: JobQuery, variables: { id } });
  // The subscription sends the job now, then each change: no polling, no reload.
  const [live] = useSubscription({ query: JobLive, variables: { id } });
  const [cancel, doCancel] = useMutation(CancelJob);
  const canCancel = useCan("jobs:write");
  const viewer = useViewer();
  const [cancelKey] = useState(newIdempotencyKey);
  const j = live.data?.jobUpdated ?? cancel.data?.cancelJob ?? data?.job;
  useTick(j?.state === "running");

  const head = <PageHeader title="Job" subtitle={<span className="mono">{id}</span>} />;
  if (!j) {
    if (error) return <div className="page">{head}<ErrorBox error={apiError(error)!} onRetry={() => refetch({ requestPolicy: "network-only" })} /></div>;
    if (data && !data.job) return <div className="page">{head}<Empty title="Job not found">It may belong to another project.</Empty></div>;
    return <div className="page">{head}{fetching && <Loading />}</div>;
  }
  const chunks = j.artifacts.find((a) => a.name === "chunks.json");

  return (
    <div className="page">
      <PageHeader
        title={
          <>
            {j.operation ?? j.preset} <span className="muted">job</span>
          </>
        }
        subtitle={<span className="mono">{j.id}</span>}
        actions={
          <>
            {chunks && j.state === "succeeded" && (
              <Link className="btn btn-primary" to={`/jobs/${j.id}/ai-ready`}>
                Open ai-ready viewer
              </Link>
            )}
            {j.state === "queued" && (
              <button type="button" className="btn btn-danger" disabled={!canCancel || cancel.fetching} title={canCancel ? undefined : notAllowed(viewer?.role)} onClick={() => doCancel({ id: j.id, key: cancelKey })}>
                Cancel job
              </button>
            )}
          </>
        }
      />
      {cancel.error && <ErrorBox error={apiError(cancel.error)!} />}
      <Card>
        <div className="job-summary">
          <div>
            <div className="stat-label">State</div>
            <div className={`job-state badge badge-${j.state}`} role="status" aria-label="Job state" aria-live="polite">
              {j.state}
            </div>
          </div>
          <div className="grow">
            <div className="stat-label">Progress</div>
            <Progress value={j.state === "succeeded" ? 100 : j.progress} label="Job progress" tone={j.state === "failed" ? "bad" : j.state === "succeeded" ? "ok" : undefined} />
          </div>
          <div>
            <div className="stat-label">Duration</div>
            <div>{jobDuration(j.startedAt, j.finishedAt)}</div>
          </div>
          <div>
            <div className="stat-label">Credits</div>
            <div>
              {number(j.creditsCharged)} <span className="muted small">of {number(j.creditsReserved)} reserved</span>
            </div>
          </div>
          <div>
            <div className="stat-label">Attempts</div>
            <div>{j.attempts}</div>
          </div>
        </div>
        {j.error && (
          <div className="job-error" role="alert">
            <strong>Failed</strong> <code>{j.error.code}</code> {j.error.message}
          </div>
        )}
      </Card>
      <div className="grid two">
        <Card title="Request">
          <dl className="kv">
            <dt>File</dt>
            <dd>{j.file ? <Link to={`/files/${j.file.id}`}>{j.file.filename}</Link> : <span className="mono">{j.fileId}</span>}</dd>
            {j.batchId && (<><dt>Batch</dt><dd><Link to={`/batches/${j.batchId}`} className="mono">{j.batchId}</Link></dd></>)}
            <dt>Created</dt>
            <dd><Time iso={j.createdAt} /></dd>
            <dt>Started</dt>
            <dd><Time iso={j.startedAt} /></dd>
            <dt>Finished</dt>
            <dd><Time iso={j.finishedAt} /></dd>
          </dl>
          <h3 className="section-title">Options</h3>
          <pre className="code" tabIndex={0} aria-label="Options">{JSON.stringify(j.options ?? {}, null, 2)}</pre>
        </Card>
        <Card title={`Artifacts (${j.artifacts.length})`}>
          {j.artifacts.length === 0 ? (
            <Empty title={j.state === "succeeded" ? "No artifacts" : "No artifacts yet"}>{j.state === "queued" || j.state === "running" ? "They appear when the job succeeds." : null}</Empty>
          ) : (
            <ul className="artifact-list">
              {j.artifacts.map((a, i) => (
                <li key={a.id}>
                  <div className="artifact-row">
                    <span className="strong">{a.name}</span>
                    <span className="muted small">{a.mimeType} · {bytes(a.byteSize)}</span>
                    <DownloadButton fileId={j.fileId} artifactId={a.id} label={`Download ${a.name}`} />
                  </div>
                  {/* The first artifacts preview inline: images, and text such as markdown. */}
                  {i < 4 && <Preview fileId={j.fileId} artifactId={a.id} mimeType={a.mimeType} name={a.name} byteSize={a.byteSize} quiet />}
                </li>
              ))}
            </ul>
          )}
        </Card>
      </div>
    </div>
  );
}
