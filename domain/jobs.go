package domain

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
)

// JobsPorts is what Jobs uses of the Store: jobs and batches, the files they read and
// the artifacts they write, the credits they reserve and settle, the projects a list is
// scoped to, and whether the store answers (a worker pings it to tell a store out of
// reach from an attempt that failed). Each admission and each move of a job is one
// write of its own (AdmitJobs, TransitionJob), so Jobs opens no transaction.
type JobsPorts interface {
	JobStore
	FileStore
	CreditStore
	TenantStore
	Pinger
}

// Jobs runs operations on files.
type Jobs struct {
	Store    JobsPorts
	Blobs    Blobs
	Queue    Queue
	Clock    Clock
	Config   Config
	Registry *Registry
	// Engines are the engine families this process runs, by name.
	Engines map[string]Engine
	// Directory tells which engine families live workers run; when nil, this
	// process's Engines are the live ones.
	Directory EngineDirectory
	Verifier  OutputVerifier
	accounts  sync.Map // organization/environment -> credit account id
	// Bus receives running jobs' progress; nil for none.
	Bus EventBus
	// Log receives what a job's outcome does not carry (a sweep that failed).
	Log *slog.Logger
	// Observer receives the figures of admissions and attempts; nil measures nothing.
	Observer Observer
}

// liveEngines returns the engine families live workers run now. Codes:
// dependency_unavailable when they cannot be told.
func (s *Jobs) liveEngines(ctx context.Context) (map[string]EngineInfo, error) {
	if s.Directory == nil {
		out := make(map[string]EngineInfo, len(s.Engines))
		for name, e := range s.Engines {
			info := DescribeEngine(e)
			info.Workers = 1
			out[name] = info
		}
		return out, nil
	}
	live, err := s.Directory.LiveEngines(ctx)
	if err != nil {
		return nil, &Error{Code: CodeDependencyUnavailable, RetryAfter: 5, Message: "the list of running workers cannot be read now; try again shortly"}
	}
	return live, nil
}

// ListOperations lists the operations and presets clients may request, each marked
// available when live workers run every engine it needs.
func (s *Jobs) ListOperations(ctx context.Context, p *Principal) ([]OperationView, error) {
	live, err := s.liveEngines(ctx)
	if err != nil {
		return nil, err
	}
	ops := s.Registry.List()
	out := make([]OperationView, 0, len(ops))
	for _, op := range ops {
		out = append(out, op.View(func(e string) bool { _, ok := live[e]; return ok }))
	}
	return out, nil
}

// JobQuery is a list request.
type JobQuery struct {
	ProjectID string
	State     string
	FileID    string // the jobs of one file
	BatchID   string // the members of one batch
	Page
}

// ListJobs lists jobs newest first, of one state, file or batch when asked, each with its
// first artifacts. Codes: invalid_request (limit, starting_after, state, file_id,
// batch_id, project_id), not_found/key_restricted (project_id), insufficient_scope.
func (s *Jobs) ListJobs(ctx context.Context, p *Principal, q JobQuery) (List[*Job], error) {
	if err := p.RequireScope(ScopeJobsRead); err != nil {
		return List[*Job]{}, err
	}
	if err := ValidatePage(&q.Page, PrefixJob); err != nil {
		return List[*Job]{}, err
	}
	if q.State != "" && !slices.Contains(JobStates, q.State) {
		return List[*Job]{}, InvalidParam("state", "state must be one of queued, running, succeeded, failed, cancelled")
	}
	if q.FileID != "" && !ValidID(PrefixFile, q.FileID) {
		return List[*Job]{}, InvalidParam("file_id", "file_id must be a file id (file_ followed by 26 characters)")
	}
	if q.BatchID != "" && !ValidID(PrefixBatch, q.BatchID) {
		return List[*Job]{}, InvalidParam("batch_id", "batch_id must be a batch id (bat_ followed by 26 characters)")
	}
	scope, err := listScope(ctx, s.Store, p, q.ProjectID)
	if err != nil {
		return List[*Job]{}, err
	}
	if q.StartingAfter != "" {
		err := checkCursor(ctx, func(ctx context.Context) (string, string, Environment, error) {
			j, err := s.Store.FindJobByID(ctx, q.StartingAfter)
			if err != nil {
				return "", "", "", err
			}
			return j.OrganizationID, j.ProjectID, j.Environment, nil
		}, scope, p.Environment())
		if err != nil {
			return List[*Job]{}, err
		}
	}
	data, more, err := s.Store.FindJobs(ctx, JobFilter{Scope: scope, Environment: p.Environment(), State: q.State,
		FileID: q.FileID, BatchID: q.BatchID, Page: q.Page})
	if err != nil {
		return List[*Job]{}, err
	}
	if err := s.loadJobArtifacts(ctx, p, data); err != nil {
		return List[*Job]{}, err
	}
	return List[*Job]{Data: data, HasMore: more}, nil
}

// FindJob returns a job the key may see, with its first ArtifactPreview artifacts.
// Codes: not_found, environment_mismatch, key_restricted, insufficient_scope.
func (s *Jobs) FindJob(ctx context.Context, p *Principal, id string) (*Job, error) {
	if err := p.RequireScope(ScopeJobsRead); err != nil {
		return nil, err
	}
	if !ValidID(PrefixJob, id) {
		return nil, NotFound("job")
	}
	j, err := s.Store.FindJobByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, NotFound("job")
	}
	if err != nil {
		return nil, err
	}
	if err := p.CheckResource("job", j.OrganizationID, j.ProjectID, j.Environment); err != nil {
		return nil, err
	}
	if j.ArtifactCount == 0 {
		// Artifacts are recorded with the outcome that counts them: a job polled while
		// it runs costs one read, not two.
		j.Artifacts = []*Artifact{}
		return j, nil
	}
	if j.Artifacts, err = s.Store.FindArtifactsByJobs(ctx, []string{j.ID}, ArtifactPreview); err != nil {
		return nil, err
	}
	return j, nil
}

// ListJobArtifacts lists the artifacts of a job the key may see, in the order the job
// made them (its parts, its pages), a page at a time. Codes: those of FindJob,
// invalid_request (limit, starting_after).
func (s *Jobs) ListJobArtifacts(ctx context.Context, p *Principal, jobID string, page Page) (List[*Artifact], error) {
	j, err := s.FindJob(ctx, p, jobID)
	if err != nil {
		return List[*Artifact]{}, err
	}
	if err := ValidatePage(&page, PrefixArtifact); err != nil {
		return List[*Artifact]{}, err
	}
	if page.StartingAfter != "" {
		a, err := s.Store.FindArtifactByID(ctx, page.StartingAfter)
		if err != nil || a.JobID != j.ID {
			return List[*Artifact]{}, InvalidParam("starting_after", "starting_after does not name an artifact of this job")
		}
	}
	data, more, err := s.Store.FindArtifacts(ctx, ArtifactFilter{OrganizationID: j.OrganizationID, JobID: j.ID, Page: page})
	if err != nil {
		return List[*Artifact]{}, err
	}
	return List[*Artifact]{Data: data, HasMore: more}, nil
}
