package domain

import "context"

// Page size bounds of every list.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// ValidatePage checks limit and the cursor's shape. limit 0 means the default.
// Codes: invalid_request (param limit or starting_after).
func ValidatePage(p *Page, cursorPrefix string) error {
	if p.Limit == 0 {
		p.Limit = DefaultPageSize
	}
	if p.Limit < 1 || p.Limit > MaxPageSize {
		return InvalidParam("limit", "limit must be between 1 and %d", MaxPageSize)
	}
	if p.StartingAfter != "" && !ValidID(cursorPrefix, p.StartingAfter) {
		return InvalidParam("starting_after", "starting_after must be the next_cursor of a page of this list (an id starting with %s)", cursorPrefix)
	}
	return nil
}

// checkCursor refuses a cursor that names a resource outside the listed scope.
func checkCursor(ctx context.Context, find func(context.Context) (orgID, projectID string, env Environment, err error), scope Scope, env Environment) error {
	orgID, projectID, cenv, err := find(ctx)
	if err != nil || orgID != scope.OrganizationID || cenv != env || (scope.ProjectID != "" && projectID != scope.ProjectID) {
		return InvalidParam("starting_after", "starting_after does not name an item of this list")
	}
	return nil
}

// List is one page of results.
type List[T any] struct {
	Data    []T
	HasMore bool
}

// NextCursor is the id to pass as starting_after for the next page, or "".
func NextCursor[T any](l List[T], id func(T) string) string {
	if !l.HasMore || len(l.Data) == 0 {
		return ""
	}
	return id(l.Data[len(l.Data)-1])
}
