package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/filemill/filemill/client"
	"github.com/filemill/filemill/client/api"
)

// listCommand makes the list of a resource, run by `filemill NOUN` and `filemill NOUN
// list`; filters adds the list's own flags and fills its parameters.
func listCommand[T any](g *globals, use, short string, page func(c *cobra.Command) pageFunc, cols []column[T], paged bool, setup func(*cobra.Command)) *cobra.Command {
	var o listOptions
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			return printList(c, g, cl, page(c), cols, o)
		},
	}
	o.register(cmd, paged)
	if setup != nil {
		setup(cmd)
	}
	return cmd
}

// group is a resource's command: its subcommands, and the list when run alone
// (`filemill files` is `filemill files list`).
func group(use, short string, list *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short}
	if list != nil {
		// The group runs the list with the list's flags, as its own.
		cmd.Flags().AddFlagSet(list.Flags())
		cmd.Args = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef(c.CommandPath(), "unknown command %q for %q", args[0], c.CommandPath())
			}
			return nil
		}
		cmd.RunE = list.RunE
		subs = append([]*cobra.Command{list}, subs...)
	}
	cmd.AddCommand(subs...)
	return cmd
}

// showCommand shows one resource by id.
func showCommand[T any](g *globals, use, short string, get func(ctx context.Context, cl *client.Client, id string) (*http.Response, error),
	details func(T) []field, more func(io.Writer, T) error) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(1, "one id"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			resp, err := get(c.Context(), cl, args[0])
			return printOne(c, resp, err, asJSON, details, more)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	return cmd
}

// --- files

var fileColumns = []column[api.File]{
	{"ID", func(f api.File) string { return f.Id }},
	{"FILENAME", func(f api.File) string { return truncate(f.Filename, 48) }},
	{"STATUS", func(f api.File) string { return string(f.Status) }},
	{"SIZE", func(f api.File) string { return sizePtr(f.ByteSize) }},
	{"FORMAT", func(f api.File) string {
		if f.DetectedFormat == nil {
			return ""
		}
		return f.DetectedFormat.Extension
	}},
	{"CREATED", func(f api.File) string { return when(f.CreatedAt) }},
}

func fileDetails(f api.File) []field {
	format := ""
	if f.DetectedFormat != nil {
		format = f.DetectedFormat.Extension + " (" + f.DetectedFormat.MimeType + ")"
	}
	fs := []field{{"id", f.Id}, {"filename", f.Filename}, {"status", string(f.Status)}, {"size", sizePtr(f.ByteSize)},
		{"format", format}, {"pages", num(f.Pages)}, {"sha256", str(f.Sha256)}, {"duplicate of", str(f.DuplicateOf)},
		{"project", f.ProjectId}, {"created", when(f.CreatedAt)}, {"expires", whenPtr(f.ExpiresAt)}}
	for _, fd := range f.Findings {
		fs = append(fs, field{"finding", fd.Code + ": " + fd.Message})
	}
	return fs
}

func artifactTable(w io.Writer, arts []api.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := newTable(w, []column[api.Artifact]{
		{"ARTIFACT", func(a api.Artifact) string { return a.Id }},
		{"NAME", func(a api.Artifact) string { return a.Name }},
		{"SIZE", func(a api.Artifact) string { return humanBytes(int64(a.ByteSize)) }},
		{"TYPE", func(a api.Artifact) string { return a.MimeType }},
		{"JOB", func(a api.Artifact) string { return a.JobId }},
	})
	for _, a := range arts {
		t.row(a)
	}
	return t.flush()
}

