package office_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/memcg/memcgtest"
	"github.com/filemill/filemill/jobs/ops/office"
	"github.com/filemill/filemill/jobs/ops/office/officetest"
)

// A document that takes its instance past the job's memory bound fails the job
// resource_limit_exceeded, not corrupted_file, and is not tried on another instance;
// the instance is replaced as a crashed one is, and the pool converts the next
// document.
func TestConversionPastTheJobMemoryLimitFails(t *testing.T) {
	// Instances get their group only where one can be made: CI must have one.
	require.NoError(t, memcgtest.Open(t).Close())
	t.Parallel()
	const limit = 200 << 20
	e := newEngine(t, func(c *office.Config) { c.JobMemoryLimit = limit })
	small := officetest.DOCX(t, [][]string{{"within its bound"}})
	_, err := convert(t, e, "warm.docx", small, "pdf")
	require.NoError(t, err, "an instance starts and converts within %d MiB", limit>>20)

	start := time.Now()
	_, err = convert(t, e, "cells.ods", officetest.RepeatedCellsODS(t, 1_000_000, 1000), "pdf")
	took := time.Since(start)
	requireCode(t, err, domain.CodeResourceLimitExceeded)
	le := domain.AsError(err)
	require.Equal(t, domain.LimitMemory, le.Details["limit"])
	require.EqualValues(t, limit, le.Details["bound_bytes"])
	t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)

	waitFor(t, "the instance to be replaced", func() bool {
		st := e.Instances()[0]
		return st.Running && !st.Restarting
	})
	require.Equal(t, 1, e.Instances()[0].Restarts, "replaced once: the document was not tried again")
	out, err := convert(t, e, "after.docx", small, "pdf")
	require.NoError(t, err)
	require.Contains(t, pdfText(t, out.Artifacts[0].Path, 0), "within its bound")
}
