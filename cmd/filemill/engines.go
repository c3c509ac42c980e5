package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/ops/aiready"
	"github.com/filemill/filemill/jobs/ops/image"
	"github.com/filemill/filemill/jobs/ops/inspect"
	"github.com/filemill/filemill/jobs/ops/ocr"
	"github.com/filemill/filemill/jobs/ops/office"
	"github.com/filemill/filemill/jobs/ops/pagetext"
	"github.com/filemill/filemill/jobs/ops/pdf"
	"github.com/filemill/filemill/jobs/ops/pdfium"
	"github.com/filemill/filemill/jobs/ops/render"
	"github.com/filemill/filemill/jobs/ops/scan"
)

// newEngines starts the engines a worker runs: every family it has, or those
// FILEMILL_ENGINES names; scan is scanner, which the process shares with upload
// validation. Engines that render or read PDFs share one PDFium pool. The returned
// function closes them all, the shared pool last; notStarted says why each family
// this machine cannot run did not start.
func newEngines(cfg *Config, scanner *scan.Engine, log *slog.Logger) (_ map[string]domain.Engine, closeAll func(), notStarted map[string]error, _ error) {
	var pool *pdfium.Pool
	sharedPDFium := func() (*pdfium.Pool, error) {
		if pool != nil {
			return pool, nil
		}
		pc := pdfium.DefaultConfig()
		pc.CompilationCacheDir = filepath.Join(cfg.DataDir, "cache", "pdfium")
		var err error
		if pool, err = startPDFium(pc); err != nil && pc.CompilationCacheDir != "" {
			// A cache that cannot be written (a full disk) only costs start-up time.
			log.Warn("PDFium compilation cache not usable; compiling in memory", "error", err.Error())
			pc.CompilationCacheDir = ""
			pool, err = startPDFium(pc)
		}
		if err != nil {
			pool = nil
			return nil, err
		}
		return pool, nil
	}
	// The OCR engine also serves ai-ready's scanned pages: one set of loaded language data.
	var ocrEngine *ocr.Engine
	sharedOCR := func() (*ocr.Engine, error) {
		if ocrEngine != nil {
			return ocrEngine, nil
		}
		p, err := sharedPDFium()
		if err != nil {
			return nil, err
		}
		c := ocr.DefaultConfig()
		if cfg.OCRParallel > 0 {
			c.Parallel = cfg.OCRParallel
		}
		c.DPI, c.MaxPages = cfg.OCRDPI, cfg.OCRMaxPages
		c.RenderBitmap, c.PageContent, c.CountPDFPages = ocr.PDFiumRenderer(p), ocr.PDFiumContent(p), pdf.CountPages
		if ocrEngine, err = ocr.New(c); err != nil {
			return nil, err
		}
		return ocrEngine, nil
	}
	all := map[string]func() (domain.Engine, error){
		"inspect": func() (domain.Engine, error) { return inspect.New(inspect.DefaultConfig()) },
		"pdf": func() (domain.Engine, error) {
			c := pdf.DefaultConfig()
			c.Logger = log
			return pdf.New(c)
		},
		"office": func() (domain.Engine, error) {
			p, err := sharedPDFium()
			if err != nil {
				return nil, err
			}
			c := office.DefaultConfig()
			if cfg.OfficeInstances > 0 {
				c.Instances = cfg.OfficeInstances
			}
			c.ConversionsPerInstance, c.Timeout, c.QueueTimeout = cfg.OfficeConversions, cfg.OfficeTimeout, cfg.OfficeQueueTimeout
			c.MemoryLimit, c.JobMemoryLimit, c.Sandbox = cfg.OfficeMemoryLimit, cfg.Domain.JobMemory, cfg.OfficeSandbox
			c.RenderPage, c.CountPDFPages = renderPageWith(p), pdf.CountPages
			return office.New(c)
		},
		"ocr": func() (domain.Engine, error) { return sharedOCR() },
		"ai": func() (domain.Engine, error) {
			p, err := sharedPDFium()
			if err != nil {
				return nil, err
			}
			o, err := sharedOCR()
			if err != nil {
				return nil, err
			}
			c := aiready.DefaultConfig()
			c.Pool = p
			c.OCRPage = func(ctx context.Context, pdfPath string, page int, memory int64) (*pagetext.Page, error) {
				wp, err := o.RecognizePage(ctx, pdfPath, page, memory)
				if err != nil {
					return nil, err
				}
				words := make([]aiready.Word, len(wp.Words))
				for i, w := range wp.Words {
					words[i] = aiready.Word{Text: w.Text, BBox: w.BBox}
				}
				return aiready.PageFromWords(page, wp.Width, wp.Height, wp.DPI, words), nil
			}
			return aiready.New(c)
		},
		"image": func() (domain.Engine, error) {
			c := image.DefaultConfig()
			c.Threads = max(1, runtime.NumCPU()/engineSettings(cfg)("image").Concurrency)
			c.Logger = log
			return image.New(c)
		},
		"scan": func() (domain.Engine, error) { return scanner, nil },
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
	notStarted = map[string]error{}
	closeAll = func() {
		for _, e := range out {
			if c, ok := e.(io.Closer); ok {
				_ = c.Close()
			}
		}
		if ocrEngine != nil && out["ocr"] == nil {
			_ = ocrEngine.Close()
		}
		if pool != nil {
			_ = pool.Close()
		}
	}
	for _, name := range cfg.Engines {
		if all[name] == nil {
			return nil, nil, nil, fmt.Errorf("FILEMILL_ENGINES: no engine family %q", name)
		}
	}
	for name, start := range all {
		if cfg.Engines != nil && !slices.Contains(cfg.Engines, name) {
			continue
		}
		e, err := start()
		if err != nil {
			if cfg.Engines != nil {
				closeAll()
				return nil, nil, nil, fmt.Errorf("engine %s: %w", name, err)
			}
			// An engine this machine cannot run leaves its operations unavailable; the
			// others run.
			log.Error("engine not started", "engine", name, "error", err.Error())
			notStarted[name] = err
			continue
		}
		out[name] = e
	}
	return out, closeAll, notStarted, nil
}

// startPDFium starts a PDFium pool: compiled now (from the cache after the first
// start), not in a first job or the first engine check.
func startPDFium(c pdfium.Config) (*pdfium.Pool, error) {
	p, err := pdfium.New(c)
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

// renderPageWith renders PDF pages for the engines that read them as images, on the
// shared PDFium pool.
func renderPageWith(p *pdfium.Pool) func(ctx context.Context, pdfPath string, page, dpi int, format, out string) error {
	return func(ctx context.Context, pdfPath string, page, dpi int, format, out string) error {
		_, err := p.RenderPage(ctx, pdfPath, page, pdfium.ImageOptions{RenderOptions: pdfium.RenderOptions{DPI: float64(dpi)}, Format: format}, out)
		return err
	}
}

// engineSettings returns a family's settings for this worker: the defaults, with
// FILEMILL_ENGINE_CONCURRENCY's word on how many run at once.
func engineSettings(cfg *Config) func(family string) jobs.FamilySettings {
	return func(family string) jobs.FamilySettings {
		fs := jobs.DefaultFamilySettings(family, runtime.NumCPU(), cfg.WorkerPollInterval)
		if n, ok := cfg.EngineConcurrency[family]; ok {
			fs.Concurrency = n
		}
		return fs
	}
}

// newScanner is the scan engine on the configured clamd, or on daemon, a clamd of
// filemill's own, when set; the API process uses it for validation.scan at completion.
func newScanner(cfg *Config, daemon *scan.Daemon, log *slog.Logger) (*scan.Engine, error) {
	c := scan.DefaultConfig()
	c.ClamdAddress, c.MaxStreamBytes, c.Logger, c.Daemon = cfg.ClamdAddress, cfg.ClamdMaxStream, log, daemon
	e, err := scan.New(c)
	if err != nil {
		return nil, fmt.Errorf("FILEMILL_CLAMD_ADDRESS: %w", err)
	}
	return e, nil
}
