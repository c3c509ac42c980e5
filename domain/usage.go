package domain

import (
	"context"
	"strings"
	"time"
)

// UsagePorts is what Usage uses of the Store: the credit account and its sums, the
// files whose egress it counts, and the project a report is about.
type UsagePorts interface {
	CreditStore
	FileStore
	TenantStore
}

// Usage reports a project's consumption for the current calendar month.
type Usage struct {
	Store UsagePorts
	Clock Clock
	// EgressAtServe is true when the storage backend reports the bytes it serves (the
	// local storage host); otherwise a download URL counts the object's size when minted.
	EgressAtServe bool
}

// UsageView is the usage object.
type UsageView struct {
	Object    string `json:"object"`
	ProjectID string `json:"project_id"`
	Period    struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	} `json:"period"`
	Credits struct {
		Balance  int64 `json:"balance"`
		Reserved int64 `json:"reserved"`
		Used     int64 `json:"used"`
	} `json:"credits"`
	Storage struct {
		Bytes int64 `json:"bytes"`
		Files int   `json:"files"`
	} `json:"storage"`
	Egress struct {
		Bytes int64 `json:"bytes"`
	} `json:"egress"`
}

// GetUsage reports a project's usage: credits balance of the organization's account in
// the key's environment, the credits the project holds reserved now and was charged
// this period, the bytes and files it stores, and the bytes served from it this period.
// Codes: insufficient_scope, invalid_request/not_found/key_restricted (project_id).
func (s *Usage) GetUsage(ctx context.Context, p *Principal, projectID string) (*UsageView, error) {
	if err := p.RequireScope(ScopeUsageRead); err != nil {
		return nil, err
	}
	if projectID != "" && !ValidID(PrefixProject, projectID) {
		return nil, InvalidParam("project_id", "project_id must be a project id (prj_ followed by 26 characters)")
	}
	prj, err := p.ResolveProject(ctx, s.Store, projectID)
	if err != nil {
		return nil, err
	}
	env, now := p.Environment(), s.Clock.Now()
	v := &UsageView{Object: "usage", ProjectID: prj.ID}
	v.Period.Start = MonthStart(now)
	v.Period.End = v.Period.Start.AddDate(0, 1, 0)
	acct, err := s.Store.FindCreditAccount(ctx, p.Organization.ID, env)
	if err != nil {
		return nil, err
	}
	v.Credits.Balance = acct.Balance
	if v.Credits.Reserved, v.Credits.Used, err = s.Store.SumProjectCredits(ctx, acct.ID, prj.ID, env, v.Period.Start); err != nil {
		return nil, err
	}
	if v.Storage.Bytes, v.Storage.Files, err = s.Store.SumStoredFiles(ctx, prj.ID, env); err != nil {
		return nil, err
	}
	if v.Egress.Bytes, err = s.Store.SumEgress(ctx, prj.ID, env, now); err != nil {
		return nil, err
	}
	return v, nil
}

// RecordEgress counts bytes served for an object key. Keys begin with the organization
// and project ids (see blobKey), so the storage host needs no lookup to attribute them.
func (s *Usage) RecordEgress(ctx context.Context, key string, n int64) error {
	parts := strings.SplitN(key, "/", 4)
	if len(parts) < 3 || !ValidID(PrefixOrganization, parts[0]) || !ValidID(PrefixProject, parts[1]) || n <= 0 {
		return nil
	}
	f, err := s.Store.FindFileByID(ctx, parts[2])
	if err != nil {
		return err
	}
	return s.Store.AddEgress(ctx, parts[0], parts[1], f.Environment, s.Clock.Now(), n)
}

// EgressMeter is implemented by storage backends that see the bytes they serve and
// report them (the local storage host); for the others a download URL counts the
// object's size when it is minted.
type EgressMeter interface {
	MetersEgress() bool
}
