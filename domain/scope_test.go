package domain_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

// TestEveryCallChecksItsScope: every service call a door makes for a principal refuses
// a key lacking the call's scope, with the scope named, whatever the door: no door's
// route table is what keeps a key out.
func TestEveryCallChecksItsScope(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		e := newEnv(t, s)
		file := e.readyFile(t, e.p)
		ep, err := e.svc.Webhooks.CreateEndpoint(ctx, e.p, hook("https://example.com/scope"))
		require.NoError(t, err)
		member := e.person("member@example.com", domain.RoleDeveloper)
		const (
			jobID      = "job_01ARZ3NDEKTSV4RRFFQ69G5FAV"
			batchID    = "bat_01ARZ3NDEKTSV4RRFFQ69G5FAV"
			uploadID   = "upl_01ARZ3NDEKTSV4RRFFQ69G5FAV"
			eventID    = "evt_01ARZ3NDEKTSV4RRFFQ69G5FAV"
			deliveryID = "dlv_01ARZ3NDEKTSV4RRFFQ69G5FAV"
		)
		do := func(req domain.Request) func(p *domain.Principal) error {
			return func(p *domain.Principal) error {
				_, err := e.svc.Do(ctx, p, call("k-"+req.Action(), "req_1"), req)
				return err
			}
		}
		calls := map[string]map[string]func(p *domain.Principal) error{
			domain.ScopeFilesRead: {
				"GetFile": func(p *domain.Principal) error { _, err := e.svc.Files.GetFile(ctx, p, file); return err },
				"ListFiles": func(p *domain.Principal) error {
					_, err := e.svc.Files.ListFiles(ctx, p, "", domain.Page{})
					return err
				},
				"History": func(p *domain.Principal) error { _, err := e.svc.Files.History(ctx, p, file); return err },
				"FindFilesByIDs": func(p *domain.Principal) error {
					_, err := e.svc.Files.FindFilesByIDs(ctx, p, []string{file})
					return err
				},
				"MintDownloadURL": func(p *domain.Principal) error {
					_, err := e.svc.Files.MintDownloadURL(ctx, p, file, "", 0)
					return err
				},
				"GetUpload":   func(p *domain.Principal) error { _, err := e.svc.Uploads.GetUpload(ctx, p, uploadID); return err },
				"DownloadURL": do(domain.DownloadURLRequest{FileID: file}),
			},
			domain.ScopeFilesWrite: {
				"CompleteFile": func(p *domain.Principal) error { _, err := e.svc.Files.CompleteFile(ctx, p, file); return err },
				"DeleteFile":   func(p *domain.Principal) error { return e.svc.Files.DeleteFile(ctx, p, file) },
				"CreateUpload": func(p *domain.Principal) error {
					_, err := e.svc.Uploads.CreateUpload(ctx, p, domain.NewUpload{Filename: "a.txt", ByteSize: 1})
					return err
				},
				"RemintParts": func(p *domain.Principal) error { _, err := e.svc.Uploads.RemintParts(ctx, p, uploadID); return err },
				"CompleteParts": func(p *domain.Principal) error {
					_, err := e.svc.Uploads.CompleteParts(ctx, p, uploadID, []domain.PartETag{{PartNumber: 1, ETag: "x"}})
					return err
				},
				"AbortUpload":          func(p *domain.Principal) error { return e.svc.Uploads.AbortUpload(ctx, p, uploadID) },
				"UploadRequest":        do(domain.UploadRequest{Filename: "a.txt"}),
				"CompleteFileRequest":  do(domain.CompleteFileRequest{FileID: file}),
				"RemintPartsRequest":   do(domain.RemintPartsRequest{UploadID: uploadID}),
				"CompletePartsRequest": do(domain.CompletePartsRequest{UploadID: uploadID}),
				"AbortUploadRequest":   do(domain.AbortUploadRequest{UploadID: uploadID}),
			},
			domain.ScopeJobsRead: {
				"EstimateJob": func(p *domain.Principal) error {
					_, err := e.svc.Jobs.EstimateJob(ctx, p, domain.EstimateRequest{FileIDs: []string{file}, Operation: "inspect"})
					return err
				},
				"FindJob":  func(p *domain.Principal) error { _, err := e.svc.Jobs.FindJob(ctx, p, jobID); return err },
				"ListJobs": func(p *domain.Principal) error { _, err := e.svc.Jobs.ListJobs(ctx, p, domain.JobQuery{}); return err },
				"ListJobArtifacts": func(p *domain.Principal) error {
					_, err := e.svc.Jobs.ListJobArtifacts(ctx, p, jobID, domain.Page{})
					return err
				},
				"FindBatch": func(p *domain.Principal) error { _, _, err := e.svc.Jobs.FindBatch(ctx, p, batchID); return err },
			},
			domain.ScopeJobsWrite: {
				"CreateJob": func(p *domain.Principal) error {
					_, err := e.svc.Jobs.CreateJob(ctx, p, domain.JobRequest{FileID: file, Operation: "inspect"})
					return err
				},
				"CreateBatch": func(p *domain.Principal) error {
					_, _, err := e.svc.Jobs.CreateBatch(ctx, p, domain.BatchRequest{FileIDs: []string{file}, Operation: "inspect"})
					return err
				},
				"CancelJob":        func(p *domain.Principal) error { _, err := e.svc.Jobs.CancelJob(ctx, p, jobID); return err },
				"JobRequest":       do(domain.JobRequest{FileID: file, Operation: "inspect"}),
				"BatchRequest":     do(domain.BatchRequest{FileIDs: []string{file}, Operation: "inspect"}),
				"CancelJobRequest": do(domain.CancelJobRequest{JobID: jobID}),
			},
			domain.ScopeWebhooksRead: {
				"FindEndpoint": func(p *domain.Principal) error { _, err := e.svc.Webhooks.FindEndpoint(ctx, p, ep.ID); return err },
				"ListEndpoints": func(p *domain.Principal) error {
					_, err := e.svc.Webhooks.ListEndpoints(ctx, p, "", domain.Page{})
					return err
				},
				"ListDeliveries": func(p *domain.Principal) error {
					_, err := e.svc.Webhooks.ListDeliveries(ctx, p, ep.ID, domain.Page{})
					return err
				},
				"ListEvents": func(p *domain.Principal) error {
					_, err := e.svc.Webhooks.ListEvents(ctx, p, domain.EventQuery{})
					return err
				},
				"FindEvent": func(p *domain.Principal) error { _, err := e.svc.Webhooks.FindEvent(ctx, p, eventID); return err },
				"AuthorizeEventStream": func(p *domain.Principal) error {
					_, _, err := e.svc.Webhooks.AuthorizeEventStream(ctx, p, "", nil)
					return err
				},
			},
			domain.ScopeWebhooksWrite: {
				"CreateEndpoint": func(p *domain.Principal) error {
					_, err := e.svc.Webhooks.CreateEndpoint(ctx, p, hook("https://example.com/other"))
					return err
				},
				"DeleteEndpoint": func(p *domain.Principal) error { return e.svc.Webhooks.DeleteEndpoint(ctx, p, ep.ID) },
				"SendTest":       func(p *domain.Principal) error { _, _, err := e.svc.Webhooks.SendTest(ctx, p, ep.ID); return err },
				"SetEndpointEnabled": func(p *domain.Principal) error {
					_, err := e.svc.Webhooks.SetEndpointEnabled(ctx, p, ep.ID, false)
					return err
				},
				"RotateSecret": func(p *domain.Principal) error { _, err := e.svc.Webhooks.RotateSecret(ctx, p, ep.ID); return err },
				"RetryDelivery": func(p *domain.Principal) error {
					_, err := e.svc.Webhooks.RetryDelivery(ctx, p, ep.ID, deliveryID)
					return err
				},
				"NewWebhookEndpoint":   do(hook("https://example.com/other")),
				"WebhookTestRequest":   do(domain.WebhookTestRequest{EndpointID: ep.ID}),
				"RotateSecretRequest":  do(domain.RotateSecretRequest{EndpointID: ep.ID}),
				"RetryDeliveryRequest": do(domain.RetryDeliveryRequest{EndpointID: ep.ID, DeliveryID: deliveryID}),
			},
			domain.ScopeUsageRead: {
				"GetUsage": func(p *domain.Principal) error { _, err := e.svc.Usage.GetUsage(ctx, p, ""); return err },
				"GetUsageSeries": func(p *domain.Principal) error {
					_, err := e.svc.Usage.GetUsageSeries(ctx, p, "", "2026-01-01", "2026-01-31")
					return err
				},
			},
			domain.ScopeManage: {
				"CreateProjectAs": func(p *domain.Principal) error {
					_, err := e.svc.Organizations.CreateProjectAs(ctx, p, "another", 0)
					return err
				},
				"UpdateProject": func(p *domain.Principal) error {
					_, err := e.svc.Organizations.UpdateProject(ctx, p, e.org.Project.ID, domain.ProjectChange{})
					return err
				},
				"CreateKeyAs": func(p *domain.Principal) error {
					_, _, err := e.svc.Keys.CreateKeyAs(ctx, p, domain.NewKey{Name: "k", Scopes: []string{domain.ScopeFilesRead}}, 100)
					return err
				},
				"ListKeysAs": func(p *domain.Principal) error {
					_, err := e.svc.Keys.ListKeysAs(ctx, p, "", domain.Page{})
					return err
				},
				"RevokeKeyAs": func(p *domain.Principal) error {
					_, err := e.svc.Keys.RevokeKeyAs(ctx, p, e.org.TestKey.ID)
					return err
				},
				"ListMembers": func(p *domain.Principal) error { _, err := e.svc.People.ListMembers(ctx, p); return err },
				"Invite": func(p *domain.Principal) error {
					_, _, err := e.svc.People.Invite(ctx, p, "someone@example.com", domain.RoleViewer)
					return err
				},
				"ListInvitations": func(p *domain.Principal) error { _, err := e.svc.People.ListInvitations(ctx, p); return err },
				"RevokeInvitation": func(p *domain.Principal) error {
					_, err := e.svc.People.RevokeInvitation(ctx, p, "inv_01ARZ3NDEKTSV4RRFFQ69G5FAV")
					return err
				},
				"RemoveMember": func(p *domain.Principal) error {
					_, err := e.svc.People.RemoveMember(ctx, p, member.Membership.ID)
					return err
				},
			},
			domain.ScopeOrganization: {
				"ChangeRole": func(p *domain.Principal) error {
					_, err := e.svc.People.ChangeRole(ctx, p, member.Membership.ID, domain.RoleAdmin)
					return err
				},
			},
		}
		for _, scope := range domain.AllScopes {
			require.NotEmpty(t, calls[scope], "a call of every scope is tried")
			lacking := e.key(func(k *domain.NewKey) {
				k.Scopes = slices.DeleteFunc(slices.Clone(domain.AllScopes), func(s string) bool { return s == scope })
			})
			for name, call := range calls[scope] {
				t.Run(scope+"/"+name, func(t *testing.T) {
					err := requireCode(t, call(lacking), domain.CodeInsufficientScope)
					require.Equal(t, map[string]any{"required_scope": scope}, err.Details)
				})
			}
		}
	})
}
