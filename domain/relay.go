package domain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// The outbox relay. Every state change writes its events in its own transaction, and
// the store keeps the ids of those not relayed yet (the outbox). The relay claims them —
// never "ids above the last one seen": ids are minted before commit, so a smaller id
// can commit after a larger one was read — and, in one transaction, records a delivery
// per event and subscribed endpoint and releases the claim. A relay stopped anywhere
// leaves either nothing done (the claim is rolled back and the events are claimed
// again) or everything recorded; the unique (event, endpoint) pair keeps a delivery from
// being recorded twice. After the commit it publishes the events to live subscribers and
// schedules the first attempts; a schedule lost there is picked up by
// RequeueDueDeliveries.

// RelayBatch is how many events one relay transaction claims by default.
const RelayBatch = 200

// Relay relays up to limit events from the outbox and returns how many it claimed. An
// error after the commit (publishing, scheduling) is returned with the count: what was
// committed stays relayed.
func (w *Webhooks) Relay(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		limit = RelayBatch
	}
	var (
		events     []*Event
		deliveries []*Delivery
	)
	now := w.Clock.Now()
	err := w.inTx(ctx, func(tx WebhooksPorts) error {
		var err error
		if events, err = tx.ClaimOutbox(ctx, limit); err != nil || len(events) == 0 {
			return err
		}
		var projects []string
		for _, e := range events {
			if slices.Contains(SubscribableEvents, e.Type) && !slices.Contains(projects, e.ProjectID) {
				projects = append(projects, e.ProjectID)
			}
		}
		deliveries = deliveries[:0]
		if len(projects) > 0 {
			eps, err := tx.FindLiveWebhookEndpoints(ctx, projects)
			if err != nil {
				return err
			}
			for _, e := range events {
				for _, ep := range eps {
					if ep.wants(e) {
						deliveries = append(deliveries, &Delivery{ID: NewID(PrefixDelivery), EndpointID: ep.ID, EventID: e.ID,
							EventType: e.Type, Status: DeliveryPending, NextAttemptAt: &now, CreatedAt: now, UpdatedAt: now})
					}
				}
			}
			if err := tx.CreateDeliveries(ctx, deliveries); err != nil {
				return err
			}
		}
		ids := make([]string, len(events))
		for i, e := range events {
			ids[i] = e.ID
		}
		return tx.ReleaseOutbox(ctx, ids)
	})
	if err != nil {
		return 0, fmt.Errorf("relay: %w", err)
	}
	var errs []error
	if w.Bus != nil {
		for _, e := range events {
			if e.Type == EventWebhookTest {
				continue
			}
			if err := w.Bus.Publish(ctx, e); err != nil {
				errs = append(errs, fmt.Errorf("publish %s: %w", e.ID, err))
				break // the bus is down: the rest would fail alike
			}
		}
	}
	if w.Deliveries != nil && len(deliveries) > 0 {
		if err := w.scheduleAll(ctx, deliveries); err != nil {
			errs = append(errs, err) // left to the due-delivery sweep
		}
	}
	return len(events), errors.Join(errs...)
}

// wants reports whether the endpoint is to receive e: an enabled endpoint of e's
// project and environment that lists its type and existed when it happened.
func (ep *WebhookEndpoint) wants(e *Event) bool {
	return ep.Status == EndpointEnabled && ep.OrganizationID == e.OrganizationID && ep.ProjectID == e.ProjectID &&
		ep.Environment == e.Environment && !e.CreatedAt.Before(ep.CreatedAt) && slices.Contains(ep.EnabledEvents, e.Type)
}

// SweepEvents deletes events older than the retention period, with their deliveries,
// at most limit at a time; returns how many went.
func (w *Webhooks) SweepEvents(ctx context.Context, limit int) (int, error) {
	return w.Store.DeleteEventsBefore(ctx, w.Clock.Now().Add(-w.Config.EventRetention), limit)
}

// publishProgress tells live subscribers how far a running job is. It is no outbox
// event: a lost one is superseded by the next, or by the job's final event.
func publishProgress(ctx context.Context, bus EventBus, j *Job, at time.Time) {
	if bus == nil {
		return
	}
	e, err := NewEvent(ctx, EventJobProgress, j.OrganizationID, j.ProjectID, j.Environment, j.ID, j.View(), at)
	if err != nil {
		return
	}
	e.ID, e.FileID = "", j.FileID
	_ = bus.Publish(ctx, e)
}

// scheduleParallel is how many first attempts the relay schedules at once: each is a
// round trip to the queue.
const scheduleParallel = 8

// scheduleAll schedules the first attempt of each delivery, a few at a time, and
// returns the first error.
func (w *Webhooks) scheduleAll(ctx context.Context, ds []*Delivery) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan *Delivery)
	for range min(scheduleParallel, len(ds)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				if err := w.Deliveries.EnqueueDelivery(ctx, DeliveryTask{DeliveryID: d.ID, EndpointID: d.EndpointID}); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("schedule delivery %s: %w", d.ID, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, d := range ds {
		next <- d
	}
	close(next)
	wg.Wait()
	return first
}
