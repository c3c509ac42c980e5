package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs"
	imageop "github.com/filemill/filemill/jobs/ops/image"
)

// BenchmarkImageConvertBounded measures what enforcing a job's bounds costs on the
// image path: image.convert of the 6000×4000 JPEG to a 1024 px WebP, one at a time,
// without bounds and with them (libvips' memory checked at every tile, the scratch
// directory measured every 50 ms as a worker's attempt does), the two sides
// alternating in one run. Reports images/s and processor time per image of each, and
// their ratio.
func BenchmarkImageConvertBounded(b *testing.B) {
	src := photoJPEG(b)
	dir := b.TempDir()
	d := benchDuration(b)
	opts := engineOptions(b, imageop.Specs(), "image.convert", `{"format":"webp","width":1024,"height":1024,"fit":"inside","quality":79}`)
	eng, err := imageop.New(imageop.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	side := func(name string, bounded bool) func(ctx context.Context, w, i int) bool {
		return func(ctx context.Context, w, i int) bool {
			work := filepath.Join(dir, fmt.Sprintf("%s-%d-%d", name, w, i))
			if err := os.Mkdir(work, 0o700); err != nil {
				return false
			}
			defer os.RemoveAll(work)
			in := domain.EngineInput{Operation: "image.convert", Options: opts, Path: src, Filename: "photo.jpg", WorkDir: work}
			if bounded {
				in.Limits = domain.JobLimits{Memory: 2 << 30, Disk: 1 << 30}
				var cancel context.CancelCauseFunc
				ctx, cancel = context.WithCancelCause(ctx)
				defer cancel(nil)
				stop := jobs.WatchScratch(work, in.Limits.Disk, cancel)
				defer stop()
			}
			out, err := eng.Run(ctx, in)
			return err == nil && len(out.Artifacts) == 1
		}
	}
	free, bounded := side("free", false), side("bounded", true)
	free(context.Background(), 0, -1) // libvips' modules load on first use
	var cpu [2]float64
	rs := Interleave(benchRounds(), d, func(d time.Duration) LoadResult {
		c0 := selfCPU()
		defer func() { cpu[0] += (selfCPU() - c0).Seconds() }()
		return Drive(context.Background(), 1, d, free)
	}, func(d time.Duration) LoadResult {
		c0 := selfCPU()
		defer func() { cpu[1] += (selfCPU() - c0).Seconds() }()
		return Drive(context.Background(), 1, d, bounded)
	})
	b.ReportMetric(rs[0].RPS(), "free-images/s")
	b.ReportMetric(rs[1].RPS(), "bounded-images/s")
	b.ReportMetric(rs[1].RPS()/rs[0].RPS(), "bounded/free")
	b.ReportMetric(cpu[0]*1000/float64(rs[0].Requests), "free-cpu-ms/image")
	b.ReportMetric(cpu[1]*1000/float64(rs[1].Requests), "bounded-cpu-ms/image")
	b.ReportMetric(float64(rs[0].P50.Milliseconds()), "free-p50-ms")
	b.ReportMetric(float64(rs[1].P50.Milliseconds()), "bounded-p50-ms")
	b.ReportMetric(float64(rs[0].Errors+rs[1].Errors), "errors")
	b.ReportMetric(0, "ns/op")
}
