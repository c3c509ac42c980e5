import { useRef, useState, type DragEvent } from "react";
import { useClient } from "urql";
import { uploadFile, type Validation } from "../lib/upload";
import { bytes } from "../lib/format";
import { Link } from "../lib/router";
import { Progress } from "../ui/ui";
import { Icon } from "../ui/icons";
import { notAllowed, useCan, useViewer } from "../lib/viewer";
import type { FilemillError } from "@filemill/client/errors";

type Item = {
  key: string;
  file: File;
  sent: number;
  state: "uploading" | "done" | "failed" | "rejected";
  error?: { code: string; message: string; requestId?: string };
  fileId?: string;
  abort?: AbortController;
};

function errorOf(e: unknown): Item["error"] {
  const fe = e as Partial<FilemillError> & { message?: string };
  if (fe && typeof fe.status === "number") {
    const message = (fe.message ?? "").replace(/^filemill: \d+( \S+)?: /, "").replace(/ \[request [^\]]*\]$/, "");
    return { code: fe.code ?? `http_${fe.status}`, message, requestId: fe.requestId };
  }
  return { code: "network_error", message: (e as Error)?.message || String(e) };
}

function parseFormats(s: string): string[] | undefined {
  const f = s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);
  return f.length ? f : undefined;
}

/** Drag and drop, several files at once, a progress bar each, resumable after a network error. */
export function Uploader({ projectId, onUploaded }: { projectId?: string; onUploaded: () => void }) {
  const client = useClient();
  const input = useRef<HTMLInputElement>(null);
  const [items, setItems] = useState<Item[]>([]);
  const [over, setOver] = useState(false);
  const [formats, setFormats] = useState("");
  const [maxMB, setMaxMB] = useState("");
  const [minBytes, setMinBytes] = useState("");
  const [scan, setScan] = useState(false);
  const can = useCan("files:write");
  const viewer = useViewer();

  const update = (key: string, ch: Partial<Item>) => setItems((xs) => xs.map((x) => (x.key === key ? { ...x, ...ch } : x)));

  const validation = (): Validation | undefined => {
    const v: Validation = {};
    const f = parseFormats(formats);
    if (f) v.formats = f;
    if (maxMB) v.maxBytes = Math.round(Number(maxMB) * 1024 * 1024);
    if (minBytes) v.minBytes = Number(minBytes);
    if (scan) v.scan = true;
    return Object.keys(v).length ? v : undefined;
  };

  const start = (it: Item) => {
    const abort = new AbortController();
    update(it.key, { state: "uploading", error: undefined, abort });
    uploadFile(client, it.file, {
      validation: validation(),
      projectId,
      signal: abort.signal,
      onProgress: (sent) => update(it.key, { sent }),
    }).then(
      (r) => {
        update(it.key, { state: r.status === "rejected" ? "rejected" : "done", fileId: r.fileId, sent: it.file.size });
        onUploaded();
      },
      (e) => update(it.key, { state: "failed", error: errorOf(e) }),
    );
  };

  const add = (files: FileList | null) => {
    if (!files?.length || !can) return;
    const fresh: Item[] = [...files].map((f, i) => ({ key: `${Date.now()}-${i}-${f.name}`, file: f, sent: 0, state: "uploading" }));
    setItems((xs) => [...fresh, ...xs]);
    fresh.forEach(start);
  };

  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setOver(false);
    add(e.dataTransfer.files);
  };

  return (
    <section className="card uploader" aria-labelledby="upload-title">
      <div className="card-head">
        <h2 id="upload-title">Upload</h2>
      </div>
      <div
        className={"dropzone" + (over ? " over" : "")}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
      >
        <Icon name="upload" size={28} />
        <div>
          <strong>Drop files here</strong>
          <div className="muted">They go straight to storage; large files in parallel parts.</div>
        </div>
        <button type="button" className="btn btn-primary" disabled={!can} title={can ? undefined : notAllowed(viewer?.role)} onClick={() => input.current?.click()}>
          Upload files
        </button>
        <input
          ref={input}
          type="file"
          multiple
          hidden
          aria-label="Files to upload"
          data-testid="file-input"
          onChange={(e) => {
            add(e.currentTarget.files);
            e.currentTarget.value = "";
          }}
        />
      </div>
      <details className="policy">
        <summary>Validation policy</summary>
        <div className="form-grid">
          <label>
            <span>Allowed formats</span>
            <input value={formats} onChange={(e) => setFormats(e.target.value)} placeholder="pdf, png, image/jpeg" />
            <small className="muted">Extensions or MIME types; empty accepts any.</small>
          </label>
          <label>
            <span>Largest size (MB)</span>
            <input type="number" min="0" step="any" value={maxMB} onChange={(e) => setMaxMB(e.target.value)} />
          </label>
          <label>
            <span>Smallest size (bytes)</span>
            <input type="number" min="0" value={minBytes} onChange={(e) => setMinBytes(e.target.value)} />
          </label>
          <label className="check">
            <input type="checkbox" checked={scan} onChange={(e) => setScan(e.target.checked)} />
            <span>Scan for malware</span>
          </label>
        </div>
      </details>
      {items.length > 0 && (
        <ul className="upload-list" aria-label="Uploads">
          {items.map((it) => (
            <li key={it.key} className={"upload-item " + it.state}>
              <div className="upload-row">
                <span className="upload-name" title={it.file.name}>{it.file.name}</span>
                <span className="muted">{bytes(it.sent)} / {bytes(it.file.size)}</span>
                <span className="upload-state">
                  {it.state === "uploading" && `${Math.floor((it.sent / it.file.size) * 100)}%`}
                  {it.state === "done" && it.fileId && <Link to={`/files/${it.fileId}`}>ready</Link>}
                  {it.state === "rejected" && it.fileId && <Link to={`/files/${it.fileId}`}>rejected</Link>}
                  {it.state === "failed" && <span className="bad-text">failed</span>}
                </span>
                {it.state === "uploading" && (
                  <button type="button" className="btn btn-small" onClick={() => it.abort?.abort()}>
                    Stop
                  </button>
                )}
                {it.state === "failed" && (
                  <button type="button" className="btn btn-small" onClick={() => start(it)}>
                    Resume
                  </button>
                )}
              </div>
              <Progress value={(it.sent / it.file.size) * 100} label={`Upload of ${it.file.name}`} tone={it.state === "done" ? "ok" : it.state === "failed" || it.state === "rejected" ? "bad" : undefined} />
              {it.error && (
                <div className="upload-error" role="alert">
                  <code>{it.error.code}</code> {it.error.message}
                  {it.error.requestId && <> · request <code>{it.error.requestId}</code></>}
                </div>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
