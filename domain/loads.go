package domain

import (
	"context"
	"slices"
	"strings"
)

// Reads of many objects at once, for lists and for the GraphQL door's loaders: a page
// of jobs with their files and artifacts is a fixed number of reads, whatever its size.

// FindFilesByIDs returns, by id, the files among ids the key may see; deleted files,
// other organizations', the other environment's and those outside a restricted key's
// projects are left out, as a lookup one by one would refuse them.
// Codes: insufficient_scope.
func (s *Files) FindFilesByIDs(ctx context.Context, p *Principal, ids []string) (map[string]*File, error) {
	if err := p.RequireScope(ScopeFilesRead); err != nil {
		return nil, err
	}
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if ValidID(PrefixFile, id) {
			valid = append(valid, id)
		}
	}
	files, err := s.Store.FindFilesByIDs(ctx, valid)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*File, len(files))
	for _, f := range files {
		if f.Status != FileDeleted && p.CheckResource("file", f.OrganizationID, f.ProjectID, f.Environment) == nil {
			out[f.ID] = f
		}
	}
	return out, nil
}

// ArtifactsOfFiles returns, by file id, the first perFile artifacts (all of them when
// perFile is 0) of files the caller has already read through the key; artifacts of
// another organization are never returned.
func (s *Files) ArtifactsOfFiles(ctx context.Context, p *Principal, fileIDs []string, perFile int) (map[string][]*Artifact, error) {
	arts, err := s.Store.FindArtifactsByFiles(ctx, fileIDs, perFile)
	if err != nil {
		return nil, err
	}
	return groupArtifacts(p, arts, func(a *Artifact) string { return a.FileID }), nil
}

// ArtifactsOfJobs returns, by job id, the first ArtifactPreview artifacts of jobs the
// caller has already read through the key (all of them are paged by ListJobArtifacts);
// artifacts of another organization are never returned.
func (s *Jobs) ArtifactsOfJobs(ctx context.Context, p *Principal, jobIDs []string) (map[string][]*Artifact, error) {
	arts, err := s.Store.FindArtifactsByJobs(ctx, jobIDs, ArtifactPreview)
	if err != nil {
		return nil, err
	}
	return groupArtifacts(p, arts, func(a *Artifact) string { return a.JobID }), nil
}

func groupArtifacts(p *Principal, arts []*Artifact, by func(*Artifact) string) map[string][]*Artifact {
	out := map[string][]*Artifact{}
	for _, a := range arts {
		if a.OrganizationID == p.Organization.ID {
			out[by(a)] = append(out[by(a)], a)
		}
	}
	return out
}

// loadJobArtifacts sets the first artifacts of each job in one read.
func (s *Jobs) loadJobArtifacts(ctx context.Context, p *Principal, jobs []*Job) error {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	byJob, err := s.ArtifactsOfJobs(ctx, p, ids)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		j.Artifacts = byJob[j.ID]
	}
	return nil
}

// loadFileArtifacts sets the artifacts of each file in one read.
func (s *Files) loadFileArtifacts(ctx context.Context, p *Principal, files []*File) error {
	ids := make([]string, len(files))
	for i, f := range files {
		ids[i] = f.ID
	}
	byFile, err := s.ArtifactsOfFiles(ctx, p, ids, 0)
	if err != nil {
		return err
	}
	for _, f := range files {
		f.Artifacts = byFile[f.ID]
	}
	return nil
}

// StreamableEvents are the event types a live subscription may ask for: those webhooks
// carry, the steps before them, and running jobs' progress.
var StreamableEvents = append(slices.Clone(SubscribableEvents), EventJobQueued, EventJobRunning, EventJobProgress,
	EventUploadOpened, EventUploadAborted)

// AuthorizeEventStream decides a live subscription to a project's events (the key's own
// project by default), as GET /v1/events decides a list of them, and returns its topic
// and the types to pass on (those webhooks carry when none are asked for).
// Codes: insufficient_scope, invalid_request (project_id, types), not_found,
// key_restricted.
func (w *Webhooks) AuthorizeEventStream(ctx context.Context, p *Principal, projectID string, types []string) (string, []string, error) {
	if err := p.RequireScope(ScopeWebhooksRead); err != nil {
		return "", nil, err
	}
	for _, t := range types {
		if !slices.Contains(StreamableEvents, t) {
			return "", nil, InvalidParam("types", "unknown event type %q (known: %s)", t, strings.Join(StreamableEvents, ", "))
		}
	}
	if len(types) == 0 {
		types = SubscribableEvents
	}
	if projectID != "" && !ValidID(PrefixProject, projectID) {
		return "", nil, InvalidParam("project_id", "project_id must be a project id (prj_ followed by 26 characters)")
	}
	prj, err := p.ResolveProject(ctx, w.Store, projectID)
	if err != nil {
		return "", nil, err
	}
	return ProjectTopic(prj.ID, p.Environment()), types, nil
}
