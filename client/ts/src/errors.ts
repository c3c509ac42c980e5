import type { components } from "./openapi.js";
import { retryAfterMs } from "./retry.js";

export type ErrorCode = components["schemas"]["ErrorCode"];

/** Extras of an error answer; which are set depends on the code. */
export interface ErrorDetails {
  findings?: components["schemas"]["Finding"][];
  state?: string;
  status?: string;
  in_progress?: boolean;
  file_id?: string;
}

/**
 * A non-2xx answer of the API (or of the storage host an upload went to). Tell errors
 * apart by `code`; quote `requestId` when asking for support.
 */
export class FilemillError extends Error {
  readonly status: number;
  /** The contract's code; undefined when the answer carried none (a storage host's own refusal). */
  readonly code?: ErrorCode;
  readonly param?: string;
  readonly requestId?: string;
  readonly details?: ErrorDetails;
  /** The wait Retry-After asked for, in milliseconds; 0 when none. */
  readonly retryAfterMs: number;

  constructor(status: number, body: unknown, headers: Headers) {
    const e = (body as { error?: Record<string, unknown> } | undefined)?.error;
    const code = typeof e?.code === "string" ? (e.code as ErrorCode) : undefined;
    const message = typeof e?.message === "string" ? e.message : typeof body === "string" && body ? body.slice(0, 512) : `HTTP ${status}`;
    const requestId = (typeof e?.request_id === "string" ? e.request_id : undefined) ?? headers.get("X-Request-Id") ?? undefined;
    const param = typeof e?.param === "string" ? e.param : undefined;
    super(`filemill: ${status}${code ? " " + code : ""}: ${message}${param ? ` (param ${param})` : ""}${requestId ? ` [request ${requestId}]` : ""}`);
    this.name = "FilemillError";
    this.status = status;
    this.code = code;
    this.param = param;
    this.requestId = requestId;
    this.details = e?.details as ErrorDetails | undefined;
    this.retryAfterMs = retryAfterMs(headers);
  }

  /** Reads an error answer (its body not yet read) into a FilemillError. */
  static async fromResponse(res: Response): Promise<FilemillError> {
    const text = await res.text().catch(() => "");
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not the API's shape: keep the text
    }
    return new FilemillError(res.status, body, res.headers);
  }
}
