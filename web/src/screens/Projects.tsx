import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import { apiError } from "../lib/graphql";
import { notAllowed, useCan, useViewer } from "../lib/viewer";
import { select } from "../lib/auth";
import { Card, Empty, ErrorBox, PageHeader, Time, screenState } from "../ui/ui";

const ProjectsQuery = graphql(`
  query Projects {
    projects {
      id
      name
      concurrencyLimit
      createdAt
    }
  }
`);

const CreateProject = graphql(`
  mutation CreateProject($input: CreateProjectInput!) {
    createProject(input: $input) {
      id
      name
      concurrencyLimit
    }
  }
`);

const UpdateProject = graphql(`
  mutation UpdateProject($id: ID!, $input: UpdateProjectInput!) {
    updateProject(id: $id, input: $input) {
      id
      name
      concurrencyLimit
    }
  }
`);

type Project = { id: string; name: string; concurrencyLimit: number; createdAt: string };

function ProjectRow({ p, can, current }: { p: Project; can: boolean; current: boolean }) {
  const viewer = useViewer();
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(p.name);
  const [limit, setLimit] = useState(String(p.concurrencyLimit));
  const [res, update] = useMutation(UpdateProject);
  const err = apiError(res.error);
  if (editing)
    return (
      <tr>
        <td colSpan={4}>
          <form
            className="inline-form"
            onSubmit={async (e) => {
              e.preventDefault();
              const r = await update({ id: p.id, input: { name, concurrencyLimit: Number(limit) || 0 } });
              if (r.data) setEditing(false);
            }}
          >
            <div className="field">
              <label htmlFor={`name-${p.id}`}>Name</label>
              <input id={`name-${p.id}`} required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor={`limit-${p.id}`}>Concurrency limit</label>
              <input id={`limit-${p.id}`} type="number" min={0} max={100000} value={limit} onChange={(e) => setLimit(e.target.value)} />
            </div>
            <button type="submit" className="btn btn-primary" disabled={res.fetching}>
              Save
            </button>
            <button type="button" className="btn" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </form>
          {err && <ErrorBox error={err} />}
        </td>
      </tr>
    );
  return (
    <tr data-project-id={p.id}>
      <td>
        <strong>{p.name}</strong> {current && <span className="badge">current</span>}
        <div className="mono small muted">{p.id}</div>
      </td>
      <td className="num">{p.concurrencyLimit || <span className="muted">default</span>}</td>
      <td>
        <Time iso={p.createdAt} date />
      </td>
      <td className="num">
        {!current && (
          <button type="button" className="btn btn-small" onClick={() => select(p.id, viewer?.environment ?? null)}>
            Switch to
          </button>
        )}{" "}
        <button type="button" className="btn btn-small" disabled={!can} title={can ? undefined : notAllowed(viewer?.role)} aria-label={`Edit ${p.name}`} onClick={() => setEditing(true)}>
          Edit
        </button>
      </td>
    </tr>
  );
}

export function Projects() {
  const can = useCan("manage");
  const viewer = useViewer();
  const [{ data, error, fetching }, refetch] = useQuery({ query: ProjectsQuery });
  const [name, setName] = useState("");
  const [limit, setLimit] = useState("");
  const [res, create] = useMutation(CreateProject);
  const head = <PageHeader title="Projects" subtitle="Files, jobs, webhooks and keys belong to a project; each has its own limit of jobs queued or running at once." />;
  const state = screenState(head, { data, error, fetching }, () => refetch({ requestPolicy: "network-only" }));
  if (state || !data) return state;
  const err = apiError(res.error);
  return (
    <div className="page">
      {head}
      <Card title="Create project">
        <form
          className="inline-form"
          onSubmit={async (e) => {
            e.preventDefault();
            const r = await create({ input: { name, concurrencyLimit: limit ? Number(limit) : 0 } });
            if (r.data) {
              setName("");
              setLimit("");
              refetch({ requestPolicy: "network-only" });
            }
          }}
        >
          <div className="field">
            <label htmlFor="project-name">Project name</label>
            <input id="project-name" required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} disabled={!can} />
          </div>
          <div className="field">
            <label htmlFor="project-limit">Concurrency limit</label>
            <input id="project-limit" type="number" min={0} max={100000} placeholder="default" value={limit} onChange={(e) => setLimit(e.target.value)} disabled={!can} />
          </div>
          <button type="submit" className="btn btn-primary" disabled={!can || res.fetching}>
            Create project
          </button>
        </form>
        {!can && <p className="muted small">{notAllowed(viewer?.role)}</p>}
        {err && <ErrorBox error={err} />}
      </Card>
      <Card>
        {data.projects.length === 0 ? (
          <Empty title="No projects" />
        ) : (
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Project</th>
                <th scope="col" className="num">Concurrency limit</th>
                <th scope="col">Created</th>
                <th scope="col"><span className="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {data.projects.map((p) => (
                <ProjectRow key={p.id} p={p} can={can} current={viewer?.project.id === p.id} />
              ))}
            </tbody>
          </table>
        )}
      </Card>
    </div>
  );
}
