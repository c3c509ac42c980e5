package domain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// The idempotency protocol, the same for both doors. A mutating request names an
// Idempotency-Key; Services.Do runs it:
//
//  0. the key is well formed (ValidIdempotencyKey), or the request is refused before
//     anything is read: a malformed header tells nothing of what it names.
//  1. authorize: the request is decided for the key — scope, environment, allowed
//     operations and projects, the resources it names — before anything is handed out,
//     a stored answer included. A refusal is never stored.
//  2. claim: the key is claimed in the request's scope: its organization, environment
//     and project (the one it acts on), its action, and — when its answer holds a
//     credential (keyBound) — the API key that makes it. A request in another scope is
//     another request. A claim holding an answer is replayed when the request is the
//     same (same fingerprint), refused with idempotency_conflict when it is not; a
//     claim still in progress is refused with idempotency_conflict in_progress,
//     Retry-After 1 — unless its lease ran out, which means its holder died: then the
//     request takes the claim over.
//  3. effect: the request's effect runs while its claim is held, the holder renewing the
//     claim's lease; its answer is stored (by the effect's own write where it can, see
//     Admission.Answer) — except failures on our side and refusals that say to come back
//     later, which free the key for a retry.

// Result kinds of an answer: how the resource it carries came about. Each door renders
// them its way (REST: 200, 201, 202, 204).
const (
	ResultOK       = "ok"       // the resource as it is now
	ResultCreated  = "created"  // a resource the request made
	ResultAccepted = "accepted" // work the request queued
	ResultEmpty    = "empty"    // nothing to show
)

// Answer is the door-neutral outcome of a mutating request: what a door renders, and
// what is stored for a replay of the request.
type Answer struct {
	// Result is one of the Result kinds; "" when Error is set.
	Result string
	// Object is the resource, as the JSON of its view; nil for ResultEmpty.
	Object json.RawMessage
	// Value is the view Object was rendered from, as the effect made it, so a door that
	// shows it other than as JSON (GraphQL) renders it directly. Nil on a stored answer
	// read back: a replay's resource is Object alone.
	Value any
	// Error is the refusal, when the request was refused.
	Error *AnswerError
	// refusal is the error Error was rendered from; nil on a stored refusal read back.
	refusal *Error
	// Replayed is set on a stored answer given again.
	Replayed bool
}

// Refusal is the answer's refusal as the contract error it is (nil when the request was
// not refused): the one the effect returned, or a stored one read back with its details.
func (a *Answer) Refusal() *Error {
	switch {
	case a.Error == nil:
		return nil
	case a.refusal != nil:
		return a.refusal
	}
	e := a.Error
	derr := &Error{Code: e.Code, Message: e.Message, Param: e.Param, RetryAfter: e.RetryAfter}
	if len(e.Details) > 0 {
		// Stored from a map by refusalAnswer: it reads back as one.
		_ = json.Unmarshal(e.Details, &derr.Details)
	}
	return derr
}

