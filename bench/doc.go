// Package bench holds filemill's benchmarks and load drivers. Speed is measured here,
// never in timed tests: each benchmark starts the real parts (PostgreSQL + Redis, or the
// embedded default), drives them over loopback HTTP and reports requests per second and
// latency percentiles as benchmark metrics, next to the raw tools where a comparison
// makes sense. It may import every filemill package.
//
// Run one with, for example,
//
//	go test -run '^$' -bench BenchmarkAuthenticatedRead -benchtime 1x ./bench/
//
// (-benchtime 1x: each benchmark is time-boxed by its own load run). BENCH_WORKERS sets
// the number of closed-loop clients (default 8) to trace the throughput/latency curve;
// BENCH_PG_POOL caps the PostgreSQL pool of the stack under test. BenchmarkCreateJob runs
// a worker beside the requests (its default settings, or BENCH_JOB_WORKERS jobs at a
// time; 0: none).
// FILEMILL_BENCH_TRACES=on records every span and exports it over OTLP/HTTP to a
// collector stub in the process (console: the stdout exporter's JSON, discarded), for
// the cost of tracing against a run without it.
// BENCH_PHASE_TABLE=1 turns tracing on into memory and prints, for the jobs
// BenchmarkBookkeepingInFlight follows, where each millisecond between the request and
// the client seeing the outcome went, segment by segment between the spans.
//
// bench/chaos is the fault campaign (`make chaos`): a deployment of separate processes
// under load and random faults, its invariants checked and its recovery times reported;
// its BenchmarkScaleOut (`make scaleout`) measures the same deployment's throughput and
// CPU per job as worker and api processes are added.
package bench
