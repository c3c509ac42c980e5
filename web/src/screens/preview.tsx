import { useEffect, useState } from "react";
import { useClient } from "urql";
import type { Client } from "@urql/core";
import { graphql } from "../gql";
import { apiError, type ApiError } from "../lib/graphql";
import { bytes } from "../lib/format";
import { ErrorBox, Loading } from "../ui/ui";

const MintURL = graphql(`
  mutation MintDownloadUrl($fileId: ID!, $artifactId: ID) {
    createDownloadUrl(fileId: $fileId, artifactId: $artifactId) {
      url
      expiresAt
    }
  }
`);

/** A fresh, short-lived download URL of a file or one of its artifacts. */
export async function mintDownloadURL(client: Client, fileId: string, artifactId?: string | null): Promise<{ url: string | null; error: ApiError | null }> {
  const r = await client.mutation(MintURL, { fileId, artifactId: artifactId ?? undefined }).toPromise();
  return r.error ? { url: null, error: apiError(r.error) } : { url: r.data!.createDownloadUrl.url, error: null };
}

/** Mints a download URL for a file or one of its artifacts (null while minting). */
export function useDownloadURL(fileId: string, artifactId?: string | null, enabled = true): { url: string | null; error: ApiError | null } {
  const client = useClient();
  const [state, setState] = useState<{ url: string | null; error: ApiError | null }>({ url: null, error: null });
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    setState({ url: null, error: null });
    mintDownloadURL(client, fileId, artifactId).then((r) => live && setState(r));
    return () => {
      live = false;
    };
  }, [client, fileId, artifactId, enabled]);
  return state;
}

/** Opens a freshly minted download URL (URLs are short-lived: minted on click). */
export function DownloadButton({ fileId, artifactId, label, small = true }: { fileId: string; artifactId?: string; label: string; small?: boolean }) {
  const client = useClient();
  const [err, setErr] = useState<ApiError | null>(null);
  return (
    <>
      <button
        type="button"
        className={small ? "btn btn-small" : "btn"}
        aria-label={label}
        onClick={async () => {
          const r = await mintDownloadURL(client, fileId, artifactId);
          setErr(r.error);
          if (r.url) window.open(r.url, "_blank", "noopener");
        }}
      >
        Download
      </button>
      {err && <ErrorBox error={err} />}
    </>
  );
}

const textTypes = /^(text\/|application\/(json|xml|x-ndjson))|markdown/;

/** An inline preview: images as images, text as text (its first 64 KB), else a note. */
export function Preview({ fileId, artifactId, mimeType, name, byteSize, quiet = false }: { fileId: string; artifactId?: string; mimeType: string; name: string; byteSize?: number | null; quiet?: boolean }) {
  const isImage = mimeType.startsWith("image/") && mimeType !== "image/svg+xml";
  const isText = textTypes.test(mimeType) || /\.(md|txt|json|csv)$/.test(name);
  const { url, error } = useDownloadURL(fileId, artifactId, isImage || isText);
  const [text, setText] = useState<string | null>(null);
  useEffect(() => {
    if (!url || !isText) return;
    const ac = new AbortController();
    fetch(url, { signal: ac.signal, headers: { Range: "bytes=0-65535" } })
      .then((r) => r.text())
      .then(setText, () => undefined);
    return () => ac.abort();
  }, [url, isText]);
  if (!isImage && !isText) return quiet ? null : <div className="preview-none muted">No preview for {mimeType}{byteSize ? ` (${bytes(byteSize)})` : ""}.</div>;
  if (error) return <ErrorBox error={error} />;
  if (!url) return <Loading label="Preparing preview" />;
  if (isImage)
    return (
      <figure className="preview">
        <img src={url} alt={`Preview of ${name}`} loading="lazy" />
      </figure>
    );
  if (text === null) return <Loading label="Loading text" />;
  return (
    <pre className="preview-text" tabIndex={0} aria-label={`Contents of ${name}`}>
      {text}
    </pre>
  );
}
