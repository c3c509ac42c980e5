import type { Client } from "@urql/core";
import { upload, type UploadClient, type UploadStateStore, type UploadState } from "@filemill/client/upload";
import { withRetries, defaultRetryPolicy } from "@filemill/client/retry";
import { FilemillError } from "@filemill/client/errors";
import { graphql } from "../gql";
import { newIdempotencyKey } from "./graphql";

// Browser uploads go straight to storage through the pre-signed URLs, with the
// TypeScript SDK's uploader (one PUT, or parts in parallel, resumable from the parts
// recorded in localStorage); its calls to filemill are made here over GraphQL.

const CreateUpload = graphql(`
  mutation CreateUpload($input: CreateUploadInput!, $key: String) {
    createUpload(input: $input, idempotencyKey: $key) {
      upload {
        ...UploadFields
      }
    }
  }
`);
const UploadFields = graphql(`
  fragment UploadFields on Upload {
    id
    fileId
    state
    uploadUrl
    uploadHeaders
    partSize
    parts {
      partNumber
      url
      byteOffset
      byteSize
    }
  }
`);
void UploadFields;
const GetUpload = graphql(`
  query GetUpload($id: ID!) {
    upload(id: $id) {
      ...UploadFields
    }
  }
`);
const RemintParts = graphql(`
  mutation RemintParts($id: ID!, $key: String) {
    remintParts(uploadId: $id, idempotencyKey: $key) {
      ...UploadFields
    }
  }
`);
const CompleteParts = graphql(`
  mutation CompleteParts($id: ID!, $parts: [PartInput!]!, $key: String) {
    completeParts(uploadId: $id, parts: $parts, idempotencyKey: $key) {
      id
      status
      filename
    }
  }
`);
const CompleteFile = graphql(`
  mutation CompleteFile($id: ID!, $key: String) {
    completeFile(id: $id, idempotencyKey: $key) {
      id
      status
      filename
    }
  }
`);
const AbortUpload = graphql(`
  mutation AbortUpload($id: ID!, $key: String) {
    abortUpload(uploadId: $id, idempotencyKey: $key) {
      id
    }
  }
`);
const GetFile = graphql(`
  query UploadedFile($id: ID!) {
    file(id: $id) {
      id
      status
      filename
    }
  }
`);

/** A GraphQL failure as the SDK's error, so its resume logic (404, 409) reads it. */
function sdkError(err: { graphQLErrors: { message: string; extensions?: Record<string, unknown> }[]; message: string }): FilemillError {
  const g = err.graphQLErrors[0];
  const code = (g?.extensions?.code as string) || "internal_error";
  const status = code === "not_found" ? 404 : code === "conflict" || code.startsWith("upload_") ? 409 : 400;
  const e = new FilemillError(status, {
    error: { code, message: g?.message ?? err.message, request_id: g?.extensions?.requestId as string },
  } as never, new Headers());
  return e;
}

type UploadNode = {
  id: string;
  fileId: string;
  state: string;
  uploadUrl?: string | null;
  uploadHeaders: unknown;
  partSize?: number | null;
  parts: { partNumber: number; url: string; byteOffset: number; byteSize: number }[];
};

// The REST shape the SDK reads.
function restUpload(u: UploadNode) {
  return {
    id: u.id,
    object: "upload",
    file_id: u.fileId,
    state: u.state,
    upload_url: u.uploadUrl ?? undefined,
    upload_headers: (u.uploadHeaders ?? {}) as Record<string, string>,
    part_size: u.partSize ?? undefined,
    parts: u.parts.map((p) => ({ part_number: p.partNumber, url: p.url, byte_offset: p.byteOffset, byte_size: p.byteSize })),
  };
}

/** An XHR PUT that reports bytes sent (fetch reports no upload progress), answering a Response. */
function xhrFetch(onSent?: (url: string, sent: number) => void) {
  return (url: string, init: RequestInit): Promise<Response> =>
    new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(init.method ?? "GET", url);
      new Headers(init.headers).forEach((v, k) => xhr.setRequestHeader(k, v));
      xhr.responseType = "blob";
      xhr.upload.onprogress = (e) => onSent?.(url, e.loaded);
      xhr.onload = () => {
        onSent?.(url, -1);
        const headers = new Headers();
        for (const line of xhr.getAllResponseHeaders().trim().split(/[\r\n]+/)) {
          const i = line.indexOf(":");
          if (i > 0) headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
        }
        resolve(new Response(xhr.status === 204 ? null : xhr.response, { status: xhr.status, statusText: xhr.statusText, headers }));
      };
      xhr.onerror = () => reject(new TypeError("network error"));
      xhr.onabort = () => reject(new DOMException("aborted", "AbortError"));
      init.signal?.addEventListener("abort", () => xhr.abort());
      xhr.send((init.body as XMLHttpRequestBodyInit) ?? null);
    });
}

