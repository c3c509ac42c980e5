// Package bench holds filemill's benchmarks and load drivers. Speed is measured here,
// never in timed tests: each benchmark starts the real parts (PostgreSQL + Redis, or the
// embedded default), drives them over loopback HTTP and reports requests per second and
// latency percentiles as benchmark metrics, next to the raw tools where a comparison
// makes sense. It may import every filemill package.
package bench
