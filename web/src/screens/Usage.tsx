import { useQuery } from "urql";
import { graphql } from "../gql";
import { bytes, number } from "../lib/format";
import { Card, Empty, PageHeader, Stat, Time, screenState } from "../ui/ui";
import { setQuery, useLocation } from "../lib/router";
import { BarChart } from "../ui/chart";

// A period's usage, as the overview and this screen show it.
export const UsageFields = graphql(`
  fragment UsageFields on Usage {
    projectId
    period {
      start
      end
    }
    credits {
      balance
      reserved
      used
    }
    storage {
      bytes
      files
    }
    egress {
      bytes
    }
  }
`);

const UsageQuery = graphql(`
  query Usage($from: String!, $to: String!) {
    usage {
      ...UsageFields
    }
    usageSeries(from: $from, to: $to) {
      from
      to
      days {
        date
        credits
        jobs
        uploadedBytes
        egressBytes
      }
      operations {
        operation
        jobs
        credits
      }
    }
  }
`);

const day = (t: Date) => t.toISOString().slice(0, 10);

/** The range a series covers: the URL's from/to, or this calendar month (UTC) so far. */
export function usageRange(query: URLSearchParams, now = new Date()): { from: string; to: string } {
  const ok = (s: string | null) => (s && /^\d{4}-\d{2}-\d{2}$/.test(s) ? s : null);
  const first = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  return { from: ok(query.get("from")) ?? day(first), to: ok(query.get("to")) ?? day(now) };
}

export function Usage() {
  const { path, query } = useLocation();
  const range = usageRange(query);
  const [{ data, error, fetching }, refetch] = useQuery({ query: UsageQuery, variables: range });
  const head = (
    <PageHeader
      title="Usage"
      actions={
        <form className="inline-form" aria-label="Range" onSubmit={(e) => e.preventDefault()}>
          <div className="field">
            <label htmlFor="usage-from">From</label>
            <input id="usage-from" type="date" value={range.from} max={range.to} onChange={(e) => setQuery(path, query, { from: e.target.value })} />
          </div>
          <div className="field">
            <label htmlFor="usage-to">To</label>
            <input id="usage-to" type="date" value={range.to} min={range.from} onChange={(e) => setQuery(path, query, { to: e.target.value })} />
          </div>
        </form>
      }
    />
  );
  const state = screenState(head, { data, error, fetching }, () => refetch({ requestPolicy: "network-only" }));
  if (state || !data) return state;
  const u = data.usage;
  const series = data.usageSeries;
  const sum = (f: (d: (typeof series.days)[number]) => number) => series.days.reduce((a, d) => a + f(d), 0);
  const chart = (f: (d: (typeof series.days)[number]) => number) => series.days.map((d) => ({ label: d.date, value: f(d) }));

  return (
    <div className="page">
      {head}
      <p className="subtitle">
        This period, <Time iso={u.period.start} date /> to <Time iso={u.period.end} date /> (calendar month, UTC)
      </p>
      <div className="grid stats four">
        <Card><Stat label="Credits used" value={number(u.credits.used)} hint={`${number(u.credits.reserved)} reserved`} /></Card>
        <Card><Stat label="Credits balance" value={number(u.credits.balance)} /></Card>
        <Card><Stat label="Storage" value={bytes(u.storage.bytes)} hint={`${number(u.storage.files)} files`} /></Card>
        <Card><Stat label="Egress" value={bytes(u.egress.bytes)} hint="downloads this period" /></Card>
      </div>
      <Card title="Credits charged per day" actions={<span className="muted small">{number(sum((d) => d.credits))} credits, {number(sum((d) => d.jobs))} jobs finished</span>}>
        {sum((d) => d.credits) === 0 ? <Empty title="No credits charged in this range">Jobs charge their credits when they finish.</Empty> : <BarChart data={chart((d) => d.credits)} unit="credits" label="Credits charged per day" />}
      </Card>
      <div className="grid two">
        <Card title="Uploaded per day" actions={<span className="muted small">{bytes(sum((d) => d.uploadedBytes))}</span>}>
          {sum((d) => d.uploadedBytes) === 0 ? <Empty title="Nothing uploaded in this range" /> : <BarChart data={chart((d) => d.uploadedBytes)} unit="bytes" format={bytes} label="Bytes uploaded per day" height={120} />}
        </Card>
        <Card title="Egress per day" actions={<span className="muted small">{bytes(sum((d) => d.egressBytes))}</span>}>
          {sum((d) => d.egressBytes) === 0 ? <Empty title="Nothing served in this range" /> : <BarChart data={chart((d) => d.egressBytes)} unit="bytes" format={bytes} label="Bytes served per day" height={120} />}
        </Card>
      </div>
      <Card title="Per operation">
        {series.operations.length === 0 ? (
          <Empty title="No jobs in this range" />
        ) : (
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Operation</th>
                <th scope="col" className="num">Jobs finished</th>
                <th scope="col" className="num">Credits</th>
              </tr>
            </thead>
            <tbody>
              {series.operations.map((o) => (
                <tr key={o.operation}>
                  <td className="mono">{o.operation}</td>
                  <td className="num">{number(o.jobs)}</td>
                  <td className="num">{number(o.credits)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
    </div>
  );
}
