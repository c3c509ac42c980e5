// Package enginetest helps the engines' tests run an engine directly, as a worker
// would: options decoded and checked by the registry's rules first.
package enginetest

import (
	"encoding/json"
	"testing"

	"github.com/filemill/filemill/domain"
)

// Options decodes raw options for the operation op among specs as the registry does,
// failing the test when they are refused.
func Options(tb testing.TB, specs []domain.OperationSpec, op, raw string) any {
	tb.Helper()
	o, err := domain.DecodeOptions(specs, op, json.RawMessage(raw))
	if err != nil {
		tb.Fatal(err)
	}
	return o
}
