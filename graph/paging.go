package graph

import (
	"encoding/base64"
	"strings"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/graph/model"
)

// Cursors are opaque to clients: the id of an edge's item, encoded. The domain's
// starting_after does the rest, with the same checks as REST's.
const cursorPrefix = "c1:"

func encodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + id))
}

// pageOf turns first and after into the domain's page. Codes: invalid_request (after).
func pageOf(first *int, after *string) (domain.Page, error) {
	var p domain.Page
	if first != nil {
		p.Limit = *first
		if p.Limit == 0 {
			// 0 is out of range, as limit=0 is in REST, not "the default".
			return p, domain.InvalidParam("first", "first must be between 1 and %d", domain.MaxPageSize)
		}
	}
	if after != nil && *after != "" {
		raw, err := base64.RawURLEncoding.DecodeString(*after)
		if err != nil || !strings.HasPrefix(string(raw), cursorPrefix) {
			return p, domain.InvalidParam("after", "after must be an endCursor of this list")
		}
		p.StartingAfter = strings.TrimPrefix(string(raw), cursorPrefix)
	}
	return p, nil
}

// pageInfo is the page information of a domain list.
func pageInfo[E any](l domain.List[E], id func(E) string) *model.PageInfo {
	pi := &model.PageInfo{HasNextPage: l.HasMore}
	if len(l.Data) > 0 {
		c := encodeCursor(id(l.Data[len(l.Data)-1]))
		pi.EndCursor = &c
	}
	return pi
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func ptr[T any](v T) *T { return &v }

// listParams are REST's names of the page parameters and GraphQL's.
var listParams = map[string]string{"limit": "first", "starting_after": "after"}

// pageError names GraphQL's page arguments in an error about REST's.
func pageError(err error) error {
	if derr := domain.AsError(err); derr != nil {
		if name, ok := listParams[derr.Param]; ok {
			c := *derr
			c.Param = name
			c.Message = strings.ReplaceAll(c.Message, derr.Param, name)
			return &c
		}
	}
	return err
}
