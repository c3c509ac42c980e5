import { useEffect, useMemo, useRef, useState } from "react";
import { useClient, useMutation, useQuery, useSubscription } from "urql";
import { graphql } from "../gql";
import { apiError, newIdempotencyKey, type ApiError } from "../lib/graphql";
import { Link } from "../lib/router";
import { renderMarkdown } from "../lib/markdown";
import { number } from "../lib/format";
import { Card, Empty, ErrorBox, Loading, PageHeader, screenState } from "../ui/ui";
import { mintDownloadURL, useDownloadURL } from "./preview";

// The ai-ready viewer: the document's markdown, chunk by chunk, beside its page images;
// selecting a chunk highlights where it came from. Chunks carry `pages` and `boxes`
// ({page, x0, y0, x1, y1} in PDF points, origin top-left), `heading_path`,
// `characters` and `tokens`.

export interface Box {
  page: number;
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}
export interface Chunk {
  index: number;
  text: string;
  characters: number;
  tokens?: number;
  pages: number[];
  boxes?: Box[];
  heading_path: string[];
}

const AiJob = graphql(`
  query AiReadyJob($id: ID!) {
    job(id: $id) {
      id
      state
      preset
      operation
      fileId
      file {
        id
        filename
        pages
        artifacts {
          id
          jobId
          name
          mimeType
        }
      }
      artifacts {
        id
        name
        mimeType
      }
    }
  }
`);
const RenderOptions = graphql(`
  query RenderJobOptions($id: ID!) {
    job(id: $id) {
      id
      options
    }
  }
`);
const RenderPages = graphql(`
  mutation RenderPages($input: CreateJobInput!, $key: String) {
    createJob(input: $input, idempotencyKey: $key) {
      id
      state
    }
  }
`);
const RenderLive = graphql(`
  subscription RenderLive($id: ID!) {
    jobUpdated(id: $id) {
      id
      state
      progress
    }
  }
`);

/** The rendering resolution the viewer asks for; boxes are scaled from points by dpi/72. */
const renderDPI = 96;

function useArtifactText(fileId: string | undefined, artifactId: string | undefined) {
  const client = useClient();
  const [state, setState] = useState<{ text: string | null; error: ApiError | null }>({ text: null, error: null });
  useEffect(() => {
    if (!fileId || !artifactId) return;
    let live = true;
    (async () => {
      const r = await mintDownloadURL(client, fileId, artifactId);
      if (!r.url) return live && setState({ text: null, error: r.error });
      const text = await (await fetch(r.url)).text();
      if (live) setState({ text, error: null });
    })().catch((e) => live && setState({ text: null, error: { code: "network_error", message: String(e) } }));
    return () => {
      live = false;
    };
  }, [client, fileId, artifactId]);
  return state;
}

function PageImage({ fileId, artifactId, page, dpi, boxes, active }: { fileId: string; artifactId: string; page: number; dpi: number; boxes: Box[]; active: boolean }) {
  const { url } = useDownloadURL(fileId, artifactId);
  const [size, setSize] = useState<{ w: number; h: number } | null>(null);
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (active && boxes.length) ref.current?.scrollIntoView({ behavior: "smooth", block: "center" });
  }, [active, boxes]);
  // The page in points: the image's pixels at the render resolution.
  const pts = size ? { w: (size.w * 72) / dpi, h: (size.h * 72) / dpi } : null;
  return (
    <div className={"page-image" + (active ? " active" : "")} ref={ref} data-page={page}>
      <div className="page-label">Page {page}</div>
      <div className="page-frame">
        {url ? <img src={url} alt={`Page ${page}`} onLoad={(e) => setSize({ w: e.currentTarget.naturalWidth, h: e.currentTarget.naturalHeight })} /> : <div className="page-placeholder"><Loading label={`Loading page ${page}`} /></div>}
        {pts && boxes.length > 0 && (
          <svg className="page-boxes" viewBox={`0 0 ${pts.w} ${pts.h}`} preserveAspectRatio="none" aria-hidden="true">
            {boxes.map((b, i) => (
              <rect key={i} x={b.x0} y={b.y0} width={b.x1 - b.x0} height={b.y1 - b.y0} className="chunk-box" />
            ))}
          </svg>
        )}
      </div>
    </div>
  );
}