func filesCommand(g *globals) *cobra.Command {
	var project string
	list := listCommand(g, "list", "list files, newest first", func(*cobra.Command) pageFunc {
		return func(ctx context.Context, cl *client.Client, cursor *string, limit *int) (*http.Response, error) {
			p := &api.ListFilesParams{StartingAfter: cursor, Limit: limit}
			if project != "" {
				p.ProjectId = &project
			}
			return cl.API().ListFiles(ctx, p)
		}
	}, fileColumns, true, func(c *cobra.Command) {
		c.Flags().StringVar(&project, "project", "", "only this project's files")
	})
	show := showCommand(g, "show FILE_ID", "show a file with its artifacts",
		func(ctx context.Context, cl *client.Client, id string) (*http.Response, error) {
			return cl.API().GetFile(ctx, id)
		},
		fileDetails, func(w io.Writer, f api.File) error { return artifactTable(w, f.Artifacts) })
	del := &cobra.Command{
		Use:   "delete FILE_ID",
		Short: "delete a file and its artifacts",
		Args:  exactArgs(1, "one file id"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.DeleteFile(c.Context(), args[0]); err != nil {
				return err
			}
			g.note(c, "file %s deleted", args[0])
			return nil
		},
	}
	return group("files", "list, show and delete files", list, show, del)
}

// --- jobs

func jobWhat(op *string, preset *api.JobPreset) string {
	if preset != nil {
		return "preset:" + string(*preset)
	}
	return str(op)
}

var jobColumns = []column[api.Job]{
	{"ID", func(j api.Job) string { return j.Id }},
	{"WHAT", func(j api.Job) string { return jobWhat(j.Operation, j.Preset) }},
	{"STATE", func(j api.Job) string { return string(j.State) }},
	{"PROGRESS", func(j api.Job) string { return fmt.Sprintf("%d%%", j.Progress) }},
	{"FILE", func(j api.Job) string { return j.FileId }},
	{"ARTIFACTS", func(j api.Job) string { return fmt.Sprint(j.ArtifactCount) }},
	{"CREATED", func(j api.Job) string { return when(j.CreatedAt) }},
}

func jobDetails(j api.Job) []field {
	errText := ""
	if j.Error != nil {
		errText = string(j.Error.Code) + ": " + j.Error.Message
	}
	opts := ""
	if len(j.Options) > 0 {
		raw, _ := json.Marshal(j.Options)
		opts = string(raw)
	}
	return []field{{"id", j.Id}, {"what", jobWhat(j.Operation, j.Preset)}, {"options", opts}, {"state", string(j.State)},
		{"progress", fmt.Sprintf("%d%%", j.Progress)}, {"error", errText}, {"file", j.FileId}, {"batch", str(j.BatchId)},
		{"attempts", fmt.Sprint(j.Attempts)},
		{"credits", fmt.Sprintf("%d reserved, %d charged", j.CreditsReserved, j.CreditsCharged)},
		{"artifacts", fmt.Sprint(j.ArtifactCount)},
		{"created", when(j.CreatedAt)}, {"started", whenPtr(j.StartedAt)}, {"finished", whenPtr(j.FinishedAt)}}
}

func jobsCommand(g *globals) *cobra.Command {
	var state, file, batch, project string
	list := listCommand(g, "list", "list jobs, newest first", func(*cobra.Command) pageFunc {
		return func(ctx context.Context, cl *client.Client, cursor *string, limit *int) (*http.Response, error) {
			p := &api.ListJobsParams{StartingAfter: cursor, Limit: limit}
			if state != "" {
				p.State = client.Ptr(api.JobState(state))
			}
			if file != "" {
				p.FileId = &file
			}
			if batch != "" {
				p.BatchId = &batch
			}
			if project != "" {
				p.ProjectId = &project
			}
			return cl.API().ListJobs(ctx, p)
		}
	}, jobColumns, true, func(c *cobra.Command) {
		c.Flags().StringVar(&state, "state", "", "only jobs in this state (queued, running, succeeded, failed, cancelled)")
		c.Flags().StringVar(&file, "file", "", "only the jobs of this file")
		c.Flags().StringVar(&batch, "batch", "", "only the members of this batch")
		c.Flags().StringVar(&project, "project", "", "only this project's jobs")
	})
	show := showCommand(g, "show JOB_ID", "show a job (its first ten artifacts; download fetches them all)",
		func(ctx context.Context, cl *client.Client, id string) (*http.Response, error) {
			return cl.API().GetJob(ctx, id)
		},
		jobDetails, func(w io.Writer, j api.Job) error { return artifactTable(w, j.Artifacts) })
	var asJSON bool
	cancel := &cobra.Command{
		Use:   "cancel JOB_ID",
		Short: "cancel a queued job (a running one keeps running: exit code 1)",
		Args:  exactArgs(1, "one job id"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			resp, err := cl.API().CancelJob(c.Context(), args[0], &api.CancelJobParams{IdempotencyKey: client.NewIdempotencyKey()})
			raw, err := client.Decode[json.RawMessage](resp, err)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(c), *raw)
			}
			var j api.Job
			if err := json.Unmarshal(*raw, &j); err != nil {
				return err
			}
			fmt.Fprintf(out(c), "%s\t%s\n", j.Id, j.State)
			return nil
		},
	}
	cancel.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	return group("jobs", "list, show and cancel jobs", list, show, cancel)
}

