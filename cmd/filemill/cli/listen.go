package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/filemill/filemill/client"
	"github.com/filemill/filemill/client/webhook"
)

// Reconnection after the event stream broke: waits from listenMinWait doubling to
// listenMaxWait; listenMaxFailures failures in a row end the command.
const (
	listenMinWait     = time.Second
	listenMaxWait     = 30 * time.Second
	listenMaxFailures = 10
	forwardTimeout    = 10 * time.Second
	forwardBodyLimit  = 64 << 10
)

func listenCommand(g *globals) *cobra.Command {
	var forwardTo, secret, project string
	var types []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "listen [--forward-to URL] [--events TYPE,…] [--secret whsec_…] [--json]",
		Short: "print a project's events as they happen, and forward them signed to a local URL",
		Long: `Follows the events of a project as they happen (the GraphQL events subscription) and
prints a line for each; with --forward-to it also POSTs each to that URL as a webhook
delivery would be sent: the same body, signed the Standard Webhooks way
(webhook-id, webhook-timestamp, webhook-signature) with --secret, or with a secret made
for this session and printed at the start. It is for developing a webhook receiver on
your machine, without HTTPS or a public address; the deployment's own endpoints and
their deliveries are not involved.

Events that happen while the stream is down (it reconnects by itself) are not
replayed: 'filemill events' lists them.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			var target *url.URL
			if forwardTo != "" {
				u, err := url.Parse(forwardTo)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usagef(c.CommandPath(), "--forward-to: want an http(s) URL, got %q", forwardTo)
				}
				target = u
				if secret == "" {
					secret = webhook.NewSecret()
				} else if _, err := webhook.Headers(secret, "x", time.Now(), nil); err != nil {
					return usagef(c.CommandPath(), "--secret: %v", err)
				}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			ctx := c.Context()
			// A bad key is told now, with its exit code, not as a refused websocket.
			if _, err := cl.Operations(ctx); err != nil {
				return err
			}
			ui := newLineUI(c, g)
			l := &listener{cl: cl, ui: ui, target: target, secret: secret, asJSON: asJSON,
				hc: &http.Client{Timeout: forwardTimeout}}
			if target != nil {
				ui.note("forwarding events to %s, signed with the secret %s", target, secret)
			}
			return l.run(ctx, client.EventStreamOptions{ProjectID: project, Types: types})
		},
	}
	cmd.Flags().StringVar(&forwardTo, "forward-to", "", "POST each event to this URL, signed")
	cmd.Flags().StringVar(&secret, "secret", "", "the whsec_ secret signing the forwarded events (default: one made for this session, printed)")
	cmd.Flags().StringSliceVar(&types, "events", nil, "only these event types (file.ready, job.succeeded, …; default: all)")
	cmd.Flags().StringVar(&project, "project", "", "this project's events (default: the key's)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each event as its delivery body, one JSON object per line")
	return cmd
}

// listener prints the event stream and forwards it.
type listener struct {
	cl     *client.Client
	ui     *progressUI
	hc     *http.Client
	target *url.URL
	secret string
	asJSON bool
}

func (l *listener) run(ctx context.Context, opts client.EventStreamOptions) error {
	wait, failures := listenMinWait, 0
	for {
		l.ui.note("listening for events (Ctrl-C to stop)")
		received := false
		err := l.cl.SubscribeEvents(ctx, opts, func(ev client.StreamedEvent) error {
			received, failures, wait = true, 0, listenMinWait
			l.handle(ctx, ev)
			return nil
		})
		if ctx.Err() != nil {
			return nil // stopped
		}
		if !received {
			failures++
		}
		if failures >= listenMaxFailures {
			return fmt.Errorf("the event stream failed %d times in a row: %w", failures, err)
		}
		l.ui.note("the event stream broke (%v); reconnecting in %s", err, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(wait*2, listenMaxWait)
	}
}

// handle prints one event and forwards it.
func (l *listener) handle(ctx context.Context, ev client.StreamedEvent) {
	body := ev.JSON()
	if l.asJSON {
		l.ui.result("%s", body)
	} else {
		l.ui.result("%s\t%s\t%s", ev.CreatedAt.Local().Format(time.RFC3339), ev.Type, ev.ID)
	}
	if l.target == nil {
		return
	}
	status, took, err := l.forward(ctx, ev.ID, body)
	if err != nil {
		l.ui.note("  → %s: %v", l.target, err)
		return
	}
	l.ui.note("  → %s: %d (%d ms)", l.target, status, took.Milliseconds())
}

// forward POSTs a delivery, signed as the deployment signs its own.
func (l *listener) forward(ctx context.Context, id string, body []byte) (int, time.Duration, error) {
	start := time.Now()
	h, err := webhook.Headers(l.secret, id, start, body)
	if err != nil {
		return 0, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.target.String(), bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "filemill-cli/"+Version+" (webhooks listen)")
	resp, err := l.hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, forwardBodyLimit))
	return resp.StatusCode, time.Since(start), nil
}
