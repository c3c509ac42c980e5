import { useEffect, useMemo, useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import { apiError, newIdempotencyKey } from "../lib/graphql";
import { Link, navigate, setQuery, useLocation } from "../lib/router";
import { bytes, number } from "../lib/format";
import { Card, CopyBlock, Empty, ErrorBox, PageHeader, screenState } from "../ui/ui";
import { notAllowed, useCan, useViewer } from "../lib/viewer";
import { optionsOf, SchemaFields, type JSONSchema, type Values } from "./SchemaForm";

const RunQuery = graphql(`
  query RunSetup {
    operations {
      name
      kind
      description
      available
      engine
      price {
        credits
        per
      }
      priceRule
      inputFormats
      optionsSchema
      steps {
        name
        operation
      }
    }
    files(first: 50) {
      nodes {
        id
        filename
        status
        byteSize
        pages
        createdAt
        detectedFormat {
          extension
          mimeType
        }
      }
    }
  }
`);

const CreateJob = graphql(`
  mutation CreateJob($input: CreateJobInput!, $key: String) {
    createJob(input: $input, idempotencyKey: $key) {
      id
      state
    }
  }
`);
const CreateBatch = graphql(`
  mutation CreateBatch($input: CreateBatchInput!, $key: String) {
    createBatch(input: $input, idempotencyKey: $key) {
      id
      state
    }
  }
`);

type FileRow = { id: string; filename: string; pages?: number | null; detectedFormat?: { extension: string; mimeType: string } | null };

/** Whether a file's detected format is among an operation's input formats (extensions or MIME patterns). */
export function accepts(formats: string[], f: FileRow): boolean {
  if (!formats.length || !f.detectedFormat) return true;
  const { extension, mimeType } = f.detectedFormat;
  return formats.some((p) => p === extension || p === mimeType || (p.endsWith("/*") && mimeType.startsWith(p.slice(0, -1))));
}

const EstimateQuery = graphql(`
  query EstimateJob($input: EstimateJobInput!) {
    estimateJob(input: $input) {
      credits
      estimated
      files {
        fileId
        pricing {
          rule
          pages
          lines {
            step
            operation
            units
            credits
          }
        }
      }
    }
  }
`);

/** A value that follows v once it has stood still for ms: the estimate waits for typing to stop. */
function useSettled<T>(v: T, ms: number): T {
  const [settled, setSettled] = useState(v);
  const key = JSON.stringify(v);
  useEffect(() => {
    const t = setTimeout(() => setSettled(v), ms);
    return () => clearTimeout(t);
  }, [key, ms]);
  return settled;
}

function gqlText(batch: boolean, input: Record<string, unknown>): string {
  const m = batch
    ? "mutation Run($input: CreateBatchInput!) {\n  createBatch(input: $input) { id state counts { queued running succeeded failed cancelled } }\n}"
    : "mutation Run($input: CreateJobInput!) {\n  createJob(input: $input) { id state progress }\n}";
  return `${m}\n\n# variables\n${JSON.stringify({ input }, null, 2)}`;
}

function curlText(batch: boolean, body: Record<string, unknown>): string {
  const url = `${location.origin}/v1/${batch ? "batches" : "jobs"}`;
  const json = JSON.stringify(body, null, 2).replaceAll("'", "'\\''");
  return `curl ${url} \\\n  -H "Authorization: Bearer $FILEMILL_API_KEY" \\\n  -H "Idempotency-Key: $(uuidgen)" \\\n  -H "Content-Type: application/json" \\\n  -d '${json}'`;
}

export function Run() {
  const { path, query } = useLocation();
  const [{ data, error, fetching }, refetch] = useQuery({ query: RunQuery });
  const selected = query.getAll("file");
  const opName = query.get("op") ?? "";
  const [values, setValues] = useState<Values>({});
  const [formOp, setFormOp] = useState(opName);
  const [key, setKey] = useState(newIdempotencyKey);
  const [job, runJob] = useMutation(CreateJob);
  const [batch, runBatch] = useMutation(CreateBatch);
  const can = useCan("jobs:write");
  const viewer = useViewer();
  if (formOp !== opName) {
    // A new operation: a fresh form.
    setFormOp(opName);
    setValues({});
  }

  const ops = useMemo(() => [...(data?.operations ?? [])].sort((a, b) => a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name)), [data]);
  const op = ops.find((o) => o.name === opName);
  const files = (data?.files.nodes ?? []).filter((f) => f.status === "ready");
  const chosen = files.filter((f) => selected.includes(f.id));
  // A file picked by id that is not among the recent ones still counts.
  const missing = selected.filter((id) => !files.some((f) => f.id === id));
  const picked: FileRow[] = [...chosen, ...missing.map((id) => ({ id, filename: id }))];
  const options = optionsOf(values);
  const isBatch = picked.length > 1;
  const what = op ? (op.kind === "preset" ? { preset: op.name } : { operation: op.name }) : {};
  const gqlInput = isBatch ? { fileIds: picked.map((f) => f.id), ...what, options } : { fileId: picked[0]?.id ?? "file_…", ...what, options };
  const restBody = isBatch ? { file_ids: picked.map((f) => f.id), ...what, options } : { file_id: picked[0]?.id ?? "file_…", ...what, options };
  // The server prices the run as creating it would: the files' pages, the options, the
  // engines running now. Nothing is estimated here.
  const estInput = useSettled(op && picked.length ? { fileIds: picked.map((f) => f.id), ...what, options } : null, 250);
  const [estimate] = useQuery({ query: EstimateQuery, variables: { input: estInput! }, pause: !estInput, requestPolicy: "network-only" });
  const est = estInput && estimate.data?.estimateJob;
  const estErr = estInput ? apiError(estimate.error) : null;
  const mismatched = op ? chosen.filter((f) => !accepts(op.inputFormats, f)) : [];
  const busy = job.fetching || batch.fetching;
  const err = apiError(job.error ?? batch.error);

  const toggle = (id: string) => {
    const next = selected.includes(id) ? selected.filter((x) => x !== id) : [...selected, id];
    const q = new URLSearchParams(query);
    q.delete("file");
    next.forEach((x) => q.append("file", x));
    navigate(`${path}?${q}`, { replace: true });
  };

  const submit = async () => {
    if (!op || !picked.length) return;
    const r = isBatch
      ? await runBatch({ input: gqlInput as never, key })
      : await runJob({ input: gqlInput as never, key });
    if (r.error) return;
    setKey(newIdempotencyKey());
    const d = r.data as { createJob?: { id: string }; createBatch?: { id: string } };
    navigate(d.createBatch ? `/batches/${d.createBatch.id}` : `/jobs/${d.createJob!.id}`);
  };

  const state = screenState(<PageHeader title="Run" />, { data, error, fetching }, () => refetch({ requestPolicy: "network-only" }));
  if (state || !data) return state;

  return (
    <div className="page">
      <PageHeader title="Run" subtitle="Pick files and an operation; the form comes from the operation's options schema." />
      <div className="run-grid">
        <div className="run-main">
          <Card title="1. Files">
            {files.length === 0 && missing.length === 0 ? (
              <Empty title="No ready files">
                <Link to="/files">Upload files</Link> first.
              </Empty>
            ) : (
              <fieldset className="file-picker">
                <legend className="sr-only">Files to run on</legend>
                {missing.map((id) => (
                  <label key={id} className="pick">
                    <input type="checkbox" checked onChange={() => toggle(id)} />
                    <span className="mono">{id}</span>
                  </label>
                ))}
                {files.map((f) => (
                  <label key={f.id} className={"pick" + (op && !accepts(op.inputFormats, f) ? " dim" : "")}>
                    <input type="checkbox" checked={selected.includes(f.id)} onChange={() => toggle(f.id)} />
                    <span className="pick-name">{f.filename}</span>
                    <span className="muted small">
                      {f.detectedFormat?.extension} · {bytes(f.byteSize)}
                      {f.pages ? ` · ${f.pages} p.` : ""}
                    </span>
                  </label>
                ))}
              </fieldset>
            )}
          </Card>
          <Card title="2. Operation">
            <div className="field">
              <label htmlFor="op">Operation or preset</label>
              <select id="op" value={opName} onChange={(e) => setQuery(path, query, { op: e.target.value })}>
                <option value="">Choose…</option>
                <optgroup label="Operations">
                  {ops.filter((o) => o.kind === "operation").map((o) => (
                    <option key={o.name} value={o.name} disabled={!o.available}>
                      {o.name}{o.available ? "" : " (unavailable)"}
                    </option>
                  ))}
                </optgroup>
                <optgroup label="Presets">
                  {ops.filter((o) => o.kind === "preset").map((o) => (
                    <option key={o.name} value={o.name} disabled={!o.available}>
                      {o.name}{o.available ? "" : " (unavailable)"}
                    </option>
                  ))}
                </optgroup>
              </select>
            </div>
            {op && (
              <div className="op-info">
                <p>{op.description}</p>
                <p className="muted small">
                  Engine {op.engine} · takes {op.inputFormats.join(", ") || "any format"}
                  {op.steps.length > 0 && <> · steps {op.steps.map((s) => s.operation).join(" → ")}</>}
                </p>
              </div>
            )}
          </Card>
          {op && (
            <Card title="3. Options">
              <form
                onSubmit={(e) => {
                  e.preventDefault();
                  submit();
                }}
              >
                <SchemaFields schema={op.optionsSchema as JSONSchema} values={values} onChange={setValues} />
              </form>
            </Card>
          )}
        </div>
        <aside className="run-side">
          <Card title="Summary">
            <dl className="kv">
              <dt>Files</dt>
              <dd>{picked.length || <span className="muted">none</span>}</dd>
              <dt>Operation</dt>
              <dd>{op?.name ?? <span className="muted">none</span>}</dd>
              <dt>Price</dt>
              <dd>{op ? op.priceRule : "—"}</dd>
              <dt>Estimate</dt>
              <dd className="estimate" aria-live="polite">
                {est ? (
                  <>
                    <strong>
                      {est.estimated ? "up to " : ""}
                      {number(est.credits)} credit{est.credits === 1 ? "" : "s"}
                    </strong>
                    {est.estimated && <div className="muted small">Some pages were estimated from the file's size; the charge counts what runs.</div>}
                  </>
                ) : estErr ? (
                  <span className="bad-text small">
                    {estErr.message} <code>{estErr.code}</code>
                  </span>
                ) : estInput && estimate.fetching ? (
                  <span className="muted">estimating…</span>
                ) : (
                  "—"
                )}
              </dd>
            </dl>
            {mismatched.length > 0 && (
              <p className="warn" role="note">
                {mismatched.map((f) => f.filename).join(", ")}: not a format {op?.name} takes.
              </p>
            )}
            {err && <ErrorBox error={err} />}
            <button type="button" className="btn btn-primary btn-block" disabled={!can || !op || !picked.length || busy} title={can ? undefined : notAllowed(viewer?.role)} onClick={submit}>
              Run job
            </button>
            {isBatch && <p className="muted small center">Several files run as one batch.</p>}
          </Card>
          {op && (
            <Card title="Same request">
              <CopyBlock label="curl" text={curlText(isBatch, restBody)} />
              <CopyBlock label="GraphQL" text={gqlText(isBatch, gqlInput)} />
            </Card>
          )}
        </aside>
      </div>
    </div>
  );
}
