import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import { apiError } from "../lib/graphql";
import { Link, navigate } from "../lib/router";
import { bytes } from "../lib/format";
import { Card, Empty, ErrorBox, PageHeader, StateBadge, Time, screenState } from "../ui/ui";
import { DownloadButton, Preview } from "./preview";

const FileQuery = graphql(`
  query FileDetail($id: ID!) {
    file(id: $id) {
      id
      createdAt
      projectId
      filename
      status
      byteSize
      declaredMimeType
      detectedFormat {
        extension
        mimeType
      }
      pages
      sha256
      duplicateOf
      expiresAt
      findings {
        code
        message
      }
      artifacts {
        id
        createdAt
        jobId
        step
        name
        mimeType
        byteSize
      }
      history {
        id
        createdAt
        type
        jobId
        summary
      }
    }
  }
`);

const DeleteFile = graphql(`
  mutation DeleteFile($id: ID!) {
    deleteFile(id: $id) {
      id
    }
  }
`);

export function FileDetail({ id }: { id: string }) {
  const [{ data, error, fetching }, refetch] = useQuery({ query: FileQuery, variables: { id } });
  const [del, doDelete] = useMutation(DeleteFile);
  const [selected, setSelected] = useState<string | null>(null);
  const f = data?.file;
  const head = <PageHeader title={f?.filename ?? "File"} subtitle={<span className="mono">{id}</span>} />;
  const state = screenState(head, { data, error, fetching }, () => refetch({ requestPolicy: "network-only" }));
  if (state || !data) return state;
  if (!f) return <div className="page">{head}<Empty title="File not found">It may have been deleted or belong to another project.</Empty></div>;

  const images = f.artifacts.filter((a) => a.mimeType.startsWith("image/"));
  const previewable = f.status === "ready" && f.detectedFormat?.mimeType.startsWith("image/");
  const chosen = f.artifacts.find((a) => a.id === selected) ?? null;

  return (
    <div className="page">
      <PageHeader
        title={f.filename}
        subtitle={<span className="mono">{f.id}</span>}
        actions={
          <>
            {f.status === "ready" && <Link className="btn btn-primary" to={`/run?file=${f.id}`}>Run a job</Link>}
            {f.status === "ready" && <DownloadButton fileId={f.id} label={`Download ${f.filename}`} small={false} />}
            {f.status !== "deleted" && (
              <button
                type="button"
                className="btn btn-danger"
                disabled={del.fetching}
                onClick={async () => {
                  if (!confirm(`Delete ${f.filename} and its artifacts?`)) return;
                  const r = await doDelete({ id: f.id });
                  if (!r.error) navigate("/files");
                }}
              >
                Delete
              </button>
            )}
          </>
        }
      />
      {del.error && <ErrorBox error={apiError(del.error)!} />}
      <div className="grid two">
        <Card title="Details">
          <dl className="kv">
            <dt>Status</dt>
            <dd><StateBadge state={f.status} /></dd>
            <dt>Size</dt>
            <dd>{bytes(f.byteSize)}</dd>
            <dt>Format</dt>
            <dd>{f.detectedFormat ? `${f.detectedFormat.extension} (${f.detectedFormat.mimeType})` : "—"}</dd>
            <dt>Declared type</dt>
            <dd>{f.declaredMimeType ?? "—"}</dd>
            {f.pages ? (<><dt>Pages</dt><dd>{f.pages}</dd></>) : null}
            <dt>SHA-256</dt>
            <dd className="mono break">{f.sha256 ?? "—"}</dd>
            {f.duplicateOf && (<><dt>Duplicate of</dt><dd><Link to={`/files/${f.duplicateOf}`} className="mono">{f.duplicateOf}</Link></dd></>)}
            <dt>Created</dt>
            <dd><Time iso={f.createdAt} /></dd>
            <dt>Expires</dt>
            <dd>{f.expiresAt ? <Time iso={f.expiresAt} /> : "kept"}</dd>
          </dl>
          {f.findings.length > 0 && (
            <div className="findings" role="alert">
              <h3>Findings</h3>
              <ul>
                {f.findings.map((x, i) => (
                  <li key={i}><code>{x.code}</code> {x.message}</li>
                ))}
              </ul>
            </div>
          )}
        </Card>
        <Card title="Preview">
          {previewable ? (
            <Preview fileId={f.id} mimeType={f.detectedFormat!.mimeType} name={f.filename} />
          ) : images.length > 0 ? (
            <div className="thumbs">
              {images.slice(0, 4).map((a) => (
                <Preview key={a.id} fileId={f.id} artifactId={a.id} mimeType={a.mimeType} name={a.name} />
              ))}
            </div>
          ) : f.detectedFormat?.extension === "pdf" ? (
            <Empty title="No page images yet">
              <Link to={`/run?file=${f.id}&op=pdf.render`}>Render its pages</Link> to preview them here.
            </Empty>
          ) : (
            <Empty title="No preview">This format has no inline preview.</Empty>
          )}
        </Card>
      </div>
      <Card title={`Artifacts (${f.artifacts.length})`}>
        {f.artifacts.length === 0 ? (
          <Empty title="No artifacts">Jobs on this file store their outputs here.</Empty>
        ) : (
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col" className="num">Size</th>
                <th scope="col">Job</th>
                <th scope="col">Created</th>
                <th scope="col"><span className="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {f.artifacts.map((a) => (
                <tr key={a.id} className={selected === a.id ? "selected" : ""}>
                  <td className="strong">{a.name}{a.step && <span className="muted small"> · {a.step}</span>}</td>
                  <td>{a.mimeType}</td>
                  <td className="num">{bytes(a.byteSize)}</td>
                  <td><Link to={`/jobs/${a.jobId}`} className="mono small">{a.jobId}</Link></td>
                  <td><Time iso={a.createdAt} rel /></td>
                  <td className="row-actions">
                    <button type="button" className="btn btn-small" aria-pressed={selected === a.id} onClick={() => setSelected(selected === a.id ? null : a.id)}>
                      Preview
                    </button>
                    <DownloadButton fileId={f.id} artifactId={a.id} label={`Download ${a.name}`} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {chosen && (
          <div className="artifact-preview">
            <h3>{chosen.name}</h3>
            <Preview fileId={f.id} artifactId={chosen.id} mimeType={chosen.mimeType} name={chosen.name} byteSize={chosen.byteSize} />
          </div>
        )}
      </Card>
      <Card title="History">
        {f.history.length === 0 ? (
          <Empty title="No history" />
        ) : (
          <ol className="timeline">
            {f.history.map((h) => (
              <li key={h.id}>
                <span className="timeline-dot" aria-hidden="true" />
                <div>
                  <div><code>{h.type}</code> {h.summary}</div>
                  <div className="muted small">
                    <Time iso={h.createdAt} />
                    {h.jobId && <> · <Link to={`/jobs/${h.jobId}`} className="mono">{h.jobId}</Link></>}
                  </div>
                </div>
              </li>
            ))}
          </ol>
        )}
      </Card>
    </div>
  );
}