export default function AiReady({ jobId }: { jobId: string }) {
  const [{ data, error, fetching }, refetch] = useQuery({ query: AiJob, variables: { id: jobId } });
  const job = data?.job;
  const chunksArt = job?.artifacts.find((a) => a.name === "chunks.json");
  const mdArt = job?.artifacts.find((a) => a.name === "document.md");
  const chunks = useArtifactText(job?.fileId, chunksArt?.id);
  const markdown = useArtifactText(job?.fileId, chunksArt ? undefined : mdArt?.id);
  const [selected, setSelected] = useState<number | null>(null);
  const [renderJob, setRenderJob] = useState<string | null>(null);
  const [render, startRender] = useMutation(RenderPages);
  const [live] = useSubscription({ query: RenderLive, variables: { id: renderJob ?? "" }, pause: !renderJob });
  useEffect(() => {
    if (live.data?.jobUpdated.state === "succeeded") refetch({ requestPolicy: "network-only" });
  }, [live.data?.jobUpdated.state, refetch]);

  const parsed = useMemo(() => {
    if (!chunks.text) return null;
    try {
      return JSON.parse(chunks.text) as { chunks: Chunk[]; pages: number };
    } catch {
      return null;
    }
  }, [chunks.text]);
  // Page images: the newest pdf.render job's artifacts on the same file.
  const pageArts = useMemo(() => {
    const arts = (job?.file?.artifacts ?? []).filter((a) => a.mimeType.startsWith("image/") && /-page-\d+\.\w+$/.test(a.name));
    const byJob = new Map<string, typeof arts>();
    arts.forEach((a) => byJob.set(a.jobId, [...(byJob.get(a.jobId) ?? []), a]));
    const last = [...byJob.keys()].pop();
    return last ? byJob.get(last)!.map((a) => ({ ...a, page: Number(/-page-(\d+)\.\w+$/.exec(a.name)![1]) })).sort((a, b) => a.page - b.page) : [];
  }, [job]);
  const renderJobId = pageArts[0]?.jobId;
  const [{ data: ro }] = useQuery({ query: RenderOptions, variables: { id: renderJobId ?? "" }, pause: !renderJobId });
  const dpi = Number((ro?.job?.options as { dpi?: number } | undefined)?.dpi) || 72;

  const head = <PageHeader title="ai-ready viewer" subtitle={<Link to={`/jobs/${jobId}`} className="mono">{jobId}</Link>} />;
  const state = screenState(head, { data, error, fetching });
  if (state || !data) return state;
  if (!job) return <div className="page">{head}<Empty title="Job not found" /></div>;
  if (job.state !== "succeeded" || (!chunksArt && !mdArt)) return <div className="page">{head}<Empty title="No ai-ready output">The job must succeed with document.md and chunks.json.</Empty></div>;

  const chunk = parsed?.chunks.find((c) => c.index === selected) ?? null;
  const boxesOn = (page: number) => (chunk?.boxes ?? []).filter((b) => b.page === page);

  return (
    <div className="page page-wide">
      <PageHeader
        title="ai-ready viewer"
        subtitle={<>{job.file?.filename ?? job.fileId} · <Link to={`/jobs/${jobId}`} className="mono">{jobId}</Link></>}
      />
      {chunk && (
        <div className="chunk-info" role="status" aria-label="Selected chunk">
          <strong>Chunk {chunk.index}</strong>
          <span>{chunk.heading_path.length ? chunk.heading_path.join(" › ") : "(no heading)"}</span>
          <span>{number(chunk.characters)} characters</span>
          {chunk.tokens !== undefined && <span>{number(chunk.tokens)} tokens</span>}
          <span>page{chunk.pages.length === 1 ? "" : "s"} {chunk.pages.join(", ")}</span>
        </div>
      )}
      <div className="viewer">
        <Card title="Markdown" className="viewer-text" scrollLabel="Document text">
          {chunks.error || markdown.error ? (
            <ErrorBox error={(chunks.error ?? markdown.error)!} />
          ) : parsed ? (
            <ol className="chunks" aria-label="Chunks">
              {parsed.chunks.map((c) => (
                <li key={c.index}>
                  <button type="button" className={"chunk" + (selected === c.index ? " selected" : "")} aria-pressed={selected === c.index} onClick={() => setSelected(selected === c.index ? null : c.index)}>
                    <span className="chunk-meta">
                      #{c.index} · {number(c.characters)} chars{c.tokens !== undefined ? ` · ${number(c.tokens)} tokens` : ""} · p. {c.pages.join(", ")}
                    </span>
                    <span className="markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(c.text) }} />
                  </button>
                </li>
              ))}
            </ol>
          ) : markdown.text !== null ? (
            <div className="markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(markdown.text) }} />
          ) : (
            <Loading label="Loading the document" />
          )}
        </Card>
        <Card title="Pages" className="viewer-pages" scrollLabel="Page images">
          {pageArts.length ? (
            <div className="pages">
              {pageArts.map((a) => (
                <PageImage key={a.id} fileId={job.fileId} artifactId={a.id} page={a.page} dpi={dpi} boxes={boxesOn(a.page)} active={!!chunk?.pages.includes(a.page)} />
              ))}
            </div>
          ) : (
            <Empty title="No page images">
              <p>Render the PDF's pages to see where each chunk came from.</p>
              {render.error && <ErrorBox error={apiError(render.error)!} />}
              <button
                type="button"
                className="btn btn-primary"
                disabled={render.fetching || !!renderJob}
                onClick={async () => {
                  const r = await startRender({ input: { fileId: job.fileId, operation: "pdf.render", options: { dpi: renderDPI, format: "png" } }, key: newIdempotencyKey() });
                  if (r.data) setRenderJob(r.data.createJob.id);
                }}
              >
                {renderJob ? `Rendering… ${live.data?.jobUpdated.progress ?? 0}%` : "Render pages"}
              </button>
            </Empty>
          )}
        </Card>
      </div>
    </div>
  );
}