// --- batches

func batchesCommand(g *globals) *cobra.Command {
	show := showCommand(g, "show BATCH_ID", "show a batch and its members",
		func(ctx context.Context, cl *client.Client, id string) (*http.Response, error) {
			return cl.API().GetBatch(ctx, id)
		},
		func(b api.Batch) []field {
			var what string
			if b.Preset != nil {
				what = "preset:" + string(*b.Preset)
			} else {
				what = str(b.Operation)
			}
			k := b.Counts
			return []field{{"id", b.Id}, {"what", what}, {"state", string(b.State)},
				{"members", fmt.Sprintf("%d queued, %d running, %d succeeded, %d failed, %d cancelled", k.Queued, k.Running, k.Succeeded, k.Failed, k.Cancelled)},
				{"credits", fmt.Sprintf("%d estimated, %d charged", b.CreditsEstimated, b.CreditsCharged)},
				{"created", when(b.CreatedAt)}}
		},
		func(w io.Writer, b api.Batch) error {
			fmt.Fprintln(w)
			t := newTable(w, []column[api.BatchItem]{
				{"FILE", func(i api.BatchItem) string { return i.FileId }},
				{"JOB", func(i api.BatchItem) string { return i.JobId }},
				{"STATE", func(i api.BatchItem) string { return string(i.State) }},
				{"ERROR", func(i api.BatchItem) string {
					if i.Error == nil {
						return ""
					}
					return string(i.Error.Code) + ": " + i.Error.Message
				}},
			})
			for _, it := range b.Items {
				t.row(it)
			}
			return t.flush()
		})
	// The API lists no batches: their members are listed with `jobs --batch ID`.
	return group("batches", "show batches (their members: filemill jobs --batch ID)", nil, show)
}

// --- webhooks

var endpointColumns = []column[api.WebhookEndpoint]{
	{"ID", func(e api.WebhookEndpoint) string { return e.Id }},
	{"URL", func(e api.WebhookEndpoint) string { return truncate(e.Url, 60) }},
	{"STATUS", func(e api.WebhookEndpoint) string { return string(e.Status) }},
	{"EVENTS", func(e api.WebhookEndpoint) string { return joinEvents(e.EnabledEvents) }},
	{"FAILING SINCE", func(e api.WebhookEndpoint) string { return whenPtr(e.FailingSince) }},
	{"CREATED", func(e api.WebhookEndpoint) string { return when(e.CreatedAt) }},
}

func joinEvents(evs []api.SubscribableEvent) string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = string(e)
	}
	return strings.Join(s, ",")
}

