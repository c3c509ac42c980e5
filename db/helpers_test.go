package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/domain"
)

// now is the current time as the database keeps it: UTC, microseconds.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func ptr[T any](v T) *T { return &v }

// tenants is two organizations: org with projects prj and prj2, and other with oprj, for
// checking that nothing leaks across tenants.
type tenants struct {
	org, other      *domain.Organization
	prj, prj2, oprj *domain.Project
}

func setupTenants(t *testing.T, s *db.Store) tenants {
	t.Helper()
	var tn tenants
	tn.org = createOrg(t, s, "org-a")
	tn.other = createOrg(t, s, "org-b")
	tn.prj = createProject(t, s, tn.org.ID, "main")
	tn.prj2 = createProject(t, s, tn.org.ID, "second")
	tn.oprj = createProject(t, s, tn.other.ID, "main")
	return tn
}

func createOrg(t *testing.T, s *db.Store, name string) *domain.Organization {
	t.Helper()
	org := &domain.Organization{ID: domain.NewID(domain.PrefixOrganization), Name: name, Status: domain.OrgActive, CreatedAt: now()}
	require.NoError(t, s.CreateOrganization(context.Background(), org))
	return org
}

func createProject(t *testing.T, s *db.Store, orgID, name string) *domain.Project {
	t.Helper()
	p := &domain.Project{ID: domain.NewID(domain.PrefixProject), OrganizationID: orgID, Name: name, CreatedAt: now()}
	require.NoError(t, s.CreateProject(context.Background(), p))
	return p
}

func newJob(p *domain.Project, env domain.Environment) *domain.Job {
	return &domain.Job{
		ID: domain.NewID(domain.PrefixJob), OrganizationID: p.OrganizationID, ProjectID: p.ID, Environment: env,
		FileID: domain.NewID(domain.PrefixFile), APIKeyID: domain.NewID(domain.PrefixAPIKey), Operation: "image.resize",
		Options: json.RawMessage(`{"width":100}`), State: domain.JobQueued, CreditsReserved: 3, CreatedAt: now(),
	}
}

func newFile(p *domain.Project, env domain.Environment) *domain.File {
	return &domain.File{
		ID: domain.NewID(domain.PrefixFile), OrganizationID: p.OrganizationID, ProjectID: p.ID, Environment: env,
		UploadID: domain.NewID(domain.PrefixUpload), Filename: "a.png", Status: domain.FileReady, ByteSize: 42,
		DeclaredMIMEType: "image/png", DetectedExt: "png", DetectedMIMEType: "image/png",
		SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", StorageKey: "files/x",
		CreatedAt: now(), ReadyAt: ptr(now()),
	}
}

func newEndpoint(p *domain.Project, env domain.Environment) *domain.WebhookEndpoint {
	return &domain.WebhookEndpoint{
		ID: domain.NewID(domain.PrefixWebhookEndpoint), OrganizationID: p.OrganizationID, ProjectID: p.ID,
		Environment: env, URL: "https://example.com/hook", EnabledEvents: []string{domain.EventJobSucceeded},
		Secret: "whsec_abc", Status: domain.EndpointEnabled, CreatedAt: now(),
	}
}

// requireJSONField compares a JSON column semantically (jsonb rewrites spacing and key
// order), then copies want's bytes into got so the structs can be compared whole.
func requireJSONField(t *testing.T, want json.RawMessage, got *json.RawMessage) {
	t.Helper()
	require.JSONEq(t, string(want), string(*got))
	*got = want
}

// ids returns the ids of items, for comparing lists.
func ids[T any](items []*T, id func(*T) string) []string {
	out := make([]string, len(items))
	for i, v := range items {
		out[i] = id(v)
	}
	return out
}

func jobID(j *domain.Job) string                  { return j.ID }
func fileID(f *domain.File) string                { return f.ID }
func endpointID(e *domain.WebhookEndpoint) string { return e.ID }
func eventID(e *domain.Event) string              { return e.ID }
func uploadID(u *domain.Upload) string            { return u.ID }
func artifactID(a *domain.Artifact) string        { return a.ID }
func keyID(k *domain.APIKey) string               { return k.ID }
func label(i int) string                          { return fmt.Sprintf("item-%03d", i) }
