package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// ApplyLedgerEntry appends e and moves its account's running sums (see ledgerEffects),
// all or nothing, in the caller's transaction or a new one. The move is one conditional
// UPDATE checked by rows affected, so concurrent movements never take a sum below zero:
// a reserve larger than the balance is domain.ErrInsufficientCredits, a charge or release
// larger than what is reserved domain.ErrLedgerMismatch.
//
// An amount of 0 writes nothing. An empty e.ID gets a fresh id and a zero e.CreatedAt the
// current time; the caller sets the rest.
// domain.ErrNotFound when the account does not exist.
func (s *Store) ApplyLedgerEntry(ctx context.Context, e *domain.LedgerEntry) error {
	m := &creditMove{account: e.AccountID}
	moved, err := m.add([]*domain.LedgerEntry{e}, domain.LedgerGrant, domain.LedgerReserve, domain.LedgerCharge, domain.LedgerRelease)
	if err != nil || len(moved) == 0 {
		return err
	}
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		n, err := m.apply(ctx, tx)
		if err != nil {
			return fmt.Errorf("ledger %s %d on account %s: %w", e.Kind, e.Amount, e.AccountID, err)
		}
		if n == 0 {
			exists, err := tx.NewSelect().Model((*domain.CreditAccount)(nil)).Where("id = ?", e.AccountID).Exists(ctx)
			if err != nil {
				return fmt.Errorf("ledger %s %d on account %s: %w", e.Kind, e.Amount, e.AccountID, err)
			}
			refusal := domain.ErrLedgerMismatch
			switch {
			case !exists || e.Kind == domain.LedgerGrant:
				return fmt.Errorf("credit account %s: %w", e.AccountID, domain.ErrNotFound)
			case e.Kind == domain.LedgerReserve:
				refusal = domain.ErrInsufficientCredits
			}
			return fmt.Errorf("ledger %s %d on account %s: %w", e.Kind, e.Amount, e.AccountID, refusal)
		}
		return insert(ctx, tx, "ledger entry", e.ID, e)
	})
}

// ledgerEffects is what an entry of each kind adds, per credit, to its account's sums.
var ledgerEffects = map[string]struct{ balance, reserved, used int64 }{
	domain.LedgerGrant:   {balance: 1},
	domain.LedgerReserve: {balance: -1, reserved: 1},
	domain.LedgerCharge:  {reserved: -1, used: 1},
	domain.LedgerRelease: {balance: 1, reserved: -1},
}

// add checks ledger entries of the given kinds, fills their ids and times, and adds
// their effects to m, whose account they must all be on (the first one's when m has
// none yet). It returns the entries that move credits: an amount of 0 writes nothing.
func (m *creditMove) add(in []*domain.LedgerEntry, kinds ...string) ([]*domain.LedgerEntry, error) {
	var out []*domain.LedgerEntry
	for _, e := range in {
		switch {
		case !slices.Contains(kinds, e.Kind):
			return nil, fmt.Errorf("ledger: an entry of kind %q here", e.Kind)
		case e.Amount < 0:
			return nil, fmt.Errorf("ledger %s of %d: amount must not be negative", e.Kind, e.Amount)
		case e.Amount == 0:
			continue
		case m.account == "":
			m.account = e.AccountID
		case e.AccountID != m.account:
			return nil, fmt.Errorf("ledger: entries on accounts %s and %s in one move", m.account, e.AccountID)
		}
		fx := ledgerEffects[e.Kind]
		m.balance += fx.balance * e.Amount
		m.reserved += fx.reserved * e.Amount
		m.used += fx.used * e.Amount
		if e.ID == "" {
			e.ID = domain.NewID(domain.PrefixLedgerEntry)
		}
		if e.CreatedAt.IsZero() {
			// A zero time would hide the entry from every "since" sum.
			e.CreatedAt = time.Now().UTC()
		}
		out = append(out, e)
	}
	return out, nil
}

// apply moves the account's sums unless one would go below zero; it reports the rows
// changed: 0 when refused, or when the account does not exist.
func (m *creditMove) apply(ctx context.Context, idb bun.IDB) (int64, error) {
	return affected(idb.NewUpdate().Model((*domain.CreditAccount)(nil)).
		Set("balance = balance + ?", m.balance).Set("reserved = reserved + ?", m.reserved).Set("used = used + ?", m.used).
		Where("id = ?", m.account).Where("balance + ? >= 0", m.balance).Where("reserved + ? >= 0", m.reserved).
		Where("used + ? >= 0", m.used).Exec(ctx))
}
