package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// FindCreditAccount returns the account of (org, env), creating an empty one the first
// time. Concurrent first calls are safe: the insert does nothing on the unique
// (organization_id, environment) and everyone reads the one row. domain.ErrNotFound when
// the organization does not exist.
func (s *Store) FindCreditAccount(ctx context.Context, orgID string, env domain.Environment) (*domain.CreditAccount, error) {
	// Read first: accounts exist after their first use, and on SQLite a read does not
	// queue behind the single writer.
	acct, err := findCreditAccount(ctx, s.r(), orgID, env)
	if !errors.Is(err, domain.ErrNotFound) {
		return acct, err
	}
	row := &domain.CreditAccount{ID: domain.NewID(prefixCreditAccount), OrganizationID: orgID,
		Environment: env, CreatedAt: time.Now().UTC()}
	_, err = s.w().NewInsert().Model(row).On("CONFLICT (organization_id, environment) DO NOTHING").Exec(ctx)
	if err != nil {
		if isForeignKeyViolation(err) {
			return nil, fmt.Errorf("organization %s: %w", orgID, domain.ErrNotFound)
		}
		return nil, fmt.Errorf("create credit account of %s/%s: %w", orgID, env, err)
	}
	// From the writer: on SQLite it is the connection that just wrote.
	return findCreditAccount(ctx, s.w(), orgID, env)
}

// FindCreditAccountID returns the id of the account of (org, env), creating it the first
// time. An account is never deleted and its id never changes, so the process remembers it.
func (s *Store) FindCreditAccountID(ctx context.Context, orgID string, env domain.Environment) (string, error) {
	key := orgID + "/" + string(env)
	if id, ok := s.accountIDs.Load(key); ok {
		return id.(string), nil
	}
	acct, err := s.FindCreditAccount(ctx, orgID, env)
	if err != nil {
		return "", err
	}
	if s.tx == nil { // inside a transaction the account may yet be rolled back
		s.accountIDs.Store(key, acct.ID)
	}
	return acct.ID, nil
}

func findCreditAccount(ctx context.Context, idb bun.IDB, orgID string, env domain.Environment) (*domain.CreditAccount, error) {
	return findOne[domain.CreditAccount](ctx, idb, fmt.Sprintf("credit account of %s/%s", orgID, env),
		func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("organization_id = ?", orgID).Where("environment = ?", env)
		})
}

// ApplyLedgerEntry appends e and moves its account's running sums, all or nothing, in
// the caller's transaction or a new one. Each movement is one conditional UPDATE checked
// by rows affected, so concurrent movements never take a sum below zero:
//
//	grant    balance += a
//	reserve  balance -= a, reserved += a   where balance >= a,  else domain.ErrInsufficientCredits
//	charge   reserved -= a, used += a      where reserved >= a, else domain.ErrLedgerMismatch
//	release  reserved -= a, balance += a   where reserved >= a, else domain.ErrLedgerMismatch
//
// An amount of 0 writes nothing. An empty e.ID gets a fresh id and a zero e.CreatedAt the
// current time; the caller sets the rest.
// domain.ErrNotFound when the account does not exist.
func (s *Store) ApplyLedgerEntry(ctx context.Context, e *domain.LedgerEntry) error {
	switch {
	case e.Amount < 0:
		return fmt.Errorf("ledger %s of %d: amount must not be negative", e.Kind, e.Amount)
	case e.Amount == 0:
		return nil
	}
	switch e.Kind {
	case domain.LedgerGrant, domain.LedgerReserve, domain.LedgerCharge, domain.LedgerRelease:
	default:
		return fmt.Errorf("ledger entry kind %q is unknown", e.Kind)
	}
	if e.ID == "" {
		e.ID = domain.NewID(domain.PrefixLedgerEntry)
	}
	if e.CreatedAt.IsZero() {
		// A zero time would hide the entry from every "since" sum.
		e.CreatedAt = time.Now().UTC()
	}
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		return applyLedgerEntry(ctx, tx, e)
	})
}

func applyLedgerEntry(ctx context.Context, idb bun.IDB, e *domain.LedgerEntry) error {
	a := e.Amount
	q := idb.NewUpdate().Model((*domain.CreditAccount)(nil)).Where("id = ?", e.AccountID)
	var refusal error
	switch e.Kind {
	case domain.LedgerGrant:
		q = q.Set("balance = balance + ?", a)
	case domain.LedgerReserve:
		q = q.Set("balance = balance - ?", a).Set("reserved = reserved + ?", a).Where("balance >= ?", a)
		refusal = domain.ErrInsufficientCredits
	case domain.LedgerCharge:
		q = q.Set("reserved = reserved - ?", a).Set("used = used + ?", a).Where("reserved >= ?", a)
		refusal = domain.ErrLedgerMismatch
	case domain.LedgerRelease:
		q = q.Set("reserved = reserved - ?", a).Set("balance = balance + ?", a).Where("reserved >= ?", a)
		refusal = domain.ErrLedgerMismatch
	}
	n, err := affected(q.Exec(ctx))
	if err != nil {
		return fmt.Errorf("ledger %s %d on account %s: %w", e.Kind, a, e.AccountID, err)
	}
	if n == 0 {
		exists, err := idb.NewSelect().Model((*domain.CreditAccount)(nil)).Where("id = ?", e.AccountID).Exists(ctx)
		if err != nil {
			return fmt.Errorf("ledger %s %d on account %s: %w", e.Kind, a, e.AccountID, err)
		}
		if !exists || refusal == nil {
			return fmt.Errorf("credit account %s: %w", e.AccountID, domain.ErrNotFound)
		}
		return fmt.Errorf("ledger %s %d on account %s: %w", e.Kind, a, e.AccountID, refusal)
	}
	return insert(ctx, idb, "ledger entry", e.ID, e)
}

// reservation checks an admission's reserve entries on an account, fills their ids and
// times, and sums them; it returns those that move credits (an amount of 0 writes
// nothing).
func reservation(acct string, in []*domain.LedgerEntry) (entries []*domain.LedgerEntry, sum int64, err error) {
	for _, e := range in {
		switch {
		case e.Kind != domain.LedgerReserve:
			return nil, 0, fmt.Errorf("reserve credits: entry of kind %q", e.Kind)
		case e.AccountID != acct:
			return nil, 0, fmt.Errorf("reserve credits: entry on account %s in an admission on %s", e.AccountID, acct)
		case e.Amount < 0:
			return nil, 0, fmt.Errorf("reserve credits: amount %d must not be negative", e.Amount)
		case e.Amount == 0:
			continue
		}
		if e.ID == "" {
			e.ID = domain.NewID(domain.PrefixLedgerEntry)
		}
		if e.CreatedAt.IsZero() {
			e.CreatedAt = time.Now().UTC()
		}
		sum += e.Amount
		entries = append(entries, e)
	}
	return entries, sum, nil
}
