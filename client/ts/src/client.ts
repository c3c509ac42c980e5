import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./openapi.js";
import { FilemillError } from "./errors.js";
import { defaultRetryPolicy, withRetries, type RetryPolicy } from "./retry.js";
import { upload, type UploadOptions } from "./upload.js";
import { waitJob, type WaitOptions } from "./wait.js";

export type Schemas = components["schemas"];
export type File = Schemas["File"];
export type Upload = Schemas["Upload"];
export type Job = Schemas["Job"];
export type JobState = Schemas["JobState"];
export type Batch = Schemas["Batch"];
export type Event = Schemas["Event"];
export type WebhookEndpoint = Schemas["WebhookEndpoint"];
export type CreatedWebhookEndpoint = Schemas["CreatedWebhookEndpoint"];
export type WebhookDelivery = Schemas["WebhookDelivery"];
export type Operation = Schemas["Operation"];
export type Usage = Schemas["Usage"];

export interface ClientOptions {
  /** Scheme, host and port of the deployment, e.g. http://127.0.0.1:8080. */
  baseUrl: string;
  /** An API key, fm_live_… or fm_test_…. */
  apiKey: string;
  /** Replaces defaultRetryPolicy, field by field. */
  retry?: Partial<RetryPolicy>;
  /** The fetch every request goes through (default globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
}

/** Options of one call. */
export interface CallOptions {
  signal?: AbortSignal;
  /**
   * The POST's Idempotency-Key; default a fresh one per call, kept by all its retries.
   * Keep a key with the work it stands for to make a call safe across restarts.
   */
  idempotencyKey?: string;
}

/** A page of a /v1 list. */
interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** A fresh random Idempotency-Key. */
export function newIdempotencyKey(): string {
  return "fm-" + globalThis.crypto.randomUUID().replaceAll("-", "");
}

/**
 * The client of one deployment with one key. `api` is the typed openapi-fetch client
 * (every request through the same retries and key) for calls not wrapped here.
 */
export class Filemill {
  readonly api: Client<paths>;
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  /** fetch with retries, without the key: for the storage host's pre-signed URLs. */
  readonly storageFetch: (url: string, init: RequestInit) => Promise<Response>;
  readonly apiKey: string;

