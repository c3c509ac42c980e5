package graph

import (
	"log/slog"

	"github.com/filemill/filemill/domain"
)

// Resolver holds what every resolver needs: the domain services.
type Resolver struct {
	svc  *domain.Services
	log  *slog.Logger
	bus  EventStream // nil: no subscriptions
	live *liveLimits
}
