package graph

import (
	"log/slog"
	"time"

	"github.com/filemill/filemill/domain"
)

// Resolver holds what every resolver needs: the domain services.
type Resolver struct {
	svc    *domain.Services
	server *Server // the door: its cookies
	log    *slog.Logger
	bus    EventStream // nil: no subscriptions
	live   *liveLimits
	// resync is how often a subscription reads its subject again, in case the stream
	// lost a change.
	resync time.Duration
}
