import type { Filemill, File, Schemas, Upload } from "./client.js";
import { FilemillError } from "./errors.js";

/** What a resumable upload records: its session and the parts that have landed. */
export interface UploadState {
  version: 1;
  upload_id: string;
  file_id: string;
  name: string;
  size: number;
  last_modified?: number;
  /** part number → ETag */
  parts: Record<string, string>;
}

/** Where a resumable upload keeps its state: localStorage in a browser, a file in Node (./node). */
export interface UploadStateStore {
  load(): Promise<UploadState | undefined> | UploadState | undefined;
  save(state: UploadState): Promise<void> | void;
  clear(): Promise<void> | void;
}

export interface UploadProgress {
  /** Bytes that have landed (parts a resumed session had already sent included). */
  sent: number;
  total: number;
}

export interface UploadOptions {
  /** Default the File's name, else "upload". */
  filename?: string;
  mimeType?: string;
  projectId?: string;
  validation?: Schemas["ValidationPolicy"];
  /** Size from which the file goes up in parts (default 64 MiB); the service sizes the parts. */
  multipartThreshold?: number;
  /** Parts sent at once (default 4). Parts are slices of the Blob, read as they are sent. */
  concurrency?: number;
  /** Called as parts land (fetch reports no finer progress). */
  onProgress?: (p: UploadProgress) => void;
  /** Makes a multipart upload resumable: a stored session is resumed, only missing parts sent. */
  state?: UploadStateStore;
  signal?: AbortSignal;
}

export const defaultMultipartThreshold = 64 * 1024 * 1024;

/**
 * The calls an upload makes: a Filemill client, or any object that makes them another
 * way (the web console makes them over GraphQL with its own credentials).
 */
export type UploadClient = Pick<
  Filemill,
  "createUpload" | "getUpload" | "remintUploadParts" | "completeUploadParts" | "abortUpload" | "complete" | "getFile" | "storageFetch"
>;

export async function upload(c: UploadClient, source: Blob, o: UploadOptions): Promise<File> {
  if (source.size === 0) throw new Error("filemill: upload: the file is empty");
  const name = o.filename ?? ((source as Partial<globalThis.File>).name || "upload");
  const lastModified = (source as Partial<globalThis.File>).lastModified;
  const total = source.size;
  let sent = 0;
  const landed = (n: number) => {
    if (n === 0) return;
    sent += n;
    o.onProgress?.({ sent, total });
  };
  const request = (multipart: boolean): Schemas["CreateUploadRequest"] => ({
    filename: name,
    byte_size: total,
    ...(multipart ? { multipart: true } : {}),
    ...(o.mimeType ? { mime_type: o.mimeType } : {}),
    ...(o.projectId ? { project_id: o.projectId } : {}),
    ...(o.validation ? { validation: o.validation } : {}),
  });

  let state: UploadState | undefined;
  let session: Upload | undefined;
  const stored = o.state ? await o.state.load() : undefined;
  if (stored) {
    if (stored.version !== 1 || stored.name !== name || stored.size !== total || stored.last_modified !== lastModified) {
      // Another file, or this one changed: its parts are worth nothing.
      await c.abortUpload(stored.upload_id, { signal: o.signal }).catch(() => undefined);
      await o.state!.clear();
    } else {
      try {
        session = await c.remintUploadParts(stored.upload_id, { signal: o.signal });
        state = stored;
      } catch (e) {
        if (!(e instanceof FilemillError) || (e.status !== 404 && e.status !== 409)) throw e;
        // Not open any more: completed by a run that crashed before clearing its state, or gone.
        const old = await c.getUpload(stored.upload_id, { signal: o.signal }).catch(() => undefined);
        await o.state!.clear();
        if (old?.state === "completed") return c.getFile(old.file_id, { signal: o.signal });
      }
    }
  }

  if (!session && total < (o.multipartThreshold ?? defaultMultipartThreshold)) {
    const up = await c.createUpload(request(false), { signal: o.signal });
    const headers = new Headers(Object.entries(up.upload_headers ?? {}).filter(([k]) => k.toLowerCase() !== "content-length"));
    const res = await c.storageFetch(up.upload_url!, { method: "PUT", body: source, headers, signal: o.signal });
    if (!res.ok) {
      const err = await FilemillError.fromResponse(res);
      // A retried PUT whose first attempt landed is refused as a second one: completing tells.
      if (err.code !== "upload_session_consumed") throw err;
    } else {
      await res.body?.cancel().catch(() => undefined);
    }
    landed(total);
    return c.complete(up.file_id, { signal: o.signal });
  }

  if (!session) {
    session = await c.createUpload(request(true), { signal: o.signal });
    state = { version: 1, upload_id: session.id, file_id: session.file_id, name, size: total, last_modified: lastModified, parts: {} };
    await o.state?.save(state);
  }
  const st = state!;
  const parts = session.parts;
  landed(parts.filter((p) => st.parts[p.part_number]).reduce((n, p) => n + p.byte_size, 0));
  const pending = parts.filter((p) => !st.parts[p.part_number]);
  let saving = Promise.resolve();
  // The first part that fails stops the others.
  const stop = new AbortController();
  const signal = o.signal ? AbortSignal.any([o.signal, stop.signal]) : stop.signal;
  const worker = async () => {
    for (let p = pending.shift(); p; p = pending.shift()) {
      const part = p;
      const res = await c.storageFetch(part.url, {
        method: "PUT",
        body: source.slice(part.byte_offset, part.byte_offset + part.byte_size),
        signal,
      });
      if (!res.ok) throw await FilemillError.fromResponse(res);
      await res.body?.cancel().catch(() => undefined);
      const etag = res.headers.get("ETag");
      if (!etag) throw new Error(`filemill: upload ${session!.id}: part ${part.part_number}: the storage host answered no ETag`);
      st.parts[part.part_number] = etag;
      // One save at a time, in order.
      saving = saving.then(() => o.state?.save(st));
      await saving;
      landed(part.byte_size);
    }
  };
  await Promise.all(
    Array.from({ length: Math.max(1, o.concurrency ?? 4) }, () =>
      worker().catch((e) => {
        stop.abort(e);
        throw e;
      }),
    ),
  );
  const etags = Object.entries(st.parts)
    .map(([n, etag]) => ({ part_number: Number(n), etag }))
    .sort((a, b) => a.part_number - b.part_number);
  const file = await c.completeUploadParts(session.id, etags, { signal: o.signal });
  await o.state?.clear();
  return file;
}
