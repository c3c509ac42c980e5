package domain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Management of an organization through either principal: a console session whose
// role holds the scope, or a key that lists it. Projects, keys and members need the
// manage scope.

// ListProjects lists the organization's projects the principal may act on, oldest
// first. Any principal may: its project choices are these.
func (o *Organizations) ListProjects(ctx context.Context, p *Principal) ([]*Project, error) {
	all, err := o.Store.FindProjects(ctx, p.Organization.ID, o.maxProjects())
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, prj := range all {
		if p.CheckProject(prj.ID) == nil {
			out = append(out, prj)
		}
	}
	return out, nil
}

func (o *Organizations) maxProjects() int {
	if o.Config.MaxProjects > 0 {
		return o.Config.MaxProjects
	}
	return DefaultConfig().MaxProjects
}

// ProjectChange is what UpdateProject changes; nil fields stay.
type ProjectChange struct {
	Name             *string
	ConcurrencyLimit *int
}

func checkProjectName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return "", InvalidParam("name", "a project name of 1 to 200 characters is required")
	}
	return name, nil
}

func checkConcurrencyLimit(limit int) error {
	if limit < 0 || limit > 100000 {
		return InvalidParam("concurrencyLimit", "a concurrency limit is 0 (the deployment default) to 100000")
	}
	return nil
}