/** The SDK's upload calls, made over GraphQL through the console's client. */
export function graphQLUploadClient(c: Client, onSent?: (url: string, sent: number) => void): UploadClient {
  const run = async <T>(p: Promise<{ data?: T; error?: Parameters<typeof sdkError>[0] }>): Promise<T> => {
    const r = await p;
    if (r.error) throw sdkError(r.error);
    return r.data as T;
  };
  const base = xhrFetch(onSent);
  return {
    createUpload: async (body, o) => {
      const v = body.validation;
      const d = await run(
        c
          .mutation(CreateUpload, {
            key: o?.idempotencyKey ?? newIdempotencyKey(),
            input: {
              filename: body.filename,
              byteSize: body.byte_size,
              multipart: body.multipart,
              mimeType: body.mime_type,
              projectId: body.project_id,
              validation: v ? { formats: v.formats, maxBytes: v.max_bytes, minBytes: v.min_bytes, scan: v.scan } : undefined,
            },
          })
          .toPromise(),
      );
      return restUpload(d.createUpload.upload as UploadNode) as never;
    },
    getUpload: async (id) => {
      const d = await run(c.query(GetUpload, { id }, { requestPolicy: "network-only" }).toPromise());
      if (!d.upload) throw new FilemillError(404, { error: { code: "not_found", message: "upload not found" } } as never, new Headers());
      return restUpload(d.upload as UploadNode) as never;
    },
    remintUploadParts: async (id, o) => {
      const d = await run(c.mutation(RemintParts, { id, key: o?.idempotencyKey ?? newIdempotencyKey() }).toPromise());
      return restUpload(d.remintParts as UploadNode) as never;
    },
    completeUploadParts: async (id, parts, o) => {
      const d = await run(
        c
          .mutation(CompleteParts, { id, parts: parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })), key: o?.idempotencyKey ?? newIdempotencyKey() })
          .toPromise(),
      );
      return { id: d.completeParts.id, status: d.completeParts.status, filename: d.completeParts.filename } as never;
    },
    abortUpload: async (id, o) => {
      await run(c.mutation(AbortUpload, { id, key: o?.idempotencyKey ?? newIdempotencyKey() }).toPromise());
    },
    complete: async (id, o) => {
      const d = await run(c.mutation(CompleteFile, { id, key: o?.idempotencyKey ?? newIdempotencyKey() }).toPromise());
      return { id: d.completeFile.id, status: d.completeFile.status, filename: d.completeFile.filename } as never;
    },
    getFile: async (id) => {
      const d = await run(c.query(GetFile, { id }, { requestPolicy: "network-only" }).toPromise());
      return d.file as never;
    },
    storageFetch: (url, init) => withRetries(defaultRetryPolicy, init.method ?? "GET", url, init.signal, () => base(url, init)),
  };
}

/** Where a multipart upload records its landed parts: localStorage, by file name, size and date. */
export function localStateStore(f: File): UploadStateStore {
  const key = `filemill.upload:${f.name}:${f.size}:${f.lastModified}`;
  return {
    load: () => {
      const raw = localStorage.getItem(key);
      return raw ? (JSON.parse(raw) as UploadState) : undefined;
    },
    save: (s) => localStorage.setItem(key, JSON.stringify(s)),
    clear: () => localStorage.removeItem(key),
  };
}

export interface Validation {
  formats?: string[];
  maxBytes?: number;
  minBytes?: number;
  scan?: boolean;
}

/** Parts from this size: a 30 MB file goes in two parts sent at once. */
export const multipartThreshold = 16 * 1024 * 1024;

export interface UploadResult {
  fileId: string;
  status: string;
}

/**
 * Uploads one browser File; progress reports bytes on their way (parts in flight
 * included). A network error leaves the landed parts recorded: calling again resumes.
 */
export async function uploadFile(
  c: Client,
  f: File,
  opts: { validation?: Validation; projectId?: string; signal?: AbortSignal; onProgress?: (sent: number, total: number) => void },
): Promise<UploadResult> {
  let landed = 0;
  let shown = 0;
  const inflight = new Map<string, number>();
  // Shown progress never goes back: a part leaves the in-flight count a moment before
  // the SDK counts it as landed.
  const report = () => {
    let n = landed;
    inflight.forEach((v) => (n += v));
    shown = Math.max(shown, Math.min(n, f.size));
    opts.onProgress?.(shown, f.size);
  };
  const client = graphQLUploadClient(c, (url, sent) => {
    if (sent < 0) inflight.delete(url);
    else inflight.set(url, sent);
    report();
  });
  const v = opts.validation;
  const file = await upload(client, f, {
    filename: f.name,
    mimeType: f.type || undefined,
    projectId: opts.projectId,
    validation: v ? { formats: v.formats, max_bytes: v.maxBytes, min_bytes: v.minBytes, scan: v.scan } : undefined,
    multipartThreshold,
    concurrency: 4,
    state: localStateStore(f),
    signal: opts.signal,
    onProgress: (p) => {
      landed = p.sent;
      report();
    },
  });
  return { fileId: file.id, status: (file as { status: string }).status };
}