func webhooksCommand(g *globals) *cobra.Command {
	var project string
	list := listCommand(g, "list", "list webhook endpoints", func(*cobra.Command) pageFunc {
		return func(ctx context.Context, cl *client.Client, cursor *string, limit *int) (*http.Response, error) {
			p := &api.ListWebhookEndpointsParams{StartingAfter: cursor, Limit: limit}
			if project != "" {
				p.ProjectId = &project
			}
			return cl.API().ListWebhookEndpoints(ctx, p)
		}
	}, endpointColumns, true, func(c *cobra.Command) {
		c.Flags().StringVar(&project, "project", "", "only this project's endpoints")
	})
	show := showCommand(g, "show ENDPOINT_ID", "show a webhook endpoint",
		func(ctx context.Context, cl *client.Client, id string) (*http.Response, error) {
			return cl.API().GetWebhookEndpoint(ctx, id)
		},
		func(e api.WebhookEndpoint) []field {
			return []field{{"id", e.Id}, {"url", e.Url}, {"status", string(e.Status)}, {"events", joinEvents(e.EnabledEvents)},
				{"project", e.ProjectId}, {"failing since", whenPtr(e.FailingSince)}, {"disabled", whenPtr(e.DisabledAt)},
				{"disabled because", str(e.DisabledReason)}, {"previous secret until", whenPtr(e.PreviousSecretExpiresAt)},
				{"created", when(e.CreatedAt)}}
		}, nil)
	var endpoint string
	deliveries := listCommand(g, "deliveries ENDPOINT_ID", "list an endpoint's deliveries, newest first", func(c *cobra.Command) pageFunc {
		return func(ctx context.Context, cl *client.Client, cursor *string, limit *int) (*http.Response, error) {
			return cl.API().ListWebhookDeliveries(ctx, endpoint, &api.ListWebhookDeliveriesParams{StartingAfter: cursor, Limit: limit})
		}
	}, []column[api.WebhookDelivery]{
		{"ID", func(d api.WebhookDelivery) string { return d.Id }},
		{"EVENT", func(d api.WebhookDelivery) string { return d.EventId }},
		{"TYPE", func(d api.WebhookDelivery) string { return d.EventType }},
		{"STATUS", func(d api.WebhookDelivery) string { return string(d.Status) }},
		{"ATTEMPTS", func(d api.WebhookDelivery) string { return fmt.Sprint(d.AttemptCount) }},
		{"LAST ANSWER", func(d api.WebhookDelivery) string {
			if d.LastStatusCode != nil {
				return fmt.Sprint(*d.LastStatusCode)
			}
			return truncate(str(d.LastError), 40)
		}},
		{"NEXT ATTEMPT", func(d api.WebhookDelivery) string { return whenPtr(d.NextAttemptAt) }},
		{"CREATED", func(d api.WebhookDelivery) string { return when(d.CreatedAt) }},
	}, true, nil)
	deliveries.Args = exactArgs(1, "one endpoint id")
	run := deliveries.RunE
	deliveries.RunE = func(c *cobra.Command, args []string) error {
		endpoint = args[0]
		return run(c, nil)
	}
	return group("webhooks", "list and show webhook endpoints and deliveries; listen for events locally", list, show, deliveries, listenCommand(g))
}

// --- events

func eventsCommand(g *globals) *cobra.Command {
	var typ, project string
	list := listCommand(g, "list", "list events, newest first", func(*cobra.Command) pageFunc {
		return func(ctx context.Context, cl *client.Client, cursor *string, limit *int) (*http.Response, error) {
			p := &api.ListEventsParams{StartingAfter: cursor, Limit: limit}
			if typ != "" {
				p.Type = client.Ptr(api.SubscribableEvent(typ))
			}
			if project != "" {
				p.ProjectId = &project
			}
			return cl.API().ListEvents(ctx, p)
		}
	}, []column[api.Event]{
		{"ID", func(e api.Event) string { return e.Id }},
		{"TYPE", func(e api.Event) string { return e.Type }},
		{"SUBJECT", func(e api.Event) string { return subjectOf(e.Data.Object) }},
		{"CREATED", func(e api.Event) string { return when(e.CreatedAt) }},
	}, true, func(c *cobra.Command) {
		c.Flags().StringVar(&typ, "type", "", "only events of this type (file.ready, job.succeeded, …)")
		c.Flags().StringVar(&project, "project", "", "only this project's events")
	})
	show := showCommand(g, "show EVENT_ID", "show an event",
		func(ctx context.Context, cl *client.Client, id string) (*http.Response, error) {
			return cl.API().GetEvent(ctx, id)
		},
		func(e api.Event) []field {
			obj, _ := json.Marshal(e.Data.Object)
			return []field{{"id", e.Id}, {"type", e.Type}, {"subject", subjectOf(e.Data.Object)}, {"created", when(e.CreatedAt)},
				{"object", string(obj)}}
		}, nil)
	return group("events", "list and show events", list, show)
}

