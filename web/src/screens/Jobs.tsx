import { useQuery } from "urql";
import { graphql } from "../gql";
import { apiError } from "../lib/graphql";
import { Link, setQuery, useLocation } from "../lib/router";
import { filterChange, usePaging } from "../lib/paging";
import { useJobChanges, useTick } from "../lib/live";
import { jobDuration, number } from "../lib/format";
import { Card, Empty, ErrorBox, Loading, PageHeader, Pager, Progress, StateBadge, Time } from "../ui/ui";

const JobsQuery = graphql(`
  query Jobs($projectId: ID, $state: JobState, $first: Int, $after: String) {
    jobs(projectId: $projectId, state: $state, first: $first, after: $after) {
      nodes {
        id
        createdAt
        fileId
        file {
          id
          filename
        }
        batchId
        operation
        preset
        state
        progress
        creditsReserved
        creditsCharged
        startedAt
        finishedAt
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

const states = ["queued", "running", "succeeded", "failed", "cancelled"] as const;
type State = (typeof states)[number];

export function Jobs() {
  const { path, query } = useLocation();
  const paging = usePaging(path, query);
  const stateParam = query.get("state");
  const state = (states as readonly string[]).includes(stateParam ?? "") ? (stateParam as State) : undefined;
  const [{ data, error, fetching }, refetch] = useQuery({ query: JobsQuery, variables: { state, first: 25, after: paging.after } });
  const changes = useJobChanges();

  const rows = (data?.jobs.nodes ?? []).map((j) => {
    const c = changes.get(j.id);
    return c ? { ...j, ...c, file: j.file } : j;
  });
  // New jobs appear at the top of the first page while it is open.
  if (data && !paging.after) {
    const known = new Set(rows.map((r) => r.id));
    const fresh = [...changes.values()]
      .filter((c) => !known.has(c.id) && (!state || c.state === state))
      .filter((c) => !rows.length || Date.parse(c.createdAt) >= Date.parse(rows[0].createdAt))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
      .map((c) => ({ ...c, __typename: "Job" as const, file: null }));
    rows.unshift(...fresh);
  }
  // Rows that left the filtered state stay, marked by their new state, until reload.
  useTick(rows.some((r) => r.state === "running"));

  return (
    <div className="page">
      <PageHeader title="Jobs" subtitle="Live: states and progress arrive as they happen." actions={<Link className="btn btn-primary" to="/run">Run a job</Link>} />
      <Card
        title={state ? `Jobs ${state}` : "All jobs"}
        actions={
          <div className="segmented" role="group" aria-label="Filter by state">
            <button type="button" aria-pressed={!state} onClick={() => setQuery(path, query, filterChange({ state: null }))}>
              all
            </button>
            {states.map((s) => (
              <button key={s} type="button" aria-pressed={state === s} onClick={() => setQuery(path, query, filterChange({ state: s }))}>
                {s}
              </button>
            ))}
          </div>
        }
      >
        {error && !data ? (
          <ErrorBox error={apiError(error)!} onRetry={() => refetch({ requestPolicy: "network-only" })} />
        ) : !data ? (
          fetching && <Loading label="Loading jobs" />
        ) : rows.length === 0 ? (
          <Empty title={state ? `No ${state} jobs` : "No jobs yet"}>
            <Link to="/run">Run a job</Link> on an uploaded file; it shows here live.
          </Empty>
        ) : (
          <>
            <table className="table jobs-table">
              <thead>
                <tr>
                  <th scope="col">Job</th>
                  <th scope="col">Operation</th>
                  <th scope="col">File</th>
                  <th scope="col">State</th>
                  <th scope="col">Progress</th>
                  <th scope="col" className="num">Duration</th>
                  <th scope="col" className="num">Credits</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((j) => (
                  <tr key={j.id} data-job-id={j.id}>
                    <td>
                      <Link to={`/jobs/${j.id}`} className="mono">{j.id}</Link>
                      {j.batchId && (
                        <div className="small">
                          batch <Link to={`/batches/${j.batchId}`} className="mono">{j.batchId.slice(0, 12)}…</Link>
                        </div>
                      )}
                    </td>
                    <td>{j.operation ?? <span>{j.preset} <span className="tag">preset</span></span>}</td>
                    <td className="truncate">{j.file ? <Link to={`/files/${j.file.id}`}>{j.file.filename}</Link> : <Link to={`/files/${j.fileId}`} className="mono small">{j.fileId}</Link>}</td>
                    <td><StateBadge state={j.state} /></td>
                    <td className="progress-cell">
                      <Progress value={j.state === "succeeded" ? 100 : j.progress} label={`Progress of ${j.id}`} tone={j.state === "failed" ? "bad" : j.state === "succeeded" ? "ok" : undefined} />
                    </td>
                    <td className="num">{jobDuration(j.startedAt, j.finishedAt)}</td>
                    <td className="num" title={`${j.creditsReserved} reserved`}>{number(j.state === "succeeded" ? j.creditsCharged : j.state === "failed" || j.state === "cancelled" ? 0 : j.creditsReserved)}</td>
                    <td><Time iso={j.createdAt} rel /></td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager hasPrev={paging.hasPrev} hasNext={data.jobs.pageInfo.hasNextPage} onPrev={paging.previous} onNext={() => paging.next(data.jobs.pageInfo.endCursor)} />
          </>
        )}
      </Card>
    </div>
  );
}
