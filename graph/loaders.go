package graph

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vikstrous/dataloadgen"

	"github.com/filemill/filemill/domain"
)

// loaders batch the reads of one operation: the files of a page of jobs are one read,
// their artifacts another. Lists prime them with what they read already, so a page of
// jobs with their files and artifacts costs a fixed number of reads.
type loaders struct {
	files         *dataloadgen.Loader[string, *domain.File]
	jobArtifacts  *dataloadgen.Loader[string, []*domain.Artifact]
	fileArtifacts *dataloadgen.Loader[string, []*domain.Artifact]
	jobs          *dataloadgen.Loader[string, *domain.Job]
}

// newLoaders returns the loaders of one response; each gathers keys for wait before it
// reads (ServerConfig.LoaderWait).
func newLoaders(svc *domain.Services, p *domain.Principal, wait time.Duration) *loaders {
	opts := []dataloadgen.Option{dataloadgen.WithWait(wait), dataloadgen.WithBatchCapacity(domain.MaxPageSize)}
	return &loaders{
		files: dataloadgen.NewLoader(func(ctx context.Context, ids []string) ([]*domain.File, []error) {
			m, err := svc.Files.FindFilesByIDs(ctx, p, ids)
			return inOrder(ids, m, err)
		}, opts...),
		jobArtifacts: dataloadgen.NewLoader(func(ctx context.Context, ids []string) ([][]*domain.Artifact, []error) {
			m, err := svc.Jobs.ArtifactsOfJobs(ctx, p, ids)
			return inOrder(ids, m, err)
		}, opts...),
		fileArtifacts: dataloadgen.NewLoader(func(ctx context.Context, ids []string) ([][]*domain.Artifact, []error) {
			m, err := svc.Files.ArtifactsOfFiles(ctx, p, ids, domain.FileArtifactPreview)
			return inOrder(ids, m, err)
		}, opts...),
		// Jobs are primed by the reads that list them (a batch's members); one not
		// primed is read alone, through the same authorization as job(id).
		jobs: dataloadgen.NewLoader(func(ctx context.Context, ids []string) ([]*domain.Job, []error) {
			out, errs := make([]*domain.Job, len(ids)), make([]error, len(ids))
			for i, id := range ids {
				out[i], errs[i] = svc.Jobs.FindJob(ctx, p, id)
			}
			return out, errs
		}, opts...),
	}
}

// inOrder lays a read's results out in the order of the keys; a key without a result
// gets the zero value (no file, no artifacts).
func inOrder[V any](ids []string, m map[string]V, err error) ([]V, []error) {
	out, errs := make([]V, len(ids)), make([]error, len(ids))
	for i, id := range ids {
		if err != nil {
			errs[i] = err
			continue
		}
		out[i] = m[id]
	}
	return out, errs
}

func loadersFrom(ctx context.Context) *loaders {
	l, _ := ctx.Value(ctxLoaders).(*loaders)
	return l
}

// primeJobs remembers jobs read by a list, with their artifacts when the list read them.
func (l *loaders) primeJobs(jobs []*domain.Job, withArtifacts bool) {
	for _, j := range jobs {
		l.jobs.Prime(j.ID, j)
		if withArtifacts {
			l.jobArtifacts.Prime(j.ID, j.Artifacts)
		}
	}
}

// primeFiles remembers files read by a list; their artifacts are read by the loader,
// a bounded number per file, when asked for.
func (l *loaders) primeFiles(files []*domain.File) {
	for _, f := range files {
		l.files.Prime(f.ID, f)
	}
}

// prefetchFiles reads the files of a page of jobs at once, and their artifacts when
// withArtifacts, and primes the loaders with them (a missing file as nil, so it is not
// read again). A key that may not read files skips it: each job's file field then
// answers insufficient_scope on its own.
func (l *loaders) prefetchFiles(ctx context.Context, svc *domain.Services, p *domain.Principal, jobs []*domain.Job, withArtifacts bool) error {
	ids := make([]string, 0, len(jobs))
	seen := map[string]bool{}
	for _, j := range jobs {
		if !seen[j.FileID] {
			seen[j.FileID] = true
			ids = append(ids, j.FileID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	m, err := svc.Files.FindFilesByIDs(ctx, p, ids)
	if domain.ErrorCode(err) == domain.CodeInsufficientScope {
		return nil
	}
	if err != nil {
		return err
	}
	var arts map[string][]*domain.Artifact
	if withArtifacts && len(m) > 0 {
		found := make([]string, 0, len(m))
		for id := range m {
			found = append(found, id)
		}
		if arts, err = svc.Files.ArtifactsOfFiles(ctx, p, found, domain.FileArtifactPreview); err != nil {
			return err
		}
	}
	for _, id := range ids {
		l.files.Prime(id, m[id])
		if arts != nil && m[id] != nil {
			l.fileArtifacts.Prime(id, arts[id])
		}
	}
	return nil
}

// selects reports whether the items of the connection being resolved select the
// fields of path (each inside the one before), through nodes or edges.node.
func selects(ctx context.Context, path ...string) bool {
	oc := graphql.GetOperationContext(ctx)
	var items []graphql.CollectedField
	for _, f := range graphql.CollectFieldsCtx(ctx, nil) {
		switch f.Name {
		case "nodes":
			items = append(items, graphql.CollectFields(oc, f.Selections, nil)...)
		case "edges":
			for _, e := range graphql.CollectFields(oc, f.Selections, nil) {
				if e.Name == "node" {
					items = append(items, graphql.CollectFields(oc, e.Selections, nil)...)
				}
			}
		}
	}
	for _, name := range path {
		var next []graphql.CollectedField
		for _, it := range items {
			if it.Name == name {
				next = append(next, graphql.CollectFields(oc, it.Selections, nil)...)
			}
		}
		if len(next) == 0 && !hasField(items, name) {
			return false
		}
		items = next
	}
	return true
}

func hasField(fields []graphql.CollectedField, name string) bool {
	for _, f := range fields {
		if f.Name == name {
			return true
		}
	}
	return false
}
