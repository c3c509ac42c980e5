import type { Client } from "@urql/core";
import { graphql } from "../gql";

// The jobs screen's query, apart from the screen: a first load of /console/jobs sends
// it as the page starts (prefetchJobs, from the entry chunk), beside the Viewer query
// and the screen's chunk, rather than after both.

export const JobsQuery = graphql(`
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

export const states = ["queued", "running", "succeeded", "failed", "cancelled"] as const;
export type State = (typeof states)[number];

/** The query's variables for the screen's address (its state filter and page). */
export function jobsVariables(query: URLSearchParams): { state: State | undefined; first: number; after: string | undefined } {
  const s = query.get("state");
  const state = (states as readonly string[]).includes(s ?? "") ? (s as State) : undefined;
  return { state, first: 25, after: query.get("after") || undefined };
}

let prefetched: string | null = null;

/** Sends the query for the jobs screen at this address, its answer kept by the client. */
export function prefetchJobs(client: Client, query: URLSearchParams) {
  const variables = jobsVariables(query);
  prefetched = JSON.stringify(variables);
  void client.query(JobsQuery, variables).toPromise();
}

/** The variables prefetched (as JSON), once: the first screen to ask reads them from the client. */
export function takePrefetched(variables: object): string | null {
  const p = prefetched;
  prefetched = null;
  return p === JSON.stringify(variables) ? p : null;
}
