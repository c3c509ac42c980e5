import { useEffect, useId, useRef, useState, type ReactNode } from "react";
import type { CombinedError } from "@urql/core";
import { apiError, type ApiError } from "../lib/graphql";
import { localDate, localTime, relative, utcTime } from "../lib/format";

export function PageHeader({ title, subtitle, actions }: { title: ReactNode; subtitle?: ReactNode; actions?: ReactNode }) {
  return (
    <header className="page-header">
      <div>
        <h1>{title}</h1>
        {subtitle && <p className="subtitle">{subtitle}</p>}
      </div>
      {actions && <div className="actions">{actions}</div>}
    </header>
  );
}

/** A panel; with scrollLabel it scrolls on its own and takes focus, so keys scroll it too. */
export function Card({ title, actions, children, className = "", scrollLabel }: { title?: ReactNode; actions?: ReactNode; children: ReactNode; className?: string; scrollLabel?: string }) {
  return (
    <section className={"card " + className} tabIndex={scrollLabel ? 0 : undefined} aria-label={scrollLabel}>
      {(title || actions) && (
        <div className="card-head">
          {title && <h2>{title}</h2>}
          {actions && <div className="actions">{actions}</div>}
        </div>
      )}
      {children}
    </section>
  );
}

export function Loading({ label = "Loading" }: { label?: string }) {
  return (
    <div className="state loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      <span>{label}…</span>
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="state empty">
      <svg aria-hidden="true" width="40" height="40" viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="1.5">
        <path d="M3 7l9-4 9 4-9 4-9-4z" />
        <path d="M3 7v10l9 4 9-4V7" />
      </svg>
      <strong>{title}</strong>
      {children && <div className="muted">{children}</div>}
    </div>
  );
}

/** An error with its contract code and request id, as support needs them. */
export function ErrorBox({ error, onRetry }: { error: ApiError; onRetry?: () => void }) {
  return (
    <div className="state error" role="alert">
      <strong>{error.message}</strong>
      <div className="error-meta">
        <span>
          code <code>{error.code}</code>
        </span>
        {error.param && (
          <span>
            field <code>{error.param}</code>
          </span>
        )}
        {error.requestId && (
          <span>
            request <code>{error.requestId}</code>
          </span>
        )}
      </div>
      {onRetry && (
        <button type="button" className="btn" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** A time in the reader's zone, the exact UTC time on hover. */
export function Time({ iso, rel = false, date = false }: { iso?: string | null; rel?: boolean; date?: boolean }) {
  const [, tick] = useState(0);
  useEffect(() => {
    if (!rel) return;
    const t = setInterval(() => tick((n) => n + 1), 30_000);
    return () => clearInterval(t);
  }, [rel]);
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={utcTime(iso)}>
      {rel ? relative(iso) : date ? localDate(iso) : localTime(iso)}
    </time>
  );
}

export function StateBadge({ state }: { state: string }) {
  return <span className={`badge badge-${state}`}>{state.replaceAll("_", " ")}</span>;
}

export function Progress({ value, label, tone }: { value: number; label: string; tone?: "ok" | "bad" }) {
  const v = Math.max(0, Math.min(100, value));
  return (
    <div className={"progress" + (tone ? " progress-" + tone : "")} role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(v)}>
      <div className="progress-bar" style={{ width: `${v}%` }} />
    </div>
  );
}

/** Text to copy, with a button that copies it. */
export function CopyBlock({ label, text }: { label: string; text: string }) {
  const [copied, setCopied] = useState(false);
  const id = useId();
  return (
    <div className="copy-block">
      <div className="copy-head">
        <span id={id}>{label}</span>
        <button
          type="button"
          className="btn btn-small"
          aria-label={`Copy ${label}`}
          onClick={async () => {
            await navigator.clipboard?.writeText(text).catch(() => undefined);
            setCopied(true);
            setTimeout(() => setCopied(false), 1500);
          }}
        >
          {copied ? "Copied" : "Copy"}
        </button>
      </div>
      <pre aria-labelledby={id} tabIndex={0}>
        <code>{text}</code>
      </pre>
    </div>
  );
}

/** Previous/next through server pages (cursors kept in the URL by the caller). */
export function Pager({ hasPrev, hasNext, onPrev, onNext }: { hasPrev: boolean; hasNext: boolean; onPrev: () => void; onNext: () => void }) {
  if (!hasPrev && !hasNext) return null;
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" className="btn" disabled={!hasPrev} onClick={onPrev}>
        ← Newer
      </button>
      <button type="button" className="btn" disabled={!hasNext} onClick={onNext}>
        Older →
      </button>
    </nav>
  );
}

/** A modal dialog on the native <dialog> element (focus trapped, Escape closes). */
export function Dialog({ open, title, onClose, children }: { open: boolean; title: string; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby={id} onClose={onClose} onCancel={onClose}>
      <div className="dialog-head">
        <h2 id={id}>{title}</h2>
        <button type="button" className="btn btn-ghost" aria-label="Close" onClick={onClose}>
          ✕
        </button>
      </div>
      {open && children}
    </dialog>
  );
}

export function Stat({ label, value, hint }: { label: string; value: ReactNode; hint?: ReactNode }) {
  return (
    <div className="stat">
      <div className="stat-label">{label}</div>
      <div className="stat-value">{value}</div>
      {hint && <div className="stat-hint">{hint}</div>}
    </div>
  );
}

export function Mono({ children }: { children: ReactNode }) {
  return <code className="mono">{children}</code>;
}

/**
 * A screen's state before its query has data: its error (with a retry) or loading,
 * under the screen's header; null once there is data to show.
 */
export function screenState(head: ReactNode, r: { data?: unknown; error?: CombinedError; fetching: boolean }, retry?: () => void): ReactNode | null {
  if (r.error && !r.data)
    return (
      <div className="page">
        {head}
        <ErrorBox error={apiError(r.error)!} onRetry={retry} />
      </div>
    );
  if (!r.data)
    return (
      <div className="page">
        {head}
        {r.fetching && <Loading />}
      </div>
    );
  return null;
}
