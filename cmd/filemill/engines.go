package main

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/inspect"
	"github.com/filemill/filemill/jobs/ops/probe"
)

// newEngines starts the engines a worker runs: every family it has, or those
// FILEMILL_ENGINES names.
func newEngines(cfg *Config) (map[string]domain.Engine, error) {
	all := map[string]func() (domain.Engine, error){
		"inspect": func() (domain.Engine, error) { return inspect.New(inspect.DefaultConfig()), nil },
	}
	out := map[string]domain.Engine{}
	for name, start := range all {
		if cfg.Engines != nil && !slices.Contains(cfg.Engines, name) {
			continue
		}
		e, err := start()
		if err != nil {
			return nil, fmt.Errorf("engine %s: %w", name, err)
		}
		out[name] = e
	}
	for _, name := range cfg.Engines {
		if all[name] == nil {
			return nil, fmt.Errorf("FILEMILL_ENGINES: no engine family %q", name)
		}
	}
	return out, nil
}

// defaultEngineConcurrency is how many jobs of a family a worker runs at once, per CPU,
// unless FILEMILL_ENGINE_CONCURRENCY says otherwise: light work more, heavy work (a
// LibreOffice instance or a multi-page OCR per job) less.
var defaultEngineConcurrency = map[string]float64{"inspect": 2, "pdf": 1, "render": 1, "image": 1, "scan": 1, "office": 1, "ocr": 0.5}

// engineConcurrency returns a family's concurrency for this worker.
func engineConcurrency(cfg *Config) func(family string) int {
	return func(family string) int {
		if n, ok := cfg.EngineConcurrency[family]; ok {
			return n
		}
		per, ok := defaultEngineConcurrency[family]
		if !ok {
			per = 1
		}
		return max(1, int(per*float64(runtime.NumCPU())))
	}
}

// newProber counts pages at completion and verifies engine outputs.
func newProber() *probe.Prober {
	return probe.New(probe.DefaultConfig())
}
