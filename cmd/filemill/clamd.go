package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/filemill/filemill/jobs/ops/scan"
)

// FILEMILL_CLAMD_START's values.
const (
	clamdStartAuto   = "auto"
	clamdStartAlways = "always"
	clamdStartNever  = "never"
)

// ownClamd starts a clamd of filemill's own when FILEMILL_CLAMD_START asks for one:
// always; or, on auto, in `serve` (the embedded default, one process) where no
// FILEMILL_CLAMD_ADDRESS is set, nothing answers at the default socket and clamd is
// installed. nil when this process uses the configured clamd.
func ownClamd(ctx context.Context, cfg *Config, roles role, log *slog.Logger) (*scan.Daemon, error) {
	switch {
	case cfg.ClamdStart == clamdStartNever:
		return nil, nil
	case cfg.ClamdStart == clamdStartAuto:
		if roles != roleAPI|roleWorker || cfg.ClamdAddressSet || scan.InstalledClamd() == "" {
			return nil, nil
		}
		probe, err := newScanner(cfg, nil, log)
		if err != nil {
			return nil, err
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if probe.Check(pctx) == nil {
			return nil, nil // the system's clamd runs
		}
	}
	d, err := scan.StartDaemon(scan.DaemonConfig{DatabaseDir: cfg.ClamdDatabaseDir, MaxStreamBytes: cfg.ClamdMaxStream,
		RunDir: filepath.Join(cfg.DataDir, "clamd"), Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("running a clamd of filemill's own (FILEMILL_CLAMD_START)", "mode", cfg.ClamdStart,
		"database", d.DatabaseDir(), "socket", d.Address())
	return d, nil
}

// reportEngines says once, when the first checks of the engines are done, which
// engine families this process runs and which it cannot, and why: on out in plain
// words for whoever started it, and in the log.
func reportEngines(ctx context.Context, checks <-chan map[string]error, notStarted map[string]error, out io.Writer, log *slog.Logger) {
	var first map[string]error
	select {
	case first = <-checks:
	case <-ctx.Done():
		return
	}
	why := maps.Clone(notStarted)
	var available []string
	for name, err := range first {
		if err != nil {
			why[name] = err
		} else {
			available = append(available, name)
		}
	}
	slices.Sort(available)
	unavailable := slices.Sorted(maps.Keys(why))
	var b strings.Builder
	fmt.Fprintf(&b, "filemill engines available: %s\n", listOrNone(available))
	if len(unavailable) > 0 {
		fmt.Fprintf(&b, "filemill engines unavailable (their operations answer 503 processing_unavailable):\n")
		reasons := map[string]string{}
		for _, name := range unavailable {
			reasons[name] = why[name].Error()
			fmt.Fprintf(&b, "  %s: %s\n", name, reasons[name])
		}
		log.Warn("engines unavailable", "engines", reasons)
	}
	_, _ = io.WriteString(out, b.String())
	log.Info("engines checked", "available", available, "unavailable", unavailable)
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