// subjectOf is the id of the resource an event is about.
func subjectOf(obj map[string]any) string {
	id, _ := obj["id"].(string)
	return id
}

// --- usage

func usageCommand(g *globals) *cobra.Command {
	var asJSON bool
	var project string
	cmd := &cobra.Command{
		Use:   "usage [--project ID] [--json]",
		Short: "credits, storage and egress of the current period",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			p := &api.GetUsageParams{}
			if project != "" {
				p.ProjectId = &project
			}
			resp, err := cl.API().GetUsage(c.Context(), p)
			return printOne(c, resp, err, asJSON, func(u api.Usage) []field {
				return []field{{"project", u.ProjectId}, {"period", when(u.Period.Start) + " – " + when(u.Period.End)},
					{"credits", fmt.Sprintf("%d available, %d reserved, %d used", u.Credits.Balance, u.Credits.Reserved, u.Credits.Used)},
					{"storage", fmt.Sprintf("%s in %d files", humanBytes(int64(u.Storage.Bytes)), u.Storage.Files)},
					{"egress", humanBytes(int64(u.Egress.Bytes))}}
			}, nil)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	cmd.Flags().StringVar(&project, "project", "", "this project's usage (default: the key's)")
	return cmd
}

// --- operations

var operationColumns = []column[api.Operation]{
	{"NAME", func(o api.Operation) string { return o.Name }},
	{"KIND", func(o api.Operation) string { return string(o.Kind) }},
	{"ENGINE", func(o api.Operation) string { return o.Engine }},
	{"AVAILABLE", func(o api.Operation) string { return fmt.Sprint(o.Available) }},
	{"PRICE", func(o api.Operation) string { return truncate(o.PriceRule, 48) }},
}

func operationsCommand(g *globals) *cobra.Command {
	list := listCommand(g, "list", "list the operations and presets, with prices and availability", func(*cobra.Command) pageFunc {
		return func(ctx context.Context, cl *client.Client, _ *string, _ *int) (*http.Response, error) {
			return cl.API().ListOperations(ctx)
		}
	}, operationColumns, false, nil)
	var asJSON bool
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "show an operation or preset: inputs, options schema, price, steps",
		Args:  exactArgs(1, "one operation or preset name"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			// One page holds every operation; the one named is picked from it.
			raw, err := client.Decode[listPage[json.RawMessage]](cl.API().ListOperations(c.Context()))
			if err != nil {
				return err
			}
			for _, item := range raw.Data {
				var op api.Operation
				if err := json.Unmarshal(item, &op); err != nil {
					return err
				}
				if op.Name != args[0] {
					continue
				}
				if asJSON {
					return writeJSON(out(c), item)
				}
				schema, _ := json.Marshal(op.OptionsSchema)
				fields := []field{{"name", op.Name}, {"kind", string(op.Kind)}, {"description", op.Description},
					{"engine", op.Engine}, {"available", fmt.Sprint(op.Available)}, {"inputs", strings.Join(op.InputFormats, ", ")},
					{"price", op.PriceRule}, {"options schema", string(schema)}}
				if op.Steps != nil {
					for _, s := range *op.Steps {
						step := s.Operation
						if s.When != nil {
							step += " (for " + strings.Join(*s.When, ", ") + ")"
						}
						fields = append(fields, field{"step " + s.Name, step})
					}
				}
				return printFields(out(c), fields)
			}
			return &client.APIError{Status: http.StatusNotFound, Code: client.CodeNotFound,
				Message: fmt.Sprintf("no operation or preset %q (filemill operations lists them)", args[0])}
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON of the operation")
	return group("operations", "list and show the operations and presets", list, show)
}

func printFields(w io.Writer, fields []field) error {
	tw := newFieldWriter(w)
	for _, f := range fields {
		if f.value != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", f.name, f.value)
		}
	}
	return tw.Flush()
}