  constructor(opts: ClientOptions) {
    if (!/^https?:\/\/[^/]/.test(opts.baseUrl)) throw new Error(`filemill: base URL ${opts.baseUrl}: want http(s)://host[:port]`);
    if (!opts.apiKey) throw new Error("filemill: an API key is required");
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.apiKey = opts.apiKey;
    this.retry = { ...defaultRetryPolicy, ...opts.retry };
    const base = opts.fetch ?? globalThis.fetch.bind(globalThis);
    const retry = this.retry;
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      headers: { Authorization: `Bearer ${opts.apiKey}` },
      // Each attempt sends a copy, so the request (body included) is there for the next.
      fetch: (req: Request) => withRetries(retry, req.method, req.url, req.signal, () => base(req.clone())),
    });
    this.storageFetch = (url, init) => withRetries(retry, init.method ?? "GET", url, init.signal, () => base(url, init));
  }

  // call turns openapi-fetch's answer into its data, or throws a FilemillError.
  private async call<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await p;
    if (!response.ok) throw new FilemillError(response.status, error, response.headers);
    return data as T;
  }

  private key(o?: CallOptions) {
    return { "Idempotency-Key": o?.idempotencyKey ?? newIdempotencyKey() };
  }

  private async *pages<T>(next: (cursor?: string) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const page = await next(cursor);
      yield* page.data;
      if (!page.has_more || !page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  // Uploads.

  /** Opens an upload session for bytes the client PUTs; `upload` does the whole upload. */
  createUpload(body: Schemas["CreateUploadRequest"], o?: CallOptions): Promise<Upload> {
    return this.call(this.api.POST("/v1/uploads", { params: { header: this.key(o) }, body, signal: o?.signal })) as Promise<Upload>;
  }
  getUpload(uploadId: string, o?: CallOptions): Promise<Upload> {
    return this.call(this.api.GET("/v1/uploads/{upload_id}", { params: { path: { upload_id: uploadId } }, signal: o?.signal }));
  }
  /** A fresh URL for every part of an open multipart session: the resume path. */
  remintUploadParts(uploadId: string, o?: CallOptions): Promise<Upload> {
    return this.call(
      this.api.POST("/v1/uploads/{upload_id}/parts", { params: { path: { upload_id: uploadId }, header: this.key(o) }, signal: o?.signal }),
    );
  }
  completeUploadParts(uploadId: string, parts: { part_number: number; etag: string }[], o?: CallOptions): Promise<File> {
    return this.call(
      this.api.POST("/v1/uploads/{upload_id}/complete-parts", {
        params: { path: { upload_id: uploadId }, header: this.key(o) },
        body: { parts },
        signal: o?.signal,
      }),
    );
  }
  async abortUpload(uploadId: string, o?: CallOptions): Promise<void> {
    await this.call(
      this.api.POST("/v1/uploads/{upload_id}/abort", { params: { path: { upload_id: uploadId }, header: this.key(o) }, signal: o?.signal }),
    );
  }
  /** Declares that a single PUT's bytes have landed; answers the ready file. */
  complete(fileId: string, o?: CallOptions): Promise<File> {
    return this.call(
      this.api.POST("/v1/files/{file_id}/complete", { params: { path: { file_id: fileId }, header: this.key(o) }, signal: o?.signal }),
    );
  }
  /**
   * Uploads a Blob (a browser File, or `openFile` of ./node in Node) straight to storage
   * and completes it: one PUT, or parts in parallel (resumable with `state`).
   */
  upload(source: Blob, opts?: UploadOptions): Promise<File> {
    return upload(this, source, opts ?? {});
  }

  // Files.

  getFile(fileId: string, o?: CallOptions): Promise<File> {
    return this.call(this.api.GET("/v1/files/{file_id}", { params: { path: { file_id: fileId } }, signal: o?.signal }));
  }
  async deleteFile(fileId: string, o?: CallOptions): Promise<void> {
    await this.call(this.api.DELETE("/v1/files/{file_id}", { params: { path: { file_id: fileId } }, signal: o?.signal }));
  }
  createDownloadUrl(fileId: string, body: Schemas["DownloadUrlRequest"] = {}, o?: CallOptions): Promise<Schemas["DownloadUrl"]> {
    return this.call(
      this.api.POST("/v1/files/{file_id}/download-url", { params: { path: { file_id: fileId }, header: this.key(o) }, body, signal: o?.signal }),
    );
  }
  async fileHistory(fileId: string, o?: CallOptions): Promise<Schemas["HistoryEntry"][]> {
    const page = await this.call(this.api.GET("/v1/files/{file_id}/history", { params: { path: { file_id: fileId } }, signal: o?.signal }));
    return page.data as Schemas["HistoryEntry"][];
  }
  /** Every file, newest first, following next_cursor across pages. */
  files(query: paths["/v1/files"]["get"]["parameters"]["query"] = {}, o?: CallOptions): AsyncGenerator<File, void, undefined> {
    return this.pages((cursor) =>
      this.call(this.api.GET("/v1/files", { params: { query: { ...query, ...(cursor ? { starting_after: cursor } : {}) } }, signal: o?.signal })),
    ) as AsyncGenerator<File, void, undefined>;
  }

  // Jobs and batches.

  createJob(body: Schemas["CreateJobRequest"], o?: CallOptions): Promise<Job> {
    return this.call(this.api.POST("/v1/jobs", { params: { header: this.key(o) }, body, signal: o?.signal }));
  }
  getJob(jobId: string, o?: CallOptions): Promise<Job> {
    return this.call(this.api.GET("/v1/jobs/{job_id}", { params: { path: { job_id: jobId } }, signal: o?.signal }));
  }
  cancelJob(jobId: string, o?: CallOptions): Promise<Job> {
    return this.call(this.api.POST("/v1/jobs/{job_id}/cancel", { params: { path: { job_id: jobId }, header: this.key(o) }, signal: o?.signal }));
  }
  /** Every job, newest first (filtered by query). */
  jobs(query: paths["/v1/jobs"]["get"]["parameters"]["query"] = {}, o?: CallOptions): AsyncGenerator<Job, void, undefined> {
    return this.pages((cursor) =>
      this.call(this.api.GET("/v1/jobs", { params: { query: { ...query, ...(cursor ? { starting_after: cursor } : {}) } }, signal: o?.signal })),
    ) as AsyncGenerator<Job, void, undefined>;
  }
  /** Follows a job to its end (subscription where WebSocket exists, else polling); a failed job is an answer. */
  waitJob(jobId: string, opts?: WaitOptions): Promise<Job> {
    return waitJob(this, jobId, opts ?? {});
  }
  createBatch(body: Schemas["CreateBatchRequest"], o?: CallOptions): Promise<Batch> {
    return this.call(this.api.POST("/v1/batches", { params: { header: this.key(o) }, body, signal: o?.signal }));
  }
  getBatch(batchId: string, o?: CallOptions): Promise<Batch> {
    return this.call(this.api.GET("/v1/batches/{batch_id}", { params: { path: { batch_id: batchId } }, signal: o?.signal }));
  }

  // Webhooks, events, usage, operations.

  createWebhookEndpoint(body: Schemas["CreateWebhookEndpointRequest"], o?: CallOptions): Promise<CreatedWebhookEndpoint> {
    return this.call(this.api.POST("/v1/webhook-endpoints", { params: { header: this.key(o) }, body, signal: o?.signal }));
  }
  async deleteWebhookEndpoint(endpointId: string, o?: CallOptions): Promise<void> {
    await this.call(
      this.api.DELETE("/v1/webhook-endpoints/{webhook_endpoint_id}", { params: { path: { webhook_endpoint_id: endpointId } }, signal: o?.signal }),
    );
  }
  webhookEndpoints(query: paths["/v1/webhook-endpoints"]["get"]["parameters"]["query"] = {}, o?: CallOptions) {
    return this.pages((cursor) =>
      this.call(
        this.api.GET("/v1/webhook-endpoints", { params: { query: { ...query, ...(cursor ? { starting_after: cursor } : {}) } }, signal: o?.signal }),
      ),
    ) as AsyncGenerator<WebhookEndpoint, void, undefined>;
  }
  webhookDeliveries(endpointId: string, o?: CallOptions) {
    return this.pages((cursor) =>
      this.call(
        this.api.GET("/v1/webhook-endpoints/{webhook_endpoint_id}/deliveries", {
          params: { path: { webhook_endpoint_id: endpointId }, query: cursor ? { starting_after: cursor } : {} },
          signal: o?.signal,
        }),
      ),
    ) as AsyncGenerator<WebhookDelivery, void, undefined>;
  }
  events(query: paths["/v1/events"]["get"]["parameters"]["query"] = {}, o?: CallOptions) {
    return this.pages((cursor) =>
      this.call(this.api.GET("/v1/events", { params: { query: { ...query, ...(cursor ? { starting_after: cursor } : {}) } }, signal: o?.signal })),
    ) as AsyncGenerator<Event, void, undefined>;
  }
  getUsage(query: paths["/v1/usage"]["get"]["parameters"]["query"] = {}, o?: CallOptions): Promise<Usage> {
    return this.call(this.api.GET("/v1/usage", { params: { query }, signal: o?.signal }));
  }
  async operations(o?: CallOptions): Promise<Operation[]> {
    const page = await this.call(this.api.GET("/v1/operations", { signal: o?.signal }));
    return page.data as Operation[];
  }
}

// Errors reading a storage host's answer share the API's error type.
export { FilemillError };
