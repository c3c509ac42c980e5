package client

import (
	"context"
	"iter"
	"net/http"

	"github.com/filemill/filemill/client/api"
)

// page is the list envelope of every /v1 list.
type page[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// Pages walks a list page by page for a list this package does not wrap, or to keep
// the items as the API wrote them (T json.RawMessage): fetch gets the page after cursor
// (nil for the first) through API(). Items come one by one; an error (an *APIError for
// an error answer) ends the walk after being yielded once.
func Pages[T any](fetch func(cursor *string) (*http.Response, error)) iter.Seq2[T, error] {
	return pages[T](fetch)
}

// pages is Pages.
func pages[T any](fetch func(cursor *string) (*http.Response, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var cursor *string
		for {
			p, err := decode[page[T]](fetch(cursor))
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range p.Data {
				if !yield(item, nil) {
					return
				}
			}
			if !p.HasMore || p.NextCursor == nil || *p.NextCursor == "" {
				return
			}
			cursor = p.NextCursor
		}
	}
}

// paramsAfter copies a list's parameters with the cursor set, leaving the caller's alone.
func paramsAfter[P any](params *P, cursor *string, set func(*P, *string)) *P {
	var p P
	if params != nil {
		p = *params
	}
	if cursor != nil {
		set(&p, cursor)
	}
	return &p
}

// Files iterates over the files, newest first, following next_cursor across pages.
// params may be nil; its StartingAfter is where the walk begins.
func (c *Client) Files(ctx context.Context, params *api.ListFilesParams) iter.Seq2[api.File, error] {
	return pages[api.File](func(cursor *string) (*http.Response, error) {
		return c.api.ListFiles(ctx, paramsAfter(params, cursor, func(p *api.ListFilesParams, s *string) { p.StartingAfter = s }))
	})
}

// Jobs iterates over the jobs, newest first (filtered by params, which may be nil).
func (c *Client) Jobs(ctx context.Context, params *api.ListJobsParams) iter.Seq2[api.Job, error] {
	return pages[api.Job](func(cursor *string) (*http.Response, error) {
		return c.api.ListJobs(ctx, paramsAfter(params, cursor, func(p *api.ListJobsParams, s *string) { p.StartingAfter = s }))
	})
}

// WebhookEndpoints iterates over the webhook endpoints, newest first.
func (c *Client) WebhookEndpoints(ctx context.Context, params *api.ListWebhookEndpointsParams) iter.Seq2[api.WebhookEndpoint, error] {
	return pages[api.WebhookEndpoint](func(cursor *string) (*http.Response, error) {
		return c.api.ListWebhookEndpoints(ctx, paramsAfter(params, cursor, func(p *api.ListWebhookEndpointsParams, s *string) { p.StartingAfter = s }))
	})
}

// WebhookDeliveries iterates over the deliveries of one endpoint, newest first.
func (c *Client) WebhookDeliveries(ctx context.Context, endpointID string, params *api.ListWebhookDeliveriesParams) iter.Seq2[api.WebhookDelivery, error] {
	return pages[api.WebhookDelivery](func(cursor *string) (*http.Response, error) {
		return c.api.ListWebhookDeliveries(ctx, endpointID, paramsAfter(params, cursor, func(p *api.ListWebhookDeliveriesParams, s *string) { p.StartingAfter = s }))
	})
}

// Events iterates over the events, newest first (filtered by params, which may be nil).
func (c *Client) Events(ctx context.Context, params *api.ListEventsParams) iter.Seq2[api.Event, error] {
	return pages[api.Event](func(cursor *string) (*http.Response, error) {
		return c.api.ListEvents(ctx, paramsAfter(params, cursor, func(p *api.ListEventsParams, s *string) { p.StartingAfter = s }))
	})
}

// JobArtifacts iterates over every artifact of a job, in the order the job made them
// (a job shows its first ten; artifact_count says how many there are).
func (c *Client) JobArtifacts(ctx context.Context, jobID string) iter.Seq2[api.Artifact, error] {
	return pages[api.Artifact](func(cursor *string) (*http.Response, error) {
		return c.api.ListJobArtifacts(ctx, jobID, &api.ListJobArtifactsParams{StartingAfter: cursor})
	})
}

// FileHistory returns the history of a file, oldest first (one page holds it all).
func (c *Client) FileHistory(ctx context.Context, fileID string) ([]api.HistoryEntry, error) {
	p, err := decode[page[api.HistoryEntry]](c.api.GetFileHistory(ctx, fileID))
	if err != nil {
		return nil, err
	}
	return p.Data, nil
}

// Operations returns every operation and preset with its options schema, price and
// availability (one page holds them all).
func (c *Client) Operations(ctx context.Context) ([]api.Operation, error) {
	p, err := decode[page[api.Operation]](c.api.ListOperations(ctx))
	if err != nil {
		return nil, err
	}
	return p.Data, nil
}
