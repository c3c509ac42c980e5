// Retries, shared by API calls (through openapi-fetch's fetch) and uploads to the
// storage host: a connection error, 429, 502, 503, 504, or a 409 idempotency_conflict
// whose first request is still running, is tried again after an exponential, jittered
// wait, honouring Retry-After; an abort signal ends it all.

/** How a request that met a passing failure is tried again. */
export interface RetryPolicy {
  /** Retries after the first attempt (default 4). */
  maxRetries: number;
  /** First wait, doubled each retry up to maxDelayMs; drawn between half of it and all of it. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the answer goes back to the caller. */
  maxRetryAfterMs: number;
  /** Told of every retry before its wait. */
  onRetry?: (r: RetryInfo) => void;
}

export interface RetryInfo {
  attempt: number;
  method: string;
  url: string;
  /** The failed attempt's status; 0 when it got no answer. */
  status: number;
  error?: unknown;
  waitMs: number;
}

export const defaultRetryPolicy: RetryPolicy = {
  maxRetries: 4,
  baseDelayMs: 500,
  maxDelayMs: 8000,
  maxRetryAfterMs: 60_000,
};

/** Runs attempt until its outcome is final under the policy. */
export async function withRetries(
  policy: RetryPolicy,
  method: string,
  url: string,
  signal: AbortSignal | undefined | null,
  attempt: () => Promise<Response>,
): Promise<Response> {
  for (let n = 1; ; n++) {
    let res: Response | undefined;
    let error: unknown;
    try {
      res = await attempt();
    } catch (e) {
      error = e;
    }
    const wait = await decide(policy, signal, n, res, error);
    if (wait === undefined) {
      if (res === undefined) throw error;
      return res;
    }
    policy.onRetry?.({ attempt: n, method, url: url.split("?")[0], status: res?.status ?? 0, error, waitMs: wait });
    await res?.body?.cancel().catch(() => undefined);
    await sleep(wait, signal);
  }
}

async function decide(
  policy: RetryPolicy,
  signal: AbortSignal | undefined | null,
  attempt: number,
  res: Response | undefined,
  error: unknown,
): Promise<number | undefined> {
  if (attempt > policy.maxRetries || signal?.aborted) return undefined;
  let hint = 0;
  if (res === undefined) {
    if (isAbort(error)) return undefined;
  } else {
    const s = res.status;
    if (s === 409) {
      if (!(await stillInProgress(res))) return undefined;
    } else if (s !== 429 && s !== 502 && s !== 503 && s !== 504) {
      return undefined;
    }
    hint = retryAfterMs(res.headers);
    if (hint > policy.maxRetryAfterMs) return undefined;
  }
  return Math.max(hint, backoff(policy, attempt));
}

function backoff(policy: RetryPolicy, attempt: number): number {
  const b = Math.min(policy.baseDelayMs * 2 ** (attempt - 1), policy.maxDelayMs);
  return b / 2 + Math.random() * (b / 2);
}

async function stillInProgress(res: Response): Promise<boolean> {
  try {
    const body = await res.clone().json();
    return body?.error?.code === "idempotency_conflict" && body?.error?.details?.in_progress === true;
  } catch {
    return false;
  }
}

/** Retry-After in milliseconds (seconds or an HTTP date); 0 when absent. */
export function retryAfterMs(h: Headers): number {
  const v = h.get("Retry-After");
  if (!v) return 0;
  const n = Number(v);
  if (Number.isFinite(n) && n > 0) return n * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? 0 : Math.max(0, at - Date.now());
}

export function isAbort(e: unknown): boolean {
  return e instanceof Error && (e.name === "AbortError" || e.name === "TimeoutError");
}

export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
