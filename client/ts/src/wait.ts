import type { Filemill, Job, JobState } from "./client.js";
import { sleep } from "./retry.js";

export interface JobProgress {
  state: JobState;
  progress: number;
}

export interface WaitOptions {
  /** Called when the job's state or progress changes (and once at the start). */
  onProgress?: (p: JobProgress) => void;
  /** Poll the REST API instead of subscribing. */
  pollOnly?: boolean;
  /** The WebSocket class to subscribe with; default globalThis.WebSocket (browsers, Node 22+). */
  WebSocket?: typeof globalThis.WebSocket;
  signal?: AbortSignal;
}

const terminal = (s: JobState) => s === "succeeded" || s === "failed" || s === "cancelled";

const query = "subscription JobUpdated($id: ID!) { jobUpdated(id: $id) { id state progress } }";

export async function waitJob(c: Filemill, jobId: string, o: WaitOptions): Promise<Job> {
  let last: JobProgress | undefined;
  const report = (p: JobProgress) => {
    if (last && last.state === p.state && last.progress === p.progress) return;
    last = p;
    o.onProgress?.(p);
  };
  const WS = o.WebSocket ?? globalThis.WebSocket;
  if (!o.pollOnly && WS) {
    // Refused or broken, the socket hands over to polling.
    const done = await subscribe(c, WS, jobId, report, o.signal).catch(() => false);
    if (done) return c.getJob(jobId, { signal: o.signal });
  }
  let wait = 250;
  for (;;) {
    const job = await c.getJob(jobId, { signal: o.signal });
    report({ state: job.state, progress: job.progress });
    if (terminal(job.state)) return job;
    await sleep(wait / 2 + Math.random() * (wait / 2), o.signal);
    wait = Math.min(wait * 1.5, 5000);
  }
}

// subscribe follows jobUpdated over graphql-transport-ws; true once the job is terminal.
// A browser's WebSocket sends no headers: the key goes in connection_init.
function subscribe(
  c: Filemill,
  WS: typeof globalThis.WebSocket,
  jobId: string,
  report: (p: JobProgress) => void,
  signal?: AbortSignal,
): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const ws = new WS(c.baseUrl.replace(/^http/, "ws") + "/graphql", "graphql-transport-ws");
    const finish = (v: boolean | Error) => {
      signal?.removeEventListener("abort", onAbort);
      try {
        ws.close(1000);
      } catch {
        // already closed
      }
      if (v instanceof Error) reject(v);
      else resolve(v);
    };
    const onAbort = () => finish(signal?.reason ?? new Error("aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
    ws.onopen = () => ws.send(JSON.stringify({ type: "connection_init", payload: { authorization: `Bearer ${c.apiKey}` } }));
    ws.onerror = () => finish(new Error("websocket failed"));
    ws.onclose = () => finish(new Error("websocket closed"));
    ws.onmessage = (ev) => {
      const m = JSON.parse(String(ev.data));
      switch (m.type) {
        case "connection_ack":
          ws.send(JSON.stringify({ id: "1", type: "subscribe", payload: { query, variables: { id: jobId } } }));
          break;
        case "ping":
          ws.send(JSON.stringify({ type: "pong" }));
          break;
        case "next": {
          const j = m.payload?.data?.jobUpdated;
          if (!j || m.payload?.errors) return finish(new Error("subscription: " + JSON.stringify(m.payload)));
          report({ state: j.state, progress: j.progress });
          if (terminal(j.state)) {
            ws.send(JSON.stringify({ id: "1", type: "complete" }));
            finish(true);
          }
          break;
        }
        case "error":
        case "complete":
          finish(new Error("subscription ended: " + JSON.stringify(m.payload ?? null)));
      }
    };
  });
}
