// Package chaos is the fault campaign for a real deployment: two `filemill api` and
// three `filemill worker` processes on a PostgreSQL, a Redis and a MinIO of its own,
// under a mixed load, while seeded random faults kill and cut what they run on. Once the
// faults stop and the load drains it checks the invariants the service promises and
// reports the time to recover from each kind of fault.
//
// It is a test behind the build tag chaos, so `go test ./...` leaves it out:
//
//	make chaos CHAOS_DURATION=10m CHAOS_SEED=42
//	go test -tags chaos -run TestChaos -v -timeout 60m ./bench/chaos
//
// CHAOS_DURATION is how long faults are injected (default 60s); CHAOS_SEED fixes the
// schedule of faults (default: from the clock; the seed is printed either way).
//
// BenchmarkScaleOut runs on the same deployment, without faults, to measure throughput
// and CPU per job with 1–3 worker and 1–2 api processes (`make scaleout`; see its
// comment for the SCALE_* settings).
package chaos
