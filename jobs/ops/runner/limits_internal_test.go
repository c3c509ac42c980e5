package runner

import (
	"context"
	"errors"
	"testing"
)

// Without util-linux's prlimit the limits are set with prlimit(2) right after start;
// they must still hold for a child that allocates after its start-up.
func TestMemoryLimitHoldsWithoutThePrlimitProgram(t *testing.T) {
	saved := prlimitPath
	prlimitPath = ""
	defer func() { prlimitPath = saved }()
	err := Run(context.Background(), Cmd{
		Path:   "/usr/bin/python3",
		Args:   []string{"-c", "b = bytearray(400 << 20)"},
		Limits: Limits{Memory: 200 << 20},
	})
	var xe *ExitError
	if !errors.As(err, &xe) || xe.Code != 1 {
		t.Fatalf("want a MemoryError exit, got %v", err)
	}
}
