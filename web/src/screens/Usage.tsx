import { useQuery } from "urql";
import { graphql } from "../gql";
import { bytes, number } from "../lib/format";
import { Card, Empty, PageHeader, Stat, Time, screenState } from "../ui/ui";
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
  query Usage {
    usage {
      ...UsageFields
    }
    succeeded: jobs(state: succeeded, first: 100) {
      nodes {
        id
        operation
        preset
        creditsCharged
        finishedAt
      }
      pageInfo {
        hasNextPage
      }
    }
  }
`);

export function Usage() {
  const [{ data, error, fetching }, refetch] = useQuery({ query: UsageQuery });
  const state = screenState(<PageHeader title="Usage" />, { data, error, fetching }, () => refetch({ requestPolicy: "network-only" }));
  if (state || !data) return state;
  const u = data.usage;
  const start = Date.parse(u.period.start);
  // Credits per operation and per day from the period's succeeded jobs (the newest 100).
  const jobs = data.succeeded.nodes.filter((j) => j.finishedAt && Date.parse(j.finishedAt) >= start);
  const perOp = new Map<string, { jobs: number; credits: number }>();
  const perDay = new Map<string, number>();
  for (const j of jobs) {
    const name = j.operation ?? j.preset ?? "?";
    const o = perOp.get(name) ?? { jobs: 0, credits: 0 };
    o.jobs++;
    o.credits += j.creditsCharged;
    perOp.set(name, o);
    const day = j.finishedAt!.slice(0, 10);
    perDay.set(day, (perDay.get(day) ?? 0) + j.creditsCharged);
  }
  const days: { label: string; value: number }[] = [];
  const end = Math.min(Date.parse(u.period.end), Date.now());
  for (let t = start; t <= end; t += 86400000) {
    const d = new Date(t).toISOString().slice(0, 10);
    days.push({ label: d, value: perDay.get(d) ?? 0 });
  }
  const partial = data.succeeded.pageInfo.hasNextPage;

  return (
    <div className="page">
      <PageHeader title="Usage" subtitle={<>This period, <Time iso={u.period.start} date /> to <Time iso={u.period.end} date /> (calendar month, UTC)</>} />
      <div className="grid stats four">
        <Card><Stat label="Credits used" value={number(u.credits.used)} hint={`${number(u.credits.reserved)} reserved`} /></Card>
        <Card><Stat label="Credits balance" value={number(u.credits.balance)} /></Card>
        <Card><Stat label="Storage" value={bytes(u.storage.bytes)} hint={`${number(u.storage.files)} files`} /></Card>
        <Card><Stat label="Egress" value={bytes(u.egress.bytes)} hint="downloads this period" /></Card>
      </div>
      <Card title="Credits charged per day" actions={partial ? <span className="muted small">from the newest 100 succeeded jobs</span> : undefined}>
        {jobs.length === 0 ? <Empty title="No credits charged this period">Succeeded jobs show here by day.</Empty> : <BarChart data={days} unit="credits" label="Credits charged per day this period" />}
        <p className="muted small">Storage and egress per day come with the usage series of organization management.</p>
      </Card>
      <Card title="Per operation">
        {perOp.size === 0 ? (
          <Empty title="No jobs this period" />
        ) : (
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Operation</th>
                <th scope="col" className="num">Succeeded jobs</th>
                <th scope="col" className="num">Credits</th>
              </tr>
            </thead>
            <tbody>
              {[...perOp.entries()].sort((a, b) => b[1].credits - a[1].credits).map(([name, o]) => (
                <tr key={name}>
                  <td className="mono">{name}</td>
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
