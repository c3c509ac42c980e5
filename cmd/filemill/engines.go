package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/inspect"
	"github.com/filemill/filemill/jobs/ops/pdf"
	"github.com/filemill/filemill/jobs/ops/pdfium"
	"github.com/filemill/filemill/jobs/ops/probe"
	"github.com/filemill/filemill/jobs/ops/render"
)

// newEngines starts the engines a worker runs: every family it has, or those
// FILEMILL_ENGINES names. Engines that render or read PDFs share one PDFium pool.
// The returned function closes them all, the shared pool last.
func newEngines(cfg *Config, log *slog.Logger) (map[string]domain.Engine, func(), error) {
	var pool *pdfium.Pool
	sharedPDFium := func() (*pdfium.Pool, error) {
		if pool != nil {
			return pool, nil
		}
		pc := pdfium.DefaultConfig()
		pc.CompilationCacheDir = filepath.Join(cfg.DataDir, "cache", "pdfium")
		var err error
		if pool, err = pdfium.New(pc); err != nil {
			return nil, err
		}
		return pool, nil
	}
	all := map[string]func() (domain.Engine, error){
		"inspect": func() (domain.Engine, error) { return inspect.New(inspect.DefaultConfig()), nil },
		"pdf": func() (domain.Engine, error) {
			c := pdf.DefaultConfig()
			c.Logger = log
			return pdf.New(c)
		},
		"render": func() (domain.Engine, error) {
			p, err := sharedPDFium()
			if err != nil {
				return nil, err
			}
			c := render.DefaultConfig()
			c.Pool = p
			return render.New(c)
		},
	}
	out := map[string]domain.Engine{}
	closeAll := func() {
		for _, e := range out {
			if c, ok := e.(interface{ Close() error }); ok {
				_ = c.Close()
			}
		}
		if pool != nil {
			_ = pool.Close()
		}
	}
	for _, name := range cfg.Engines {
		if all[name] == nil {
			return nil, nil, fmt.Errorf("FILEMILL_ENGINES: no engine family %q", name)
		}
	}
	for name, start := range all {
		if cfg.Engines != nil && !slices.Contains(cfg.Engines, name) {
			continue
		}
		e, err := start()
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("engine %s: %w", name, err)
		}
		out[name] = e
	}
	return out, closeAll, nil
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
