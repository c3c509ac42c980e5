package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
	"github.com/filemill/filemill/graph/model"
)

// What the GraphQL door adds to the console's session (door.Sessions): the few fields
// answered without credentials — those that sign a person in — and the cookies their
// answers set.

// anonymousFields are the root fields answered without credentials: those that sign a
// person in, and the invitation a link carries.
var anonymousFields = map[ast.Operation]map[string]bool{
	ast.Query:    {"invitation": true, "__typename": true},
	ast.Mutation: {"signIn": true, "setPassword": true, "acceptInvitation": true, "__typename": true},
}

// anonymousOnly reports whether a request asks only for anonymousFields: a GET's query
// string, or a POST's body, which it reads (bounded by the door's limit) and puts back
// for GraphQL.
func anonymousOnly(r *http.Request, maxTokens int) bool {
	var req struct {
		Query         string `json:"query"`
		OperationName string `json:"operationName"`
	}
	switch {
	case r.Header.Get("Upgrade") != "":
		return false
	case r.Method == http.MethodGet:
		req.Query, req.OperationName = r.URL.Query().Get("query"), r.URL.Query().Get("operationName")
	case r.Method == http.MethodPost && r.Body != nil:
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil || json.Unmarshal(body, &req) != nil {
			return false
		}
	}
	if req.Query == "" {
		return false
	}
	// Not validated here: nothing but its length is bounded before a credential.
	doc, derr := parseBounded(req.Query, maxTokens)
	if derr != nil || doc == nil || len(doc.Fragments) > 0 {
		return false
	}
	var op *ast.OperationDefinition
	if req.OperationName != "" {
		op = doc.Operations.ForName(req.OperationName)
	} else if len(doc.Operations) == 1 {
		op = doc.Operations[0]
	}
	if op == nil || len(op.SelectionSet) == 0 {
		return false
	}
	allowed := anonymousFields[op.Operation]
	for _, sel := range op.SelectionSet {
		f, ok := sel.(*ast.Field)
		if !ok || !allowed[f.Name] {
			return false
		}
	}
	return true
}

// exchange is the HTTP request and response of an operation, for the resolvers that
// set or clear the session's cookies; nil over a websocket.
type exchange struct {
	w http.ResponseWriter
	r *http.Request
}

func exchangeFrom(ctx context.Context) *exchange {
	x, _ := ctx.Value(ctxExchange).(*exchange)
	return x
}

// secure reports whether the session's cookies must be Secure.
func (s *Server) secure(r *http.Request) bool { return s.cfg.SecureCookies || door.SecureRequest(r) }

// signedIn answers a sign-in: its cookies on the response (the browser's previous
// session ended), its payload.
func (r *Resolver) signedIn(ctx context.Context, in *domain.SignedIn) (*model.SignInPayload, error) {
	x := exchangeFrom(ctx)
	if x == nil {
		return nil, domain.Errorf(domain.CodeInvalidRequest, "sign in over HTTP (POST /graphql), not over a websocket")
	}
	if c, err := x.r.Cookie(door.SessionCookie); err == nil && c.Value != "" {
		if err := r.svc.People.EndSession(ctx, c.Value); err != nil {
			return nil, err
		}
	}
	door.SetSessionCookies(x.w, in, r.server.secure(x.r))
	return &model.SignInPayload{User: in.User, Organization: in.Organization, Role: in.Membership.Role, CsrfToken: in.CSRFToken}, nil
}

// signedOut clears the session's cookies on the response.
func (r *Resolver) signedOut(ctx context.Context) {
	if x := exchangeFrom(ctx); x != nil {
		door.ClearSessionCookies(x.w, r.server.secure(x.r))
	}
}

// clientOf is the address and user agent of the request of an operation.
func clientOf(ctx context.Context) (netip.Addr, string) {
	ua := ""
	if x := exchangeFrom(ctx); x != nil {
		ua = x.r.UserAgent()
	}
	return door.ClientAddr(ctx), ua
}
