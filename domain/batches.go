package domain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Batch sizes of the contract.
const MaxBatchSize = 100

// BatchRequest is the body of POST /v1/batches.
type BatchRequest struct {
	FileIDs   []string        `json:"file_ids"`
	Operation string          `json:"operation"`
	Preset    string          `json:"preset"`
	Options   json.RawMessage `json:"options"`
}

// Action scopes a batch request's Idempotency-Key.
func (BatchRequest) Action() string { return "batches.create" }

func (r BatchRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	adm, err := s.Jobs.authorizeBatch(ctx, p, r)
	return s.Jobs.admitting(p, adm), err
}

// authorizeBatch decides a batch request up to its claim: its list of files is well
// formed, the key may create jobs, run the operation, and act on every file.
// Codes: those of authorizeJob, with param file_ids[i].
func (s *Jobs) authorizeBatch(ctx context.Context, p *Principal, req BatchRequest) (*admission, error) {
	if err := p.RequireScope(ScopeJobsWrite); err != nil {
		return nil, err
	}
	if len(req.FileIDs) < 1 || len(req.FileIDs) > MaxBatchSize {
		return nil, InvalidParam("file_ids", "file_ids takes 1 to %d files", MaxBatchSize)
	}
	seen := map[string]int{}
	for i, id := range req.FileIDs {
		if !ValidID(PrefixFile, id) {
			return nil, InvalidParam(fmt.Sprintf("file_ids[%d]", i), "file_ids[%d] must be a file id (file_ followed by 26 characters)", i)
		}
		if j, dup := seen[id]; dup {
			return nil, InvalidParam(fmt.Sprintf("file_ids[%d]", i), "file %s is listed twice (also at %d)", id, j)
		}
		seen[id] = i
	}
	op, options, err := s.resolveWithOptions(p, req.Operation, req.Preset, req.Options)
	if err != nil {
		return nil, err
	}
	adm := &admission{op: op, options: options, fileIDs: req.FileIDs, batch: true,
		param: func(i int) string { return fmt.Sprintf("file_ids[%d]", i) },
		answer: func(b *Batch, jobs []*Job) (*Answer, error) {
			return NewAnswer(ResultAccepted, b.AdmittedView(jobs))
		}}
	if err := s.authorizeFiles(ctx, p, adm); err != nil {
		return nil, err
	}
	return adm, nil
}

// CreateBatch admits and prices every member and writes the batch, its jobs, their
// reservations and events at once — or nothing, with the error naming the offending file
// in param and details. Members are ordinary jobs, returned in request order. It is the
// effect of a BatchRequest without its idempotency (Services.Do runs that).
// Codes: those of CreateJob, with param file_ids[i].
func (s *Jobs) CreateBatch(ctx context.Context, p *Principal, req BatchRequest) (*Batch, []*Job, error) {
	adm, err := s.authorizeBatch(ctx, p, req)
	if err != nil {
		return nil, nil, err
	}
	adm.answer = nil
	b, jobs, _, err := s.admit(ctx, p, adm, nil)
	return b, jobs, err
}

// FindBatch returns a batch with its members. Codes: not_found, environment_mismatch.
func (s *Jobs) FindBatch(ctx context.Context, p *Principal, id string) (*Batch, []*Job, error) {
	if err := p.RequireScope(ScopeJobsRead); err != nil {
		return nil, nil, err
	}
	if !ValidID(PrefixBatch, id) {
		return nil, nil, NotFound("batch")
	}
	b, err := s.Store.FindBatchByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, NotFound("batch")
	}
	if err != nil {
		return nil, nil, err
	}
	if err := p.CheckResource("batch", b.OrganizationID, b.ProjectID, b.Environment); err != nil {
		return nil, nil, err
	}
	jobs, _, err := s.Store.FindJobs(ctx, JobFilter{Scope: Scope{OrganizationID: b.OrganizationID, ProjectID: b.ProjectID},
		Environment: b.Environment, BatchID: b.ID, Page: Page{Limit: MaxBatchSize}})
	return b, jobs, err
}

// BatchItemView is one member of a batch.
type BatchItemView struct {
	FileID string     `json:"file_id"`
	JobID  string     `json:"job_id"`
	State  string     `json:"state"`
	Error  *ErrorView `json:"error"`
}

// BatchView is the batch object.
type BatchView struct {
	ID               string          `json:"id"`
	Object           string          `json:"object"`
	CreatedAt        time.Time       `json:"created_at"`
	ProjectID        string          `json:"project_id"`
	Operation        *string         `json:"operation"`
	Preset           *string         `json:"preset"`
	Options          json.RawMessage `json:"options"`
	State            string          `json:"state"`
	Counts           map[string]int  `json:"counts"`
	CreditsEstimated int64           `json:"credits_estimated"`
	CreditsCharged   int64           `json:"credits_charged"`
	Items            []BatchItemView `json:"items"`
}

// AdmittedView is the representation of a batch just admitted, from its members in the
// order the request listed their files (View takes them newest first, as lists are).
func (b *Batch) AdmittedView(members []*Job) BatchView {
	newestFirst := slices.Clone(members)
	slices.Reverse(newestFirst)
	return b.View(newestFirst)
}

// View returns the batch's representation from its members, newest first.
func (b *Batch) View(members []*Job) BatchView {
	v := BatchView{ID: b.ID, Object: "batch", CreatedAt: b.CreatedAt, ProjectID: b.ProjectID, Operation: nullable(b.Operation),
		Preset: nullable(b.Preset), Options: b.Options, State: "completed", Counts: map[string]int{},
		CreditsEstimated: b.CreditsEstimated, Items: make([]BatchItemView, 0, len(members))}
	for _, st := range JobStates {
		v.Counts[st] = 0
	}
	for i := len(members) - 1; i >= 0; i-- { // members come newest first
		j := members[i]
		v.Counts[j.State]++
		v.CreditsCharged += j.CreditsCharged
		if !j.Terminal() {
			v.State = "processing"
		}
		item := BatchItemView{FileID: j.FileID, JobID: j.ID, State: j.State}
		if j.ErrorCode != "" {
			item.Error = &ErrorView{Code: j.ErrorCode, Message: j.ErrorMessage}
		}
		v.Items = append(v.Items, item)
	}
	if len(v.Options) == 0 {
		v.Options = json.RawMessage("{}")
	}
	return v
}