// AnswerError is a refusal as it is stored: the contract error, with its details in JSON
// and the id of the request that got it first.
type AnswerError struct {
	Code       string          `json:"code"`
	Message    string          `json:"message"`
	Param      string          `json:"param,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
	RequestID  string          `json:"request_id"`
	RetryAfter int             `json:"retry_after,omitempty"`
}

// NewAnswer renders v, a resource's view, as an answer of kind result.
func NewAnswer(result string, v any) (*Answer, error) {
	if result == ResultEmpty {
		return &Answer{Result: result}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("render answer: %w", err)
	}
	return &Answer{Result: result, Object: b, Value: v}, nil
}

// refusalAnswer is e as a stored refusal of the request requestID.
func refusalAnswer(e *Error, requestID string) (*Answer, error) {
	ae := &AnswerError{Code: e.Code, Message: e.Message, Param: e.Param, RequestID: requestID, RetryAfter: e.RetryAfter}
	if len(e.Details) > 0 {
		b, err := json.Marshal(e.Details)
		if err != nil {
			return nil, fmt.Errorf("render refusal: %w", err)
		}
		ae.Details = b
	}
	return &Answer{Error: ae, refusal: e}, nil
}

// answerKept reports whether an answer with this code is stored for replays. Never
// stored: authorization refusals (decided afresh for every request, so a replay can never
// hand out what a fresh request would be refused); refusals that say to come back later
// (the 429 codes: a retry after Retry-After must be tried again, not told the same); and
// failures on our side, where a retry may succeed.
func answerKept(code string) bool {
	return !slices.Contains(notKept, code)
}

var notKept = []string{
	CodeMissingCredentials, CodeInvalidAPIKey, CodeExpiredAPIKey, CodeRevokedAPIKey, CodeAPIKeyInQuery,
	CodeInsufficientScope, CodeIPNotAllowed, CodeOperationNotAllowed, CodeEnvironmentMismatch,
	CodeOrganizationSuspended, CodeForbidden, CodeKeyRestricted,
	CodeKeySpendLimit, CodeRateLimited, CodeConcurrencyLimit, CodeCreditsExhausted, CodeAnonymousDailyLimit,
	CodeInternal, CodeProcessingUnavailable, CodeDependencyUnavailable, CodeTimeout, CodeNotImplemented,
	CodeIdempotencyConflict,
}

// Call is what a door knows of one mutating request beyond its body.
type Call struct {
	IdempotencyKey string // the client's key, required
	RequestID      string // this request's id, kept with a stored refusal
}

// Request is a mutating request of either door: a value naming what to do, with its
// input. The fingerprint of a request is its action and the canonical JSON of the value,
// so the value's json tags name its fields as the contract does.
type Request interface {
	// Action names what the request does, door-neutrally ("jobs.create"): with the
	// organization, environment and project it scopes the request's Idempotency-Key.
	Action() string
	// authorize decides whether p may make the request, reading what that needs, and
	// returns the grant: the project it acts on and its effect, to run once the
	// request holds its claim.
	authorize(ctx context.Context, s *Services, p *Principal) (grant, error)
}

// grant is an authorized request: the project it acts on — the one it names or the
// key's own for a creation, the project of the resource it names otherwise — and its
// effect.
type grant struct {
	projectID string
	run       effect
	// claimAtWrite marks an effect whose one write stores its answer with it and can
	// insert the claim too (an admission): the request claims its key by that write, with
	// no round trip of its own, and falls back to claiming first only when the write finds
	// the key taken or the effect does not get as far as writing.
	claimAtWrite bool
}

// effect does what an authorized request asks. Its answer is stored when kept; a
// refusal may also come back as an *Error. c is nil when nothing is to be stored.
type effect func(ctx context.Context, c *claim) (*Answer, error)

// keyBound marks a request whose answer holds a credential: a signed URL that writes or
// reads bytes, or a webhook endpoint's secret. Its claim belongs to the API key that
// makes it: the answer is replayed to that key alone, and another key sending the same
// Idempotency-Key — even of the same environment and project — makes a new request,
// getting its own session, URL or endpoint (never a replay, nor a conflict). A key may
// see these resources through other requests, but a credential is shown only to whoever
// asked for it.
type keyBound interface{ answerHoldsCredential() }

// ValidIdempotencyKey checks a client's key: 1 to 255 printable ASCII characters.
// Codes: invalid_request (param Idempotency-Key).
func ValidIdempotencyKey(key string) error {
	if key == "" {
		return InvalidParam("Idempotency-Key", "the Idempotency-Key header is required on every POST")
	}
	if len(key) > 255 {
		return InvalidParam("Idempotency-Key", "Idempotency-Key must be at most 255 characters")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return InvalidParam("Idempotency-Key", "Idempotency-Key must be printable ASCII")
		}
	}
	return nil
}

// fingerprint identifies a request by its action and the canonical JSON of its value:
// key order and white space inside free-form JSON (options) do not make a retry differ.
func fingerprint(req Request) (string, error) {
	raw, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	canon, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(req.Action() + "\n"))
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ErrClaimLost reports that a request's claim was taken over while its effect ran
// (its lease lapsed); a store refuses to write an answer for a claim that is gone, and
// with it the effect written together with it.
var ErrClaimLost = errors.New("idempotency claim was taken over")

// ErrIdempotencyTaken reports that a write claiming a key with its answer (ClaimAtWrite)
// found the key already claimed in its scope; nothing was written.
var ErrIdempotencyTaken = errors.New("idempotency key is taken")

func inProgress() *Error {
	return &Error{Code: CodeIdempotencyConflict, Param: "Idempotency-Key", RetryAfter: 1,
		Message: "a request with this Idempotency-Key is still being processed; retry after Retry-After seconds",
		Details: map[string]any{"in_progress": true}}
}

// Do runs a mutating request of a door for p, by the idempotency protocol above: once
// its key is found well formed, p is authorized for req before anything else is read or
// handed out; then the request claims its key, and either
// gets the stored answer of the same request, or is refused (idempotency_conflict), or
// runs its effect. The answer is what the door renders, a refusal included (Answer.Error);
// an error is a refusal or failure that is not stored. Codes: those of the request,
// invalid_request (Idempotency-Key), idempotency_conflict.
func (s *Services) Do(ctx context.Context, p *Principal, c Call, req Request) (*Answer, error) {
	// The one place the key is checked: a malformed key is refused before anything is
	// looked up, the same through every door.
	if err := ValidIdempotencyKey(c.IdempotencyKey); err != nil {
		return nil, err
	}
	g, err := req.authorize(ctx, s, p)
	if err != nil {
		return nil, err
	}
	fp, err := fingerprint(req)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	rec := &IdempotencyRecord{ID: NewID(PrefixIdempotency), OrganizationID: p.Organization.ID, Environment: p.Environment(),
		ProjectID: g.projectID, Endpoint: req.Action(), Key: c.IdempotencyKey, Fingerprint: fp, State: IdempotencyInProgress,
		CreatedAt: now, ExpiresAt: now.Add(s.Config.IdempotencyTTL), LeaseUntil: now.Add(s.Config.IdempotencyLease)}
	if _, ok := req.(keyBound); ok {
		rec.APIKeyID = p.Key.ID
	}
	if g.claimAtWrite {
		if a, decided, err := s.doClaimingAtWrite(ctx, rec, g); decided {
			return a, err
		}
	}
	existing, err := s.Store.ClaimIdempotencyKey(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("claim idempotency key: %w", err)
	}
	if existing != nil {
		switch {
		case existing.Fingerprint != fp:
			return nil, &Error{Code: CodeIdempotencyConflict, Param: "Idempotency-Key",
				Message: "this Idempotency-Key was used with a different request; use a new key for a new request"}
		case existing.State != IdempotencyDone || existing.Answer == nil:
			return nil, inProgress()
		}
		a := *existing.Answer
		a.Replayed = true
		return &a, nil
	}
	cl := s.hold(rec)
	defer cl.release(ctx)
	a, err := g.run(ctx, cl)
	if errors.Is(err, ErrClaimLost) {
		return nil, inProgress()
	}
	if err != nil {
		e := AsError(err)
		if e == nil || !answerKept(e.Code) {
			return nil, err
		}
		if a, err = refusalAnswer(e, c.RequestID); err != nil {
			return nil, err
		}
	}
	if a.Error != nil && !answerKept(a.Error.Code) {
		return a, nil
	}
	// From here the key stays taken, even when storing the answer fails: the effect
	// happened, and a retry must not repeat it.
	cl.kept = true
	if !cl.stored {
		cl.finish(ctx, a)
	}
	return a, nil
}

// doClaimingAtWrite runs an effect that claims rec's key with its own write. decided is
// false when the claimed protocol must decide instead — the key was taken, or the effect
// stopped before its write while a record of the key exists (its answer is replayed
// rather than a fresh refusal given), or it came to a refusal that is stored — and then
// nothing was written: the effect runs again, under a claim.
func (s *Services) doClaimingAtWrite(ctx context.Context, rec *IdempotencyRecord, g grant) (a *Answer, decided bool, err error) {
	cl := &claim{s: s, rec: rec, atWrite: true}
	a, err = g.run(ctx, cl)
	if cl.stored {
		return a, true, nil
	}
	if errors.Is(err, ErrIdempotencyTaken) {
		return nil, false, nil
	}
	switch _, ferr := s.Store.FindIdempotencyKey(ctx, rec); {
	case ferr == nil:
		return nil, false, nil
	case !errors.Is(ferr, ErrNotFound):
		return nil, true, fmt.Errorf("find idempotency key: %w", ferr)
	}
	if err != nil {
		if e := AsError(err); e != nil && answerKept(e.Code) {
			return nil, false, nil
		}
		return nil, true, err
	}
	if a.Error != nil && answerKept(a.Error.Code) {
		return nil, false, nil
	}
	return a, true, nil
}

// PrefixIdempotency marks the ids of idempotency claims; they are never shown.
const PrefixIdempotency = "idem_"

// claim is a request's hold on its idempotency key while its effect runs: the live
// holder renews the claim's lease, so a claim whose holder died is taken over once its
// lease lapses.
type claim struct {
	s      *Services
	rec    *IdempotencyRecord
	stored bool // the answer was written, with the effect or by finish
	kept   bool // the effect ran to an answer that is kept: the key is never freed
	// atWrite: the claim is not written yet; the effect's write inserts it with the
	// answer (Admission.ClaimAtWrite).
	atWrite bool

	mu      sync.Mutex
	timer   *time.Timer // the next renewal; most requests end before it is due
	stopped bool
	warned  bool // a failed renewal is logged once per claim: in an outage every claim would say it
}

// hold starts renewing rec's lease until the claim is released. Renewals run on a timer
// rather than a goroutine of their own: a request that ends within the first interval,
// as nearly all do, costs a timer and nothing more.
func (s *Services) hold(rec *IdempotencyRecord) *claim {
	c := &claim{s: s, rec: rec}
	c.mu.Lock()
	c.timer = time.AfterFunc(leaseRenewal(s.Config.IdempotencyLease), c.renew)
	c.mu.Unlock()
	return c
}

// renew pushes the lease a full lease ahead, then arms the next renewal: a few times per
// lease, so a holder that stays alive keeps its claim through a few failed renewals.
func (c *claim) renew() {
	lease := c.s.Config.IdempotencyLease
	ctx, cancel := context.WithTimeout(context.Background(), leaseRenewal(lease))
	err := c.s.Store.RenewIdempotencyKey(ctx, c.rec.ID, c.s.Clock.Now().Add(lease))
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && !c.warned && !c.stopped {
		c.warned = true
		c.s.log().Warn("renew idempotency claim", "idempotency_record_id", c.rec.ID, "error", err.Error())
	}
	if !c.stopped {
		c.timer.Reset(leaseRenewal(lease))
	}
}

// leaseRenewal is how often a live holder renews a lease: five times per lease.
func leaseRenewal(lease time.Duration) time.Duration { return max(lease/5, time.Millisecond) }

// answering returns the record a write stores together with the effect it answers:
// then no failure after the write can leave the key free for a retry to repeat the
// effect. The caller marks the claim stored once that write succeeded. Nil for no claim.
func (c *claim) answering(a *Answer) *IdempotencyRecord {
	if c == nil {
		return nil
	}
	rec := *c.rec
	rec.State, rec.Answer = IdempotencyDone, a
	return &rec
}

// finish stores the answer after the effect, even when the client has gone.
func (c *claim) finish(ctx context.Context, a *Answer) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.s.Store.FinishIdempotencyKey(ctx, c.answering(a)); err != nil {
		c.s.log().Error("store idempotent answer", "idempotency_record_id", c.rec.ID, "error", err.Error())
		return
	}
	c.stored = true
}

// release stops renewing and, unless the request came to an answer that is kept, frees
// the key so the request can be retried (after a failure on our side, a refusal that is
// not kept, or a panic).
func (c *claim) release(ctx context.Context) {
	c.mu.Lock()
	c.stopped = true
	c.timer.Stop()
	c.mu.Unlock()
	// A renewal under way may still land after this: on a claim answered or deleted it
	// changes nothing that matters.
	if c.stored || c.kept {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.s.Store.ReleaseIdempotencyKey(ctx, c.rec.ID); err != nil {
		c.s.log().Warn("release idempotency claim", "idempotency_record_id", c.rec.ID, "error", err.Error())
	}
}

func (s *Services) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}
