import { useQuery } from "urql";
import { graphql } from "../gql";
import { apiError } from "../lib/graphql";
import { Link, setQuery, useLocation } from "../lib/router";
import { filterChange, usePaging } from "../lib/paging";
import { bytes } from "../lib/format";
import { Card, Empty, ErrorBox, Loading, PageHeader, Pager, StateBadge, Time } from "../ui/ui";
import { Uploader } from "./Uploader";

const FilesQuery = graphql(`
  query Files($projectId: ID, $first: Int, $after: String) {
    viewer {
      project {
        id
        name
      }
    }
    files(projectId: $projectId, first: $first, after: $after) {
      nodes {
        id
        createdAt
        filename
        status
        byteSize
        detectedFormat {
          extension
          mimeType
        }
        pages
        artifacts {
          id
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

export function Files() {
  const { path, query } = useLocation();
  const paging = usePaging(path, query);
  const project = query.get("project") || undefined;
  const size = Number(query.get("limit")) || 20;
  const [{ data, error, fetching }, refetch] = useQuery({
    query: FilesQuery,
    variables: { projectId: project, first: size, after: paging.after },
  });

  return (
    <div className="page">
      <PageHeader title="Files" subtitle="Uploaded files, newest first. Bytes go straight to storage through pre-signed URLs." />
      <Uploader projectId={project} onUploaded={() => refetch({ requestPolicy: "network-only" })} />
      <Card
        title="All files"
        actions={
          <div className="filters" role="group" aria-label="Filters">
            <label>
              <span>Project</span>
              <select value={project ?? ""} onChange={(e) => setQuery(path, query, filterChange({ project: e.target.value }))}>
                <option value="">The key's project</option>
                {data?.viewer.project && <option value={data.viewer.project.id}>{data.viewer.project.name}</option>}
              </select>
            </label>
            <label>
              <span>Per page</span>
              <select value={String(size)} onChange={(e) => setQuery(path, query, filterChange({ limit: e.target.value === "20" ? null : e.target.value }))}>
                {[20, 50, 100].map((n) => (
                  <option key={n}>{n}</option>
                ))}
              </select>
            </label>
          </div>
        }
      >
        {error && !data ? (
          <ErrorBox error={apiError(error)!} onRetry={() => refetch({ requestPolicy: "network-only" })} />
        ) : !data ? (
          fetching && <Loading label="Loading files" />
        ) : data.files.nodes.length === 0 ? (
          <Empty title="No files yet">Drop files above, or upload with the API or the SDKs.</Empty>
        ) : (
          <>
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Format</th>
                  <th scope="col" className="num">Size</th>
                  <th scope="col" className="num">Artifacts</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {data.files.nodes.map((f) => (
                  <tr key={f.id}>
                    <td>
                      <Link to={`/files/${f.id}`} className="strong">{f.filename}</Link>
                      <div className="mono muted small">{f.id}</div>
                    </td>
                    <td><StateBadge state={f.status} /></td>
                    <td>{f.detectedFormat ? <span title={f.detectedFormat.mimeType}>{f.detectedFormat.extension}</span> : <span className="muted">—</span>}{f.pages ? <span className="muted"> · {f.pages} p.</span> : null}</td>
                    <td className="num">{bytes(f.byteSize)}</td>
                    <td className="num">{f.artifacts.length}</td>
                    <td><Time iso={f.createdAt} rel /></td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager hasPrev={paging.hasPrev} hasNext={data.files.pageInfo.hasNextPage} onPrev={paging.previous} onNext={() => paging.next(data.files.pageInfo.endCursor)} />
          </>
        )}
      </Card>
    </div>
  );
}
