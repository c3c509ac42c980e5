import { useEffect, useRef, useState } from "react";
import { useClient } from "urql";
import { graphql } from "../gql";
import { onLinkState } from "./graphql";

// Live job changes for lists: the project's job events over the one websocket. Each
// event carries the job as REST shows it; lists merge these fields into their rows.

const JobEvents = graphql(`
  subscription JobEvents($types: [String!]) {
    events(types: $types) {
      id
      type
      createdAt
      data
    }
  }
`);

export const jobEventTypes = ["job.queued", "job.running", "job.progress", "job.succeeded", "job.failed", "job.cancelled"];

export interface JobChange {
  id: string;
  createdAt: string;
  state: string;
  progress: number;
  fileId: string;
  batchId: string | null;
  operation: string | null;
  preset: string | null;
  creditsReserved: number;
  creditsCharged: number;
  startedAt: string | null;
  finishedAt: string | null;
}

function fromREST(o: Record<string, unknown>): JobChange | null {
  if (typeof o?.id !== "string" || typeof o.state !== "string") return null;
  return {
    id: o.id,
    createdAt: o.created_at as string,
    state: o.state,
    progress: (o.progress as number) ?? 0,
    fileId: o.file_id as string,
    batchId: (o.batch_id as string) ?? null,
    operation: (o.operation as string) ?? null,
    preset: (o.preset as string) ?? null,
    creditsReserved: (o.credits_reserved as number) ?? 0,
    creditsCharged: (o.credits_charged as number) ?? 0,
    startedAt: (o.started_at as string) ?? null,
    finishedAt: (o.finished_at as string) ?? null,
  };
}

const order: Record<string, number> = { queued: 0, running: 1, succeeded: 2, failed: 2, cancelled: 2 };

/**
 * The latest change seen for each job since the page opened. A late event never takes
 * a job back (running after succeeded); a reconnecting socket only delays changes.
 */
export function useJobChanges(): Map<string, JobChange> {
  const client = useClient();
  const [changes, setChanges] = useState<Map<string, JobChange>>(() => new Map());
  useEffect(() => {
    const sub = client.subscription(JobEvents, { types: jobEventTypes }).subscribe((r) => {
      const ev = r.data?.events;
      if (!ev) return;
      const j = fromREST(((ev.data as { object?: Record<string, unknown> })?.object ?? {}) as Record<string, unknown>);
      if (!j) return;
      setChanges((m) => {
        const prev = m.get(j.id);
        if (prev && (order[prev.state] > order[j.state] || (prev.state === j.state && prev.progress > j.progress))) return m;
        const next = new Map(m);
        next.set(j.id, j);
        return next;
      });
    });
    return () => sub.unsubscribe();
  }, [client]);
  return changes;
}

/**
 * Calls `read` each time the websocket connects after the page opened: events sent
 * before a subscription starts never reach it, so what changed while the socket was
 * connecting (or reconnecting) is read again rather than missed.
 */
export function useReadOnConnect(read: () => void) {
  const latest = useRef(read);
  latest.current = read;
  useEffect(() => {
    let first = true;
    return onLinkState((s) => {
      if (!first && s === "connected") latest.current();
      first = false;
    });
  }, []);
}

/** Re-renders every second while `on` (running durations tick); answers the tick's count. */
export function useTick(on: boolean): number {
  const [n, set] = useState(0);
  useEffect(() => {
    if (!on) return;
    const t = setInterval(() => set((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, [on]);
  return n;
}
