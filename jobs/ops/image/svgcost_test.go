package image_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	imageop "github.com/filemill/filemill/jobs/ops/image"
)

// filterBomb is the SVG filter bomb: 2 KB, 9000×9000, fifty feGaussianBlur of
// stdDeviation 500 chained in one filter over the whole picture. librsvg computes
// each filter over its whole region for each of libvips' tiles, in one call: hours
// of a core and gigabytes.
func filterBomb() []byte {
	return []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="9000" height="9000"><filter id="f">` +
		strings.Repeat(`<feGaussianBlur stdDeviation="500"/>`, 50) +
		`</filter><rect width="9000" height="9000" fill="red" filter="url(#f)"/></svg>`)
}

func svgDoc(w, h int, body string) []byte {
	return []byte(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="%d" height="%d">%s</svg>`, w, h, body))
}

// Documents that would cost more than the limits allow are refused before anything is
// drawn, each naming what it exceeds; ordinary ones with filters convert.
func TestSVGCostIsBoundedBeforeRendering(t *testing.T) {
	t.Parallel()
	e := engine(t)
	blur := func(sd string) string { return `<feGaussianBlur stdDeviation="` + sd + `"/>` }
	deep := strings.Repeat(`<g>`, 70) + `<rect width="10" height="10"/>` + strings.Repeat(`</g>`, 70)
	groups := strings.Repeat(`<g opacity="0.9">`, 30) + `<rect width="10" height="10"/>` + strings.Repeat(`</g>`, 30)
	for _, tc := range []struct {
		name string
		svg  []byte
		opts map[string]any
		says string
	}{
		{"FilterBomb", filterBomb(), nil, "blurs by 500 pixels"},
		{"ManyPrimitivesOverAWideRender", svgDoc(4000, 4000, `<filter id="f">`+strings.Repeat(blur("4"), 20)+
			`</filter><rect width="4000" height="4000" filter="url(#f)"/>`), nil, "applies filters 20 times over 4000×4000"},
		{"OneFilterUsedByManyElements", svgDoc(2000, 2000, `<filter id="f">`+blur("3")+`</filter>`+
			strings.Repeat(`<circle cx="50" cy="50" r="40" filter="url(#f)"/>`, 60)), nil, "applies filters 60 times"},
		{"RepeatedByUse", svgDoc(2000, 2000, `<defs><filter id="f">`+blur("3")+`</filter>`+
			`<g id="a"><rect width="10" height="10" filter="url(#f)"/></g>`+
			`<g id="b">`+strings.Repeat(`<use href="#a"/>`, 10)+`</g></defs>`+
			strings.Repeat(`<use xlink:href="#b"/>`, 10)), nil, "applies filters 111 times"},
		{"FilterDefinedAfterUse", svgDoc(3000, 3000, strings.Repeat(`<rect width="9" height="9" filter="url(#late)"/>`, 12)+
			`<filter id="late">`+blur("2")+blur("2")+`</filter>`), nil, "applies filters 24 times"},
		{"BlurScaledByTheViewBox", []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="3000" height="3000" viewBox="0 0 30 30">` +
			`<filter id="f">` + blur("5") + `</filter><rect width="30" height="30" filter="url(#f)"/></svg>`), nil, "blurs by 500 pixels"},
		{"WideMorphology", svgDoc(1500, 1500, `<filter id="f"><feMorphology operator="dilate" radius="40"/></filter>`+
			`<rect width="1500" height="1500" filter="url(#f)"/>`), nil, "over 1500×1500"},
		{"Nesting", svgDoc(100, 100, deep), nil, "more than 64 deep"},
		{"NestedGroups", svgDoc(100, 100, groups), nil, "more than 24 deep"},
		{"UseCycle", svgDoc(100, 100, `<filter id="f">`+blur("1")+`</filter><g id="a"><rect width="5" height="5" filter="url(#f)"/><use href="#b"/></g>`+
			`<g id="b"><use href="#a"/></g>`), nil, "draws itself"},
		{"Entities", []byte(`<!DOCTYPE svg [<!ENTITY r "<rect width='9' height='9'/>">]>` + string(svgDoc(100, 100, `&r;&r;`))), nil, "entities"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := convertWith(t, e, "bomb.svg", tc.svg, mergeOpts(map[string]any{"format": "png"}, tc.opts))
			requireCode(t, err, domain.CodeUnsupportedInput)
			require.Contains(t, err.Error(), tc.says)
			require.Less(t, time.Since(start), 5*time.Second, "refused before rendering")
		})
	}

	t.Run("ThumbnailOfTheBombIsCheap", func(t *testing.T) {
		t.Parallel()
		// The same document made small costs little: what is rendered is what counts.
		doc := svgDoc(9000, 9000, `<filter id="f">`+blur("30")+blur("30")+`</filter><rect width="9000" height="9000" fill="red" filter="url(#f)"/>`)
		r := convert(t, "small.svg", doc, map[string]any{"format": "png", "width": 300})
		require.Equal(t, [2]int{300, 300}, dims(decode(t, r.data)))
	})
	t.Run("OrdinaryFiltersConvert", func(t *testing.T) {
		t.Parallel()
		doc := svgDoc(800, 600, `<filter id="shadow"><feGaussianBlur stdDeviation="4"/><feOffset dx="3" dy="3"/></filter>`+
			`<rect x="100" y="100" width="400" height="300" fill="#36c" filter="url(#shadow)"/>`+
			`<g opacity="0.5"><circle cx="400" cy="300" r="100" fill="#c63" style="filter:url(#shadow)"/></g>`)
		r := convert(t, "ok.svg", doc, map[string]any{"format": "png"})
		require.Equal(t, [2]int{800, 600}, dims(decode(t, r.data)))
	})
}

func mergeOpts(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// cpuTime is the CPU time this process has used, all its threads together.
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A render libvips can stop (past the pre-check: its limits are lifted here) stops at
// its deadline: Run returns within a tile's work of it (in CPU time), and when it has returned
// nothing of it runs on. The caller's slot is freed when Run returns, so this is what
// keeps a slot from being freed while the render goes on.
func TestRenderStopsAtItsDeadline(t *testing.T) {
	// Not parallel: the process's CPU time is measured.
	cfg := imageop.DefaultConfig()
	cfg.SVG = imageop.SVGLimits{MaxFilterWork: math.MaxFloat64, MaxBlur: math.MaxFloat64}
	e, err := imageop.New(cfg)
	require.NoError(t, err)
	// 10000×10000: 25 tiles, each drawing the whole document again, its one filter
	// over a 1500×1500 box each time (a fraction of a second per tile; the whole
	// render would take many seconds).
	doc := svgDoc(10000, 10000, `<filter id="f"><feGaussianBlur stdDeviation="12"/></filter>`+
		`<rect x="4000" y="4000" width="1500" height="1500" fill="#c33" filter="url(#f)"/>`)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.svg")
	require.NoError(t, os.WriteFile(in, doc, 0o600))
	work := filepath.Join(dir, "work")
	require.NoError(t, os.Mkdir(work, 0o700))
	opts := engineOptions(t, imageop.OperationConvert, `{"format":"png","effort":9}`)

	const deadline = 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	spent := cpuTime(t)
	out, err := e.Run(ctx, domain.EngineInput{Operation: imageop.OperationConvert, Options: opts, Path: in,
		Filename: "in.svg", Format: domain.Detect(doc), WorkDir: work})
	spent = cpuTime(t) - spent
	require.Nil(t, out)
	require.ErrorIs(t, err, context.DeadlineExceeded, "stopped by its deadline, not finished")
	// Judged in CPU time, which a busy machine does not stretch as it does the wall
	// clock: the whole render takes ~120 s of CPU here, a stopped one ~5 (the deadline's
	// share and the tiles under way).
	require.Less(t, spent, 30*time.Second, "stopped within a tile's work of its deadline")
	entries, _ := os.ReadDir(work)
	require.Empty(t, entries, "nothing left behind")

	// Nothing runs on: over the next second the process uses next to no CPU (the
	// render used every core it was given until it stopped).
	before := cpuTime(t)
	window := time.Now()
	time.Sleep(time.Second) // the interval CPU time is measured over
	used := cpuTime(t) - before
	require.Less(t, float64(used)/float64(time.Since(window)), 0.15, "CPU used in the second after Run returned: %s", used)
}
