import { useQuery } from "urql";
import { graphql } from "../gql";
import { Link } from "../lib/router";
import { bytes, number } from "../lib/format";
import { Card, Empty, PageHeader, Stat, StateBadge, Time, screenState } from "../ui/ui";

const OverviewQuery = graphql(`
  query Overview {
    usage {
      ...UsageFields
    }
    queued: jobs(state: queued, first: 100) {
      nodes {
        id
        createdAt
      }
      pageInfo {
        hasNextPage
      }
    }
    running: jobs(state: running, first: 100) {
      nodes {
        id
        createdAt
      }
      pageInfo {
        hasNextPage
      }
    }
    succeeded: jobs(state: succeeded, first: 100) {
      nodes {
        id
        createdAt
      }
      pageInfo {
        hasNextPage
      }
    }
    failed: jobs(state: failed, first: 100) {
      nodes {
        id
        createdAt
        operation
        preset
        finishedAt
        error {
          code
          message
        }
        file {
          id
          filename
        }
      }
      pageInfo {
        hasNextPage
      }
    }
    cancelled: jobs(state: cancelled, first: 100) {
      nodes {
        id
        createdAt
      }
      pageInfo {
        hasNextPage
      }
    }
    operations {
      name
      kind
      engine
      available
    }
  }
`);

const states = ["queued", "running", "succeeded", "failed", "cancelled"] as const;

function startOfToday(): number {
  const d = new Date();
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

export function Overview() {
  const [{ data, error, fetching }, refetch] = useQuery({ query: OverviewQuery });
  const state = screenState(<PageHeader title="Overview" />, { data, error, fetching }, () => refetch({ requestPolicy: "network-only" }));
  if (state || !data) return state;

  const today = startOfToday();
  const counts = states.map((s) => {
    const page = data[s];
    const n = page.nodes.filter((j) => Date.parse(j.createdAt) >= today).length;
    // A full page of today's jobs: there may be more.
    const more = page.pageInfo.hasNextPage && n === page.nodes.length;
    return { state: s, n, more };
  });
  const total = counts.reduce((a, c) => a + c.n, 0);
  const engines = new Map<string, { available: boolean; ops: number }>();
  for (const o of data.operations) {
    const e = engines.get(o.engine) ?? { available: true, ops: 0 };
    e.available = e.available && o.available;
    e.ops++;
    engines.set(o.engine, e);
  }
  const failures = data.failed.nodes.slice(0, 6);
  const u = data.usage;

  return (
    <div className="page">
      <PageHeader title="Overview" subtitle={<>This period: <Time iso={u.period.start} date /> to <Time iso={u.period.end} date /></>} actions={<Link className="btn btn-primary" to="/run">Run a job</Link>} />
      <div className="grid stats">
        <Card>
          <Stat label="Credits balance" value={number(u.credits.balance)} hint={`${number(u.credits.reserved)} reserved · ${number(u.credits.used)} used this period`} />
        </Card>
        <Card>
          <Stat label="Jobs today" value={number(total)} hint={counts.some((c) => c.more) ? "at least; newest 100 per state counted" : "all states"} />
        </Card>
        <Card>
          <Stat label="Storage" value={bytes(u.storage.bytes)} hint={`${number(u.storage.files)} files`} />
        </Card>
      </div>
      <div className="grid two">
        <Card title="Jobs today by state" actions={<Link to="/jobs">All jobs</Link>}>
          {total === 0 ? (
            <Empty title="No jobs today">Jobs created today appear here by state.</Empty>
          ) : (
            <ul className="bars">
              {counts.map((c) => (
                <li key={c.state}>
                  <Link to={`/jobs?state=${c.state}`} className="bar-row">
                    <span className="bar-label"><StateBadge state={c.state} /></span>
                    <span className="bar-track" aria-hidden="true">
                      <span className={`bar-fill fill-${c.state}`} style={{ width: `${total ? (c.n / total) * 100 : 0}%` }} />
                    </span>
                    <span className="bar-value">{c.n}{c.more ? "+" : ""}</span>
                  </Link>
                </li>
              ))}
            </ul>
          )}
        </Card>
        <Card title="Engines">
          {engines.size === 0 ? (
            <Empty title="No engines">No operations are registered.</Empty>
          ) : (
            <ul className="engines">
              {[...engines.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, e]) => (
                <li key={name}>
                  <span className={"dot " + (e.available ? "dot-ok" : "dot-bad")} aria-hidden="true" />
                  <span className="engine-name">{name}</span>
                  <span className="muted">{e.ops} operation{e.ops === 1 ? "" : "s"}</span>
                  <span className={e.available ? "ok-text" : "bad-text"}>{e.available ? "available" : "unavailable"}</span>
                </li>
              ))}
            </ul>
          )}
        </Card>
      </div>
      <Card title="Recent failures" actions={<Link to="/jobs?state=failed">All failed jobs</Link>}>
        {failures.length === 0 ? (
          <Empty title="No failed jobs">Jobs that fail show here with their error.</Empty>
        ) : (
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col">Operation</th>
                <th scope="col">File</th>
                <th scope="col">Error</th>
                <th scope="col">Failed</th>
              </tr>
            </thead>
            <tbody>
              {failures.map((j) => (
                <tr key={j.id}>
                  <td><Link to={`/jobs/${j.id}`} className="mono">{j.id}</Link></td>
                  <td>{j.operation ?? j.preset}</td>
                  <td>{j.file ? <Link to={`/files/${j.file.id}`}>{j.file.filename}</Link> : <span className="muted">deleted</span>}</td>
                  <td><code>{j.error?.code}</code> <span className="muted">{j.error?.message}</span></td>
                  <td><Time iso={j.finishedAt} rel /></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
    </div>
  );
}
