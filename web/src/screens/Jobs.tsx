import { memo, useRef, useState } from "react";
import { useClient, useQuery } from "urql";
import type { JobsQuery as JobsResult } from "../gql/graphql";
import { JobsQuery, jobsVariables, states, takePrefetched } from "./jobsQuery";
import { apiError } from "../lib/graphql";
import { Link, setQuery, useLocation } from "../lib/router";
import { filterChange, usePaging } from "../lib/paging";
import { useJobChanges, useReadOnConnect, useTick, type JobChange } from "../lib/live";
import { jobDuration, number } from "../lib/format";
import { Card, Empty, ErrorBox, Loading, PageHeader, Pager, Progress, StateBadge, Time } from "../ui/ui";

type Node = JobsResult["jobs"]["nodes"][number];
// A row: the job as the page read it, with the latest live change over it.
type Row = Omit<Node, "__typename" | "state"> & { state: string };

export function Jobs() {
  const { path, query } = useLocation();
  const client = useClient();
  // Another page or filter not read yet: its request goes out with the click, before
  // the screen renders for the new address (the screen's query then shares it). A page
  // the client holds shows from there at once, read again by the screen.
  const ask = (q: URLSearchParams) => {
    const v = jobsVariables(q);
    if (!client.readQuery(JobsQuery, v)?.data) void client.query(JobsQuery, v, { requestPolicy: "network-only" }).toPromise();
  };
  const paging = usePaging(path, query, ask);
  const variables = jobsVariables(query);
  const { state } = variables;
  // The page the first load read before this screen rendered is not read again.
  const [prefetched] = useState(() => takePrefetched(variables));
  const [{ data: fresh, error, fetching }, refetch] = useQuery({
    query: JobsQuery,
    variables,
    requestPolicy: prefetched === JSON.stringify(variables) ? "cache-first" : undefined,
  });
  const changes = useJobChanges();
  useReadOnConnect(() => refetch({ requestPolicy: "network-only" }));
  // While another page or filter is on its way the rows shown stay (marked busy): the
  // table is not taken down for a spinner and built again, and the new rows replace
  // the old in one commit.
  const shown = useRef(fresh);
  if (fresh) shown.current = fresh;
  const data = fresh ?? (fetching && !error ? shown.current : undefined);
  const busy = data !== fresh;

  const merged = useRef(new Map<string, { j: Row; c: JobChange; row: Row }>());
  const rows: Row[] = (data?.jobs.nodes ?? []).map((j) => {
    const c = changes.get(j.id);
    if (!c) return j;
    // The same merged object while neither side changed: its row is not drawn again.
    const m = merged.current.get(j.id);
    if (m && m.j === j && m.c === c) return m.row;
    const row = { ...j, ...c, file: j.file };
    merged.current.set(j.id, { j, c, row });
    return row;
  });
  // New jobs appear at the top of the first page while it is open.
  if (data && !busy && !paging.after) {
    const known = new Set(rows.map((r) => r.id));
    const added = [...changes.values()]
      .filter((c) => !known.has(c.id) && (!state || c.state === state))
      .filter((c) => !rows.length || Date.parse(c.createdAt) >= Date.parse(rows[0].createdAt))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
      .map((c) => ({ ...c, __typename: "Job" as const, file: null }));
    rows.unshift(...added);
  }
  // Rows that left the filtered state stay, marked by their new state, until reload.
  const tick = useTick(rows.some((r) => r.state === "running"));

  return (
    <div className="page">
      <PageHeader title="Jobs" subtitle="Live: states and progress arrive as they happen." actions={<Link className="btn btn-primary" to="/run">Run a job</Link>} />
      <Card
        title={state ? `Jobs ${state}` : "All jobs"}
        actions={
          <div className="segmented" role="group" aria-label="Filter by state">
            <button type="button" aria-pressed={!state} onClick={() => setQuery(path, query, filterChange({ state: null }), ask)}>
              all
            </button>
            {states.map((s) => (
              <button key={s} type="button" aria-pressed={state === s} onClick={() => setQuery(path, query, filterChange({ state: s }), ask)}>
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
            <table className={"table jobs-table" + (busy ? " busy" : "")} aria-busy={busy || undefined}>
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
                  <JobRow key={j.id} j={j} tick={j.state === "running" ? tick : 0} />
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

/**
 * One job's row, drawn again only when its job changed (a live event) or, while it
 * runs, each second (tick) for its duration.
 */
const JobRow = memo(function JobRow({ j }: { j: Row; tick: number }) {
  return (
    <tr data-job-id={j.id}>
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
  );
});
