package graph_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/graph"
)

// TestEveryFieldRefusesAKeyLackingItsScope: every query and mutation refuses a key
// holding every scope but its own, naming the scope, as the REST route of the same
// action does (rest's TestEveryRouteRefusesAKeyLackingItsScope): the domain call behind
// both decides.
func TestEveryFieldRefusesAKeyLackingItsScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	st, ep, _ := b.restKey("POST", "/v1/webhook-endpoints", b.liveA, idem(), map[string]any{"url": "https://hooks.example.com/scope",
		"enabled_events": []string{"job.succeeded"}})
	require.Equal(t, 201, st, ep)
	const (
		file       = "file_01ARZ3NDEKTSV4RRFFQ69G5FAV"
		upload     = "upl_01ARZ3NDEKTSV4RRFFQ69G5FAV"
		job        = "job_01ARZ3NDEKTSV4RRFFQ69G5FAV"
		batch      = "bat_01ARZ3NDEKTSV4RRFFQ69G5FAV"
		event      = "evt_01ARZ3NDEKTSV4RRFFQ69G5FAV"
		delivery   = "dlv_01ARZ3NDEKTSV4RRFFQ69G5FAV"
		invitation = "inv_01ARZ3NDEKTSV4RRFFQ69G5FAV"
		member     = "mem_01ARZ3NDEKTSV4RRFFQ69G5FAV"
	)
	endpoint := ep["id"].(string)
	fields := map[string]struct{ scope, query string }{
		"Query.file":             {domain.ScopeFilesRead, `{ file(id: "` + file + `") { id } }`},
		"Query.files":            {domain.ScopeFilesRead, `{ files { nodes { id } } }`},
		"Query.upload":           {domain.ScopeFilesRead, `{ upload(id: "` + upload + `") { id } }`},
		"Query.job":              {domain.ScopeJobsRead, `{ job(id: "` + job + `") { id } }`},
		"Query.jobs":             {domain.ScopeJobsRead, `{ jobs { nodes { id } } }`},
		"Query.batch":            {domain.ScopeJobsRead, `{ batch(id: "` + batch + `") { id } }`},
		"Query.usage":            {domain.ScopeUsageRead, `{ usage { period { start } } }`},
		"Query.webhookEndpoint":  {domain.ScopeWebhooksRead, `{ webhookEndpoint(id: "` + endpoint + `") { id } }`},
		"Query.webhookEndpoints": {domain.ScopeWebhooksRead, `{ webhookEndpoints { nodes { id } } }`},
		"Query.events":           {domain.ScopeWebhooksRead, `{ events { nodes { id } } }`},
		"Query.event":            {domain.ScopeWebhooksRead, `{ event(id: "` + event + `") { id } }`},

		"Mutation.createUpload":      {domain.ScopeFilesWrite, `mutation { createUpload(input: {filename: "a.txt", byteSize: 1}) { upload { id } } }`},
		"Mutation.completeFile":      {domain.ScopeFilesWrite, `mutation { completeFile(id: "` + file + `") { id } }`},
		"Mutation.completeParts":     {domain.ScopeFilesWrite, `mutation { completeParts(uploadId: "` + upload + `", parts: [{partNumber: 1, etag: "x"}]) { id } }`},
		"Mutation.abortUpload":       {domain.ScopeFilesWrite, `mutation { abortUpload(uploadId: "` + upload + `") { id } }`},
		"Mutation.remintParts":       {domain.ScopeFilesWrite, `mutation { remintParts(uploadId: "` + upload + `") { id } }`},
		"Mutation.deleteFile":        {domain.ScopeFilesWrite, `mutation { deleteFile(id: "` + file + `") { id } }`},
		"Mutation.createDownloadUrl": {domain.ScopeFilesRead, `mutation { createDownloadUrl(fileId: "` + file + `") { url } }`},
		"Mutation.createJob":         {domain.ScopeJobsWrite, `mutation { createJob(input: {fileId: "` + file + `", operation: "inspect"}) { id } }`},
		"Mutation.cancelJob":         {domain.ScopeJobsWrite, `mutation { cancelJob(id: "` + job + `") { id } }`},
		"Mutation.createBatch":       {domain.ScopeJobsWrite, `mutation { createBatch(input: {fileIds: ["` + file + `"], operation: "inspect"}) { id } }`},
		"Mutation.createWebhookEndpoint": {domain.ScopeWebhooksWrite,
			`mutation { createWebhookEndpoint(input: {url: "https://hooks.example.com/x", enabledEvents: ["job.succeeded"]}) { secret } }`},
		"Mutation.deleteWebhookEndpoint": {domain.ScopeWebhooksWrite, `mutation { deleteWebhookEndpoint(id: "` + endpoint + `") { id } }`},
		"Mutation.testWebhookEndpoint":   {domain.ScopeWebhooksWrite, `mutation { testWebhookEndpoint(id: "` + endpoint + `") { id } }`},
		"Mutation.rotateWebhookSecret":   {domain.ScopeWebhooksWrite, `mutation { rotateWebhookSecret(id: "` + endpoint + `") { secret } }`},
		"Mutation.retryDelivery": {domain.ScopeWebhooksWrite,
			`mutation { retryDelivery(webhookEndpointId: "` + endpoint + `", deliveryId: "` + delivery + `") { id } }`},
		"Mutation.sendTestEvent":          {domain.ScopeWebhooksWrite, `mutation { sendTestEvent(webhookEndpointId: "` + endpoint + `") { id } }`},
		"Mutation.enableWebhookEndpoint":  {domain.ScopeWebhooksWrite, `mutation { enableWebhookEndpoint(id: "` + endpoint + `") { id } }`},
		"Mutation.disableWebhookEndpoint": {domain.ScopeWebhooksWrite, `mutation { disableWebhookEndpoint(id: "` + endpoint + `") { id } }`},

		"Query.usageSeries": {domain.ScopeUsageRead, `{ usageSeries(from: "2026-01-01", to: "2026-01-02") { projectId } }`},
		"Query.estimateJob": {domain.ScopeJobsRead, `{ estimateJob(input: {fileIds: ["` + file + `"], operation: "inspect"}) { credits } }`},
		"Query.apiKeys":     {domain.ScopeManage, `{ apiKeys { nodes { id } } }`},
		"Query.members":     {domain.ScopeManage, `{ members { id } }`},
		"Query.invitations": {domain.ScopeManage, `{ invitations { id } }`},

		"Mutation.createProject":    {domain.ScopeManage, `mutation { createProject(input: {name: "x"}) { id } }`},
		"Mutation.updateProject":    {domain.ScopeManage, `mutation { updateProject(id: "` + b.orgA.Project.ID + `", input: {name: "x"}) { id } }`},
		"Mutation.createApiKey":     {domain.ScopeManage, `mutation { createApiKey(input: {name: "x", scopes: ["files:read"]}) { secret } }`},
		"Mutation.revokeApiKey":     {domain.ScopeManage, `mutation { revokeApiKey(id: "` + b.orgA.TestKey.ID + `") { id } }`},
		"Mutation.createInvitation": {domain.ScopeManage, `mutation { createInvitation(email: "a@example.com", role: viewer) { token } }`},
		"Mutation.revokeInvitation": {domain.ScopeManage, `mutation { revokeInvitation(id: "` + invitation + `") { id } }`},
		"Mutation.removeMember":     {domain.ScopeManage, `mutation { removeMember(id: "` + member + `") { id } }`},
		"Mutation.updateMember":     {domain.ScopeOrganization, `mutation { updateMember(id: "` + member + `", role: admin) { id } }`},
	}
	// Open to every key: who it is, what it may run, and its projects. Answered without
	// credentials: signing in, and an invitation's preview. A person's own account is a
	// session's alone (a key is refused it as no session: forbidden).
	unscoped := []string{"Query.viewer", "Query.operations", "Query.projects",
		"Query.invitation", "Mutation.signIn", "Mutation.setPassword", "Mutation.acceptInvitation",
		"Query.sessions", "Mutation.signOut", "Mutation.signOutEverywhere", "Mutation.revokeSession", "Mutation.changePassword"}
	lacking := map[string]string{}
	for _, scope := range domain.AllScopes {
		lacking[scope] = b.key(func(k *domain.NewKey) {
			k.Scopes = slices.DeleteFunc(slices.Clone(domain.AllScopes), func(s string) bool { return s == scope })
		})
	}
	schema := graph.NewExecutableSchema(graph.Config{}).Schema()
	seen := 0
	for _, root := range []string{"Query", "Mutation"} {
		for _, f := range schema.Types[root].Fields {
			name := root + "." + f.Name
			if len(f.Name) > 1 && f.Name[:2] == "__" || slices.Contains(unscoped, name) {
				continue
			}
			c, ok := fields[name]
			require.True(t, ok, "%s: which scope does it need?", name)
			seen++
			t.Run(name, func(t *testing.T) {
				r := b.gql(lacking[c.scope], c.query, nil)
				require.Equal(t, domain.CodeInsufficientScope, r.code(t), string(r.raw))
				require.Equal(t, map[string]any{"required_scope": c.scope}, r.Errors[0].Extensions["details"])
				require.Nil(t, r.Data[f.Name], "nothing is answered with the refusal")
			})
		}
	}
	require.Equal(t, len(fields), seen, "every field the table names is in the schema")
}