// CreateProjectAs adds a project to the principal's organization. Codes:
// insufficient_scope, invalid_request, conflict (the name is taken, or too many).
func (o *Organizations) CreateProjectAs(ctx context.Context, p *Principal, name string, limit int) (*Project, error) {
	if err := p.RequireScope(ScopeManage); err != nil {
		return nil, err
	}
	name, err := checkProjectName(name)
	if err != nil {
		return nil, err
	}
	if err := checkConcurrencyLimit(limit); err != nil {
		return nil, err
	}
	prj := &Project{ID: NewID(PrefixProject), OrganizationID: p.Organization.ID, Name: name, ConcurrencyLimit: limit, CreatedAt: o.Clock.Now()}
	err = o.inTx(ctx, func(tx OrganizationsPorts) error {
		if err := tx.LockOrganization(ctx, p.Organization.ID); err != nil {
			return err
		}
		if n, err := tx.CountProjects(ctx, p.Organization.ID); err != nil {
			return err
		} else if n >= o.maxProjects() {
			return Errorf(CodeConflict, "an organization has at most %d projects", o.maxProjects())
		}
		err := tx.CreateProject(ctx, prj)
		if errors.Is(err, ErrDuplicate) {
			return &Error{Code: CodeConflict, Message: "a project named " + name + " exists", Param: "name"}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return prj, nil
}

// UpdateProject renames a project or sets its concurrency limit (0: the deployment
// default). Codes: insufficient_scope, invalid_request, not_found, key_restricted,
// conflict (the name is taken).
func (o *Organizations) UpdateProject(ctx context.Context, p *Principal, id string, c ProjectChange) (*Project, error) {
	if err := p.RequireScope(ScopeManage); err != nil {
		return nil, err
	}
	if !ValidID(PrefixProject, id) {
		return nil, NotFound("project")
	}
	prj, err := p.ResolveProject(ctx, o.Store, id)
	if err != nil {
		return nil, err
	}
	if c.Name != nil {
		name, err := checkProjectName(*c.Name)
		if err != nil {
			return nil, err
		}
		if name != prj.Name {
			if err := o.Store.RenameProject(ctx, prj.ID, name); errors.Is(err, ErrDuplicate) {
				return nil, &Error{Code: CodeConflict, Message: "a project named " + name + " exists", Param: "name"}
			} else if err != nil {
				return nil, err
			}
		}
		prj.Name = name
	}
	if c.ConcurrencyLimit != nil {
		if err := checkConcurrencyLimit(*c.ConcurrencyLimit); err != nil {
			return nil, err
		}
		if err := o.Store.SetProjectConcurrencyLimit(ctx, prj.ID, *c.ConcurrencyLimit); err != nil {
			return nil, err
		}
		prj.ConcurrencyLimit = *c.ConcurrencyLimit
	}
	return prj, nil
}

// CreateKeyAs mints a key for the principal's organization; its secret is shown this
// once. A principal grants no more than it holds: the key's scopes are among its own,
// its projects among those it may act on, its operations among those it may run. The
// environment defaults to the principal's, the project to its own. Codes:
// insufficient_scope, invalid_request, not_found, key_restricted, operation_not_allowed,
// conflict (too many keys).
func (k *Keys) CreateKeyAs(ctx context.Context, p *Principal, nk NewKey, maxKeys int) (*APIKey, string, error) {
	if err := p.RequireScope(ScopeManage); err != nil {
		return nil, "", err
	}
	nk.OrganizationID = p.Organization.ID
	if nk.Environment == "" {
		nk.Environment = p.Environment()
	}
	name := strings.TrimSpace(nk.Name)
	if name == "" || len(name) > 200 {
		return nil, "", InvalidParam("name", "a key name of 1 to 200 characters is required")
	}
	nk.Name = name
	if len(nk.Scopes) == 0 {
		// No scopes listed means every data scope: the principal must hold them all.
		for _, sc := range DataScopes {
			if !p.HasScope(sc) {
				return nil, "", InvalidParam("scopes", "list the scopes: you may not grant %s", sc)
			}
		}
	}
	for _, sc := range nk.Scopes {
		if slices.Contains(AllScopes, sc) && !p.HasScope(sc) {
			return nil, "", &Error{Code: CodeInsufficientScope, Param: "scopes",
				Message: "a key cannot be granted " + sc + ": " + p.actor() + " does not hold it", Details: map[string]any{"required_scope": sc}}
		}
	}
	prj, err := p.ResolveProject(ctx, k.Store, nk.ProjectID)
	if err != nil {
		return nil, "", err
	}
	nk.ProjectID = prj.ID
	if len(nk.AllowedProjects) > 0 || len(p.Key.AllowedProjects) > 0 {
		if len(nk.AllowedProjects) == 0 {
			// A restricted principal mints restricted keys: no wider than its own.
			nk.AllowedProjects = slices.Clone(p.Key.AllowedProjects)
		}
		for _, ap := range nk.AllowedProjects {
			if err := p.CheckProject(ap); err != nil {
				return nil, "", &Error{Code: CodeKeyRestricted, Param: "allowedProjects", Message: p.actor() + " may not act on project " + ap}
			}
		}
	}
	if len(p.Key.AllowedOperations) > 0 {
		if len(nk.AllowedOperations) == 0 {
			nk.AllowedOperations = slices.Clone(p.Key.AllowedOperations)
		}
		for _, op := range nk.AllowedOperations {
			if err := p.RequireOperation(op); err != nil {
				return nil, "", &Error{Code: CodeOperationNotAllowed, Param: "allowedOperations", Message: p.actor() + " may not run " + op}
			}
		}
	}
	if nk.ExpiresAt != nil && !nk.ExpiresAt.After(k.Clock.Now()) {
		return nil, "", InvalidParam("expiresAt", "expiresAt must be in the future")
	}
	if n, err := k.Store.CountActiveAPIKeys(ctx, p.Organization.ID, k.Clock.Now()); err != nil {
		return nil, "", err
	} else if n >= maxKeys {
		return nil, "", Errorf(CodeConflict, "an organization has at most %d active keys: revoke one first", maxKeys)
	}
	return k.CreateKey(ctx, nk)
}

// ListKeysAs lists one page of the organization's keys (one project's when given),
// newest first, masked. Codes: insufficient_scope, invalid_request (page), not_found,
// key_restricted (project).
func (k *Keys) ListKeysAs(ctx context.Context, p *Principal, projectID string, page Page) (List[*APIKey], error) {
	if err := p.RequireScope(ScopeManage); err != nil {
		return List[*APIKey]{}, err
	}
	if err := ValidatePage(&page, PrefixAPIKey); err != nil {
		return List[*APIKey]{}, err
	}
	if projectID != "" {
		prj, err := p.ResolveProject(ctx, k.Store, projectID)
		if err != nil {
			return List[*APIKey]{}, err
		}
		projectID = prj.ID
	}
	data, more, err := k.Store.FindAPIKeyPage(ctx, APIKeyFilter{OrganizationID: p.Organization.ID, ProjectID: projectID, Page: page})
	return List[*APIKey]{Data: data, HasMore: more}, err
}

// RevokeKeyAs revokes a key of the principal's organization at once. Codes:
// insufficient_scope, not_found, key_restricted.
func (k *Keys) RevokeKeyAs(ctx context.Context, p *Principal, id string) (*APIKey, error) {
	if err := p.RequireScope(ScopeManage); err != nil {
		return nil, err
	}
	if !ValidID(PrefixAPIKey, id) {
		return nil, NotFound("key")
	}
	key, err := k.Store.FindAPIKeyByID(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && key.OrganizationID != p.Organization.ID {
		return nil, NotFound("key")
	}
	if err != nil {
		return nil, err
	}
	if err := p.CheckProject(key.ProjectID); err != nil {
		return nil, err
	}
	if err := k.RevokeKey(ctx, id); err != nil {
		return nil, err
	}
	return k.Store.FindAPIKeyByID(ctx, id)
}

// MaxUsageDays bounds a usage series.
const MaxUsageDays = 366

// UsageSeries is a project's usage per UTC day over a range, and per operation.
type UsageSeries struct {
	ProjectID  string
	From, To   time.Time // the first day, and the day after the last
	Days       []DailyUsage
	Operations []OperationUsage
}

// GetUsageSeries reports a project's usage per day from the day from through the day
// to (YYYY-MM-DD, UTC): credits charged, jobs finished, bytes of files that became
// ready, bytes served; and the credits per operation over the range. Codes:
// insufficient_scope, invalid_request, not_found, key_restricted (project).
func (s *Usage) GetUsageSeries(ctx context.Context, p *Principal, projectID, from, to string) (*UsageSeries, error) {
	if err := p.RequireScope(ScopeUsageRead); err != nil {
		return nil, err
	}
	start, err := time.Parse(time.DateOnly, from)
	if err != nil {
		return nil, InvalidParam("from", "from must be a date, YYYY-MM-DD")
	}
	last, err := time.Parse(time.DateOnly, to)
	if err != nil {
		return nil, InvalidParam("to", "to must be a date, YYYY-MM-DD")
	}
	end := last.AddDate(0, 0, 1)
	days := int(end.Sub(start) / (24 * time.Hour))
	if days < 1 {
		return nil, InvalidParam("to", "to must not be before from")
	}
	if days > MaxUsageDays {
		return nil, InvalidParam("to", "a series covers at most %d days", MaxUsageDays)
	}
	if projectID != "" && !ValidID(PrefixProject, projectID) {
		return nil, InvalidParam("projectId", "projectId must be a project id (prj_ followed by 26 characters)")
	}
	prj, err := p.ResolveProject(ctx, s.Store, projectID)
	if err != nil {
		return nil, err
	}
	acct, err := s.Store.FindCreditAccountID(ctx, p.Organization.ID, p.Environment())
	if err != nil {
		return nil, err
	}
	rows, ops, err := s.Store.FindDailyUsage(ctx, DailyUsageQuery{AccountID: acct, ProjectID: prj.ID, Environment: p.Environment(), From: start, To: end})
	if err != nil {
		return nil, err
	}
	byDay := make(map[string]DailyUsage, len(rows))
	for _, r := range rows {
		byDay[r.Day] = r
	}
	out := &UsageSeries{ProjectID: prj.ID, From: start, To: end, Days: make([]DailyUsage, 0, days), Operations: ops}
	for d := start; d.Before(end); d = d.AddDate(0, 0, 1) {
		day := d.Format(time.DateOnly)
		u := byDay[day]
		u.Day = day
		out.Days = append(out.Days, u)
	}
	return out, nil
}

// EstimateRequest asks what running an operation or preset on files would cost.
type EstimateRequest struct {
	FileIDs   []string
	Operation string
	Preset    string
	Options   json.RawMessage
}

// Estimate is the price of a job per file, as its admission would reserve it.
type Estimate struct {
	Credits int64
	// Estimated is true when a file's pages were guessed from its size: the charge
	// may then be lower.
	Estimated bool
	Files     []FileEstimate
}

// FileEstimate is one file's part of an Estimate.
type FileEstimate struct {
	FileID  string
	Pricing *Pricing
}

// EstimateJob prices an operation or preset on files as creating the jobs would, by
// the same rules (the catalog's prices, what each step reads and makes, the files the
// principal may see, the engines that run now), without creating anything. Codes:
// insufficient_scope, invalid_request, unsupported_operation, operation_not_allowed,
// not_found, environment_mismatch, key_restricted, conflict, unsupported_input,
// validation_failed, processing_unavailable.
func (s *Jobs) EstimateJob(ctx context.Context, p *Principal, r EstimateRequest) (*Estimate, error) {
	if err := p.RequireScope(ScopeJobsRead); err != nil {
		return nil, err
	}
	if len(r.FileIDs) < 1 || len(r.FileIDs) > MaxBatchSize {
		return nil, InvalidParam("fileIds", "fileIds takes 1 to %d files", MaxBatchSize)
	}
	for i, id := range r.FileIDs {
		if !ValidID(PrefixFile, id) {
			return nil, InvalidParam(fmt.Sprintf("fileIds[%d]", i), "fileIds[%d] must be a file id (file_ followed by 26 characters)", i)
		}
	}
	op, options, err := s.resolveWithOptions(p, r.Operation, r.Preset, r.Options)
	if err != nil {
		return nil, err
	}
	adm := &admission{op: op, options: options, fileIDs: r.FileIDs, param: func(i int) string { return fmt.Sprintf("fileIds[%d]", i) }}
	if err := s.authorizeFiles(ctx, p, adm); err != nil {
		return nil, err
	}
	live, err := s.liveEngines(ctx)
	if err != nil {
		return nil, err
	}
	est := &Estimate{}
	for i, id := range r.FileIDs {
		j, err := s.newJob(p, op, options, adm.facts, live, id, adm.param(i))
		if err != nil {
			return nil, err
		}
		est.Credits += j.Pricing.Credits
		est.Estimated = est.Estimated || j.Pricing.Estimated
		est.Files = append(est.Files, FileEstimate{FileID: id, Pricing: j.Pricing})
	}
	return est, nil
}

// SetEndpointEnabled enables or disables a webhook endpoint. Enabling clears why it
// was disabled; a disabled endpoint receives nothing until enabled again. Codes:
// insufficient_scope, not_found, environment_mismatch, key_restricted.
func (w *Webhooks) SetEndpointEnabled(ctx context.Context, p *Principal, id string, enabled bool) (*WebhookEndpoint, error) {
	if err := p.RequireScope(ScopeWebhooksWrite); err != nil {
		return nil, err
	}
	ep, err := w.FindEndpoint(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if enabled {
		_, err = w.Store.EnableWebhookEndpoint(ctx, ep.ID)
	} else {
		_, err = w.Store.DisableWebhookEndpoint(ctx, ep.ID, "disabled by "+disabler(p), w.Clock.Now(), nil)
	}
	if err != nil {
		return nil, err
	}
	return w.FindEndpoint(ctx, p, id)
}

// disabler names who disabled an endpoint, for its disabled reason.
func disabler(p *Principal) string {
	if p.User != nil {
		return p.User.Email
	}
	return "key " + p.Key.ID
}
