package ocr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	_ "image/gif" // pixel limits are read from the headers before tesseract decodes
	_ "image/jpeg"
	_ "image/png"

	pdfapi "github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/imagepdf"
	"github.com/filemill/filemill/jobs/ops/internal/memcg"
	"github.com/filemill/filemill/jobs/ops/internal/pdfpages"
	"github.com/filemill/filemill/jobs/ops/internal/vips"
)

func init() { pdfapi.DisableConfigDir() }

// EngineName is the engine family: its queue and its unit of availability.
const EngineName = "ocr"

// Output kinds of options.outputs.
const (
	OutputText  = "text"
	OutputWords = "words"
	OutputPDF   = "pdf"
)

// RenderPageFunc renders one page (1-based) of a PDF at dpi into out, in format
// png, jpeg or webp. The platform plugs the PDF engine's renderer in here.
type RenderPageFunc func(ctx context.Context, pdfPath string, page, dpi int, format, out string) error

// RenderBitmapFunc renders one page (1-based) of a PDF at dpi into memory.
type RenderBitmapFunc func(ctx context.Context, pdfPath string, page, dpi int) (*Bitmap, error)

// PageContentFunc reports what one page (1-based) of a PDF draws.
type PageContentFunc func(ctx context.Context, pdfPath string, page int) (*PageContent, error)

// PageContent is what a PDF page draws, as far as recognition needs to know.
type PageContent struct {
	// Text is true when the page draws text of its own: its searchable PDF page keeps
	// that text and gets no second, recognised layer.
	Text bool
	// Scan is the page's image when the page is one upright image covering it (a
	// scan): recognised as it is stored, without rendering the page. Nil otherwise.
	Scan *ScanImage
}

// ScanImage is a scanned page's image: a JPEG's bytes as stored, or decoded pixels.
type ScanImage struct {
	JPEG   []byte
	Bitmap *Bitmap
	// Width and Height are its samples as stored.
	Width, Height int
	// Matrix maps the image's unit square onto the page (PDF user space).
	Matrix [6]float64
}

// Scans are read as stored between these resolutions; outside them the page is
// rendered at DPI (tesseract reads small print poorly under 150 dpi).
const (
	minScanDPI = 150
	maxScanDPI = 1200
)

// Config bounds one OCR run. Zero fields take the defaults.
type Config struct {
	// TessdataDir holds the *.traineddata language files; default $TESSDATA_PREFIX or
	// Debian's /usr/share/tesseract-ocr/5/tessdata.
	TessdataDir string
	// Parallel is how many pages of one job are recognised at once, each on one core
	// (the job's share of cores); default the number of cores.
	Parallel int
	// MaxIdle is how many loaded tesseract instances are kept between jobs (each holds
	// its language data, ~30–100 MB); default Parallel.
	MaxIdle int
	// DPI is the resolution PDF pages are rendered at for recognition; default 300.
	DPI int
	// MaxPages refuses longer PDFs with unsupported_input; default 500.
	MaxPages int
	// MaxPixels refuses larger page images with unsupported_input; default 100 MP.
	MaxPixels int64
	// RenderPage renders a PDF page for recognition into an image file. RenderBitmap,
	// when set, is used instead: the pixels reach tesseract without being encoded into
	// a file and decoded again. Without either, PDF input is unsupported.
	// CountPDFPages counts a PDF's pages; nil uses pdfcpu.
	RenderPage    RenderPageFunc
	RenderBitmap  RenderBitmapFunc
	CountPDFPages func(ctx context.Context, pdfPath string) (int, error)
	// PageContent, when set, tells scanned pages apart: their image is recognised as
	// stored (rendering a 300 dpi page costs about half a CPU-second), and pages that
	// already draw text get no second text layer.
	PageContent PageContentFunc
	// InProcess recognises pages in this process. Otherwise, where a memory cgroup can
	// be made, each tesseract instance runs in a helper process (this program started
	// again) in a cgroup of its own, and a page's memory is bounded by the kernel;
	// in this process it is bounded by an estimate from its pixels.
	InProcess bool
}

// DefaultConfig returns the settings used when nothing is configured.
func DefaultConfig() Config {
	dir := os.Getenv("TESSDATA_PREFIX")
	if dir == "" {
		dir = "/usr/share/tesseract-ocr/5/tessdata"
	}
	return Config{
		TessdataDir: dir,
		Parallel:    runtime.NumCPU(),
		DPI:         300,
		MaxPages:    500,
		MaxPixels:   100_000_000,
	}
}

// Validate names the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Parallel < 0:
		return errors.New("ocr: Parallel must not be negative")
	case c.MaxIdle < 0:
		return errors.New("ocr: MaxIdle must not be negative")
	case c.DPI != 0 && (c.DPI < 70 || c.DPI > 600):
		return errors.New("ocr: DPI must be within 70–600")
	case c.MaxPages < 0, c.MaxPixels < 0:
		return errors.New("ocr: limits must not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.TessdataDir == "" {
		c.TessdataDir = d.TessdataDir
	}
	if c.Parallel <= 0 {
		c.Parallel = d.Parallel
	}
	if c.MaxIdle <= 0 {
		c.MaxIdle = c.Parallel
	}
	if c.DPI <= 0 {
		c.DPI = d.DPI
	}
	if c.MaxPages <= 0 {
		c.MaxPages = d.MaxPages
	}
	if c.MaxPixels <= 0 {
		c.MaxPixels = d.MaxPixels
	}
	return c
}

// Options are the options of ocr.
type Options struct {
	Languages []string `json:"languages,omitempty" doc:"Languages of the text, as tesseract names them (eng, deu, fra, chi_sim, …), from the language data installed on the workers; default [\"eng\"]." schema:"maxItems=8"`
	Outputs   []string `json:"outputs,omitempty" doc:"What to produce: text (plain text, pages separated by form feeds), words (JSON: each word with its box and confidence), pdf (a searchable PDF: a PDF input keeps its pages, images and content, with an invisible text layer added where a page has no text of its own; an image becomes a page of its displayed size, a JPEG embedded as it came, other images as JPEG, or CCITT G4 when black and white); default [\"text\"]." schema:"enum=text|words|pdf,maxItems=3"`
}

var langName = regexp.MustCompile(`^[a-z]{3}(_[a-z]+)*$`)

// Validate checks the shapes of the options; whether a language is installed is
// checked against what the workers announce when the job is planned, and on the
// worker again.
func (o Options) Validate() error {
	for i, l := range o.Languages {
		if !langName.MatchString(l) {
			return domain.InvalidParam("options.languages", "languages[%d] %q is not a tesseract language name (such as eng or chi_sim)", i, l)
		}
		if slices.Contains(o.Languages[:i], l) {
			return domain.InvalidParam("options.languages", "languages lists %q twice", l)
		}
	}
	for i, out := range o.Outputs {
		switch out {
		case OutputText, OutputWords, OutputPDF:
		default:
			return domain.InvalidParam("options.outputs", "outputs[%d] must be text, words or pdf", i)
		}
		if slices.Contains(o.Outputs[:i], out) {
			return domain.InvalidParam("options.outputs", "outputs lists %q twice", out)
		}
	}
	if o.Outputs != nil && len(o.Outputs) == 0 {
		return domain.InvalidParam("options.outputs", "outputs must name at least one of text, words, pdf")
	}
	return nil
}

// InputFormats are the inputs ocr takes.
var InputFormats = []string{"pdf", "image/png", "image/jpeg", "image/tiff", "image/bmp", "image/gif", "image/webp"}

// Specs declares the operations the engine serves.
func Specs() []domain.OperationSpec {
	return []domain.OperationSpec{{
		Name:   "ocr",
		Engine: EngineName,
		Description: "Recognises text in scans and images with tesseract: plain text, words with boxes and " +
			"confidences, and a searchable PDF. Images are read as displayed (EXIF orientation applied); a scanned " +
			"PDF page's image is read as stored, other PDF pages are rendered; priced per page.",
		Options:      Options{},
		InputFormats: InputFormats,
		Price:        domain.Price{Credits: 2, Per: domain.PerPage},
		Plan:         plan,
	}}
}

// Engine is the OCR engine. It is safe for concurrent use; Close frees the loaded
// language data.
type Engine struct {
	cfg  Config
	pool apiPool
	mem  *memcg.Parent // the helpers' groups' parent; nil when pages run in this process

	fontOnce sync.Once
	font     []byte // tesseract's glyph-less font, for text layers
}

var _ domain.Engine = (*Engine)(nil)

// New returns an OCR engine. Language data is loaded on first use and kept.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := loadTesseract(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, pool: apiPool{max: cfg.MaxIdle, idle: map[string][]recognizer{}}}
	e.pool.start = func(langs string) (recognizer, error) { return newAPI(cfg.TessdataDir, langs) }
	if cfg.InProcess {
		return e, nil
	}
	exe, err := os.Executable()
	if err == nil {
		e.mem, err = memcg.Open()
	}
	if err != nil {
		slog.Warn("ocr: pages are recognised in the worker, their memory bounded by an estimate, not measured: "+
			"a measured bound needs root and a memory cgroup (cgroup v2 with the memory controller, or a v1 memory hierarchy)", "error", err.Error())
		return e, nil
	}
	e.pool.start = func(langs string) (recognizer, error) { return startHelper(exe, cfg.TessdataDir, langs, e.mem) }
	return e, nil
}

// Isolated reports whether pages are recognised in helper processes, each bounded by
// its memory cgroup.
func (e *Engine) Isolated() bool { return e.mem != nil }

// Close frees the idle tesseract instances.
func (e *Engine) Close() error {
	e.pool.close()
	if e.mem != nil {
		return e.mem.Close()
	}
	return nil
}

// Version is libtesseract's version, e.g. "tesseract 5.3.0".
func (e *Engine) Version() string { return "tesseract " + tessVersion() }

// Languages lists the installed language data (osd, the script detector, excluded).
func (e *Engine) Languages() ([]string, error) {
	ents, err := os.ReadDir(e.cfg.TessdataDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ent := range ents {
		if l, ok := strings.CutSuffix(ent.Name(), ".traineddata"); ok && l != "osd" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Check reports whether tesseract can load English (the default language) here.
func (e *Engine) Check(ctx context.Context) error {
	langs, err := e.Languages()
	if err != nil || !slices.Contains(langs, "eng") {
		return fmt.Errorf("ocr: no English language data in %s (apt-get install tesseract-ocr-eng)", e.cfg.TessdataDir)
	}
	a, err := e.pool.get("eng")
	if err != nil {
		return err
	}
	e.pool.put(a)
	return nil
}

// ThreadLimit is OpenMP's thread limit in this process. Recognition runs each page
// single-threaded regardless; OMP_THREAD_LIMIT=1 in the worker's environment keeps
// other OpenMP users in the process from oversubscribing the cores too.
func (e *Engine) ThreadLimit() int { return ompThreadLimit() }

// WordsPage is one page of words.json.
type WordsPage struct {
	Page   int    `json:"page"`
	Width  int    `json:"width"`  // of the recognised image, in pixels
	Height int    `json:"height"` // idem
	DPI    int    `json:"dpi,omitempty"`
	Words  []Word `json:"words"`
}

// WordsReport is the content of words.json.
type WordsReport struct {
	Languages []string    `json:"languages"`
	Pages     []WordsPage `json:"pages"`
}

// Run recognises in.Path (an image, or a PDF page by page).
//
// Errors: invalid_request (options.languages) for a language not installed;
// unsupported_input for a PDF over MaxPages, an image over MaxPixels, PDF input
// without a renderer; corrupted_file for an unreadable image or PDF; encrypted_file
// for a password-protected PDF; output_validation_failed when the searchable PDF does
// not verify; ctx's error when it ends first.
func (e *Engine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	if in.Operation != "ocr" {
		return nil, fmt.Errorf("ocr: unknown operation %q", in.Operation)
	}
	o, err := domain.EngineOptions[Options](in)
	if err != nil {
		return nil, err
	}
	if len(o.Languages) == 0 {
		o.Languages = []string{"eng"}
	}
	if len(o.Outputs) == 0 {
		o.Outputs = []string{OutputText}
	}
	installed, err := e.Languages()
	if err != nil {
		return nil, fmt.Errorf("ocr: language data: %w", err)
	}
	for _, l := range o.Languages {
		if !slices.Contains(installed, l) {
			return nil, domain.InvalidParam("options.languages", "language %q is not installed (installed: %s)", l, strings.Join(installed, ", "))
		}
	}

	j := &job{e: e, in: in, langs: strings.Join(o.Languages, "+"),
		words: slices.Contains(o.Outputs, OutputWords), pdf: slices.Contains(o.Outputs, OutputPDF)}
	if err := j.plan(ctx); err != nil {
		return nil, err
	}
	if err := j.recognize(ctx); err != nil {
		return nil, err
	}
	return j.write(ctx, o)
}

// job is one run: its pages and their results.
type job struct {
	e       *Engine
	in      domain.EngineInput
	langs   string
	words   bool
	pdf     bool
	isPDF   bool
	pages   int
	scratch string
	results []*pageResult

	// base is the input PDF, read for the searchable PDF's pages; nil when the input
	// is an image, or a PDF pdfcpu cannot read (its pages are then made anew from the
	// recognised images).
	base *model.Context
	// Image input: its header, and its bytes when it is a JPEG (embedded as it came).
	header vips.Header
	jpeg   []byte
}

// pageMemory is the memory one page's recognition may take: the job's bound shared by
// the pages recognised at once. 0: no bound.
func (j *job) pageMemory() int64 {
	return j.in.Limits.MemoryShare(min(j.e.cfg.Parallel, j.pages))
}

func (j *job) plan(ctx context.Context) error {
	j.scratch = filepath.Join(j.in.WorkDir, ".ocr")
	if err := os.MkdirAll(j.scratch, 0o700); err != nil {
		return err
	}
	if j.in.Format.MIMEType == "application/pdf" {
		if !j.e.canRender() {
			return domain.Errorf(domain.CodeUnsupportedInput, "PDF input is not available on this worker")
		}
		n, err := j.e.countPDF(ctx, j.in.Path)
		if err != nil {
			return err
		}
		if n > j.e.cfg.MaxPages {
			return domain.Errorf(domain.CodeUnsupportedInput, "the PDF has %d pages; ocr takes at most %d", n, j.e.cfg.MaxPages)
		}
		j.isPDF, j.pages = true, n
		if j.pdf {
			j.base = readBase(j.in.Path, n)
		}
	} else {
		if err := j.e.checkImage(j.in.Path); err != nil {
			return err
		}
		j.pages = 1
		j.header = vips.Header{Orientation: 1}
		if l, ok := vips.LoaderFor(j.in.Format.MIMEType); ok {
			h, err := vips.ReadHeader(j.in.Path, l)
			if err != nil {
				return domain.Errorf(domain.CodeCorruptedFile, "the image cannot be read")
			}
			j.header = h
		}
		if j.pdf && j.in.Format.MIMEType == "image/jpeg" {
			var err error
			if j.jpeg, err = os.ReadFile(j.in.Path); err != nil {
				return err
			}
		}
	}
	j.results = make([]*pageResult, j.pages)
	return nil
}

// readBase reads the input PDF for the searchable PDF; nil when pdfcpu cannot read it
// or every one of its pages, finds another page count than the platform's counter, or
// it is encrypted (opening without a password, but its pages are then made anew).
func readBase(path string, pages int) (pc *model.Context) {
	defer func() {
		if recover() != nil { // pdfcpu panics on some malformed input
			pc = nil
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	pc, err = pdfapi.ReadContext(f, imagepdf.Conf())
	if err != nil || pc.Encrypt != nil || pc.EnsurePageCount() != nil || pc.PageCount != pages {
		return nil
	}
	for p := 1; p <= pages; p++ {
		if _, _, _, err := pc.PageDict(p, false); err != nil {
			return nil
		}
	}
	return pc
}

// countPDF counts a PDF's pages (the platform's counter, or pdfcpu), failing with the
// contract code of what is wrong with it.
func (e *Engine) countPDF(ctx context.Context, path string) (int, error) {
	return pdfpages.Count(ctx, e.cfg.CountPDFPages, path)
}

// checkImage refuses an image that cannot be read or is over the pixel limit, from
// its headers, before tesseract decodes it.
func (e *Engine) checkImage(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil {
		return domain.Errorf(domain.CodeCorruptedFile, "the image cannot be read")
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return domain.Errorf(domain.CodeCorruptedFile, "the image is empty")
	}
	return e.checkSize("the image", cfg.Width, cfg.Height)
}

// checkSize refuses a page image tesseract would not take: over the pixel limit, or
// longer on a side than tesseract's layout analysis accepts (it gives up on such an
// image the same way every time, so it is the input's fault, never retried).
func (e *Engine) checkSize(what string, width, height int) error {
	if int64(width)*int64(height) > e.cfg.MaxPixels {
		return domain.Errorf(domain.CodeUnsupportedInput, "%s is larger than %d pixels", what, e.cfg.MaxPixels)
	}
	if width > maxTessSide || height > maxTessSide {
		return domain.Errorf(domain.CodeUnsupportedInput, "%s is %d×%d pixels; text recognition takes at most %d on a side",
			what, width, height, maxTessSide)
	}
	return nil
}

// recognize runs the pages on up to Parallel workers, each with its own tesseract
// instance (language data loaded once per instance, instances kept between jobs).
func (j *job) recognize(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	go func() {
		defer close(next)
		for p := range j.pages {
			select {
			case next <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		done     int
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	for range min(j.e.cfg.Parallel, j.pages) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := j.e.pool.get(j.langs)
			if err != nil {
				fail(err)
				return
			}
			healthy := true
			defer func() {
				if healthy {
					j.e.pool.put(a)
				} else {
					a.close()
				}
			}()
			for p := range next {
				res, err := j.page(ctx, a, p)
				if err != nil {
					// A cancelled recognition may leave the instance mid-page.
					healthy = !errors.Is(err, errCancelled) && ctx.Err() == nil
					fail(err)
					return
				}
				mu.Lock()
				j.results[p] = res
				done++
				pct := done * 100 / j.pages
				mu.Unlock()
				if j.in.Progress != nil {
					j.in.Progress(pct)
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil && firstErr == nil {
		return err
	}
	if firstErr != nil {
		if pctx := context.Cause(ctx); firstErr == context.Canceled && pctx != nil {
			return pctx
		}
		return firstErr
	}
	return nil
}

// page reads (a scan's image, or the page rendered, for a PDF) and recognises page p
// (0-based).
func (j *job) page(ctx context.Context, a recognizer, p int) (*pageResult, error) {
	want := pageWant{words: j.words, layer: j.pdf, memory: j.pageMemory()}
	img, dpi := pageImage{path: j.in.Path}, 0
	var content *PageContent
	switch {
	case j.isPDF:
		var err error
		if img, dpi, content, err = j.e.pdfPage(ctx, j.in.Path, p+1, j.scratch); err != nil {
			return nil, err
		}
		// A rendered page's image file is needed only until the page is done.
		if img.path != "" {
			defer os.Remove(img.path)
		}
		// A page made anew (the input unreadable by pdfcpu) needs its image encoded,
		// unless it is a scan's JPEG, embedded as stored.
		want.encode = j.pdf && j.base == nil && (content.Scan == nil || content.Scan.JPEG == nil)
	default:
		if j.header.Orientation != 1 {
			// Shown turned or mirrored: recognised as displayed, decoded upright by libvips.
			l, _ := vips.LoaderFor(j.in.Format.MIMEType)
			up, err := vips.LoadUpright(ctx, j.in.Path, l)
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				return nil, domain.Errorf(domain.CodeCorruptedFile, "the image cannot be read")
			}
			img = pageImage{bitmap: &Bitmap{Width: up.Width, Height: up.Height, Stride: up.Stride, Gray: up.Bands == 1, Pix: up.Pix}}
			dpi = int(math.Round(up.DPI))
		}
		want.encode = j.pdf && j.jpeg == nil
	}
	res, err := a.page(ctx, img, dpi, want)
	if errors.Is(err, errUnreadableImage) {
		return nil, domain.Errorf(domain.CodeCorruptedFile, "the image cannot be read")
	}
	if err != nil {
		return nil, err
	}
	if content != nil {
		res.hasText = content.Text
		if s := content.Scan; s != nil {
			res.place = &s.Matrix
			if s.JPEG != nil && j.pdf && j.base == nil {
				if res.image, err = imagepdf.JPEG(s.JPEG); err != nil {
					return nil, domain.Errorf(domain.CodeCorruptedFile, "the image of page %d cannot be read", p+1)
				}
			}
		}
	}
	return res, nil
}

// pdfPage is a PDF page's image to recognise and its resolution: a scan's image as
// stored, or the page rendered (into an image file in dir when the renderer writes
// files); and what the page draws.
func (e *Engine) pdfPage(ctx context.Context, pdfPath string, page int, dir string) (pageImage, int, *PageContent, error) {
	content, err := e.pageContent(ctx, pdfPath, page)
	if err != nil {
		return pageImage{}, 0, nil, err
	}
	if s := content.Scan; s != nil {
		return pageImage{jpeg: s.JPEG, bitmap: s.Bitmap}, scanDPI(s), content, nil
	}
	img, err := e.renderPage(ctx, pdfPath, page, dir)
	if err != nil {
		if ctx.Err() != nil {
			return pageImage{}, 0, nil, ctx.Err()
		}
		return pageImage{}, 0, nil, err
	}
	return img, e.cfg.DPI, content, nil
}

// pageContent asks the platform what page draws; without its answer every page is
// rendered and gets a text layer.
func (e *Engine) pageContent(ctx context.Context, pdfPath string, page int) (*PageContent, error) {
	if e.cfg.PageContent == nil {
		return &PageContent{}, nil
	}
	c, err := e.cfg.PageContent(ctx, pdfPath, page)
	if err == nil && c == nil {
		c = &PageContent{}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Rendering the page decides: it fails with the page's own error if the page
		// is broken, or reads what the scan's image could not give.
		return &PageContent{}, nil
	}
	if s := c.Scan; s != nil {
		d := scanDPI(s)
		if d < minScanDPI || d > maxScanDPI || e.checkSize("the scan", s.Width, s.Height) != nil ||
			(s.JPEG == nil && (s.Bitmap == nil || !s.Bitmap.valid())) {
			c.Scan = nil
		}
	}
	return c, nil
}

// scanDPI is a scan's vertical resolution on its page (tesseract works with one).
func scanDPI(s *ScanImage) int {
	h := math.Hypot(s.Matrix[2], s.Matrix[3])
	if h <= 0 {
		return 0
	}
	return int(math.Round(float64(s.Height) * 72 / h))
}

// canRender reports whether PDF pages can be rendered for recognition.
func (e *Engine) canRender() bool { return e.cfg.RenderBitmap != nil || e.cfg.RenderPage != nil }

// renderPage renders page (1-based) of the PDF at the configured DPI: into memory with
// RenderBitmap, else into an image file in dir. The rendered page passes the same
// size checks as an image input.
func (e *Engine) renderPage(ctx context.Context, pdfPath string, page int, dir string) (pageImage, error) {
	if e.cfg.RenderBitmap != nil {
		b, err := e.cfg.RenderBitmap(ctx, pdfPath, page, e.cfg.DPI)
		if err != nil {
			return pageImage{}, fmt.Errorf("ocr: render page %d: %w", page, err)
		}
		if err := e.checkSize(fmt.Sprintf("page %d", page), b.Width, b.Height); err != nil {
			return pageImage{}, err
		}
		if !b.valid() {
			return pageImage{}, fmt.Errorf("ocr: render page %d: a %d×%d bitmap of %d bytes", page, b.Width, b.Height, len(b.Pix))
		}
		return pageImage{bitmap: b}, nil
	}
	img := filepath.Join(dir, fmt.Sprintf("page-%d.png", page))
	if err := e.cfg.RenderPage(ctx, pdfPath, page, e.cfg.DPI, "png", img); err != nil {
		return pageImage{}, fmt.Errorf("ocr: render page %d: %w", page, err)
	}
	if err := e.checkImage(img); err != nil {
		os.Remove(img)
		return pageImage{}, err
	}
	return pageImage{path: img}, nil
}

func (j *job) write(ctx context.Context, o Options) (*domain.EngineOutput, error) {
	base := domain.OutputStem(j.in.Filename)
	out := &domain.EngineOutput{Units: j.pages}
	for _, kind := range o.Outputs {
		switch kind {
		case OutputText:
			texts := make([]string, len(j.results))
			for i, r := range j.results {
				texts[i] = strings.TrimRight(r.text, "\n") + "\n"
			}
			// Pages are separated by a form feed, as pdftotext does.
			path := filepath.Join(j.in.WorkDir, base+".txt")
			if err := os.WriteFile(path, []byte(strings.Join(texts, "\f")), 0o600); err != nil {
				return nil, err
			}
			out.Artifacts = append(out.Artifacts, domain.EngineArtifact{Name: base + ".txt", MIMEType: "text/plain; charset=utf-8", Path: path})
		case OutputWords:
			rep := WordsReport{Languages: strings.Split(j.langs, "+")}
			for i, r := range j.results {
				words := r.words
				if words == nil {
					words = []Word{}
				}
				rep.Pages = append(rep.Pages, WordsPage{Page: i + 1, Width: r.width, Height: r.height, DPI: j.wordsDPI(r), Words: words})
			}
			b, err := json.MarshalIndent(rep, "", " ")
			if err != nil {
				return nil, err
			}
			path := filepath.Join(j.in.WorkDir, base+".words.json")
			if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
				return nil, err
			}
			out.Artifacts = append(out.Artifacts, domain.EngineArtifact{Name: base + ".words.json", MIMEType: "application/json", Path: path})
		case OutputPDF:
			path := filepath.Join(j.in.WorkDir, base+".pdf")
			if err := j.writePDF(ctx, path); err != nil {
				return nil, err
			}
			out.Artifacts = append(out.Artifacts, domain.EngineArtifact{Name: base + ".pdf", MIMEType: "application/pdf", Path: path})
		}
	}
	if err := os.RemoveAll(j.scratch); err != nil {
		return nil, err
	}
	return out, nil
}

// wordsDPI is the resolution words.json reports for a page: that of a PDF page's
// image (rendered, or the scan's own), or an image's recorded density.
func (j *job) wordsDPI(r *pageResult) int {
	if j.isPDF {
		return int(math.Round(r.ppi))
	}
	return int(math.Round(j.header.DPI))
}

// writePDF writes the searchable PDF: the input PDF with a text layer over each page
// that has no text of its own, or pages made from the recognised images (an image
// input, or a PDF pdfcpu cannot read), each with its layer. It verifies the page count.
func (j *job) writePDF(ctx context.Context, out string) (err error) {
	defer func() {
		if p := recover(); p != nil { // pdfcpu panics on some malformed input
			err = fmt.Errorf("ocr: searchable PDF: pdfcpu: %v", p)
		}
	}()
	pc := j.base
	if pc == nil {
		if pc, err = imagepdf.New(); err != nil {
			return err
		}
		for _, r := range j.results {
			if err := j.addPage(pc, r); err != nil {
				return fmt.Errorf("ocr: searchable PDF: %w", err)
			}
		}
	}
	font, err := addGlyphLessFont(pc, j.e.glyphLessFont())
	if err != nil {
		return fmt.Errorf("ocr: searchable PDF: %w", err)
	}
	wrap, err := imagepdf.AddStream(pc, []byte("q\n"))
	if err != nil {
		return err
	}
	for i, r := range j.results {
		if len(r.layer) == 0 || (j.base != nil && r.hasText) {
			continue
		}
		if err := overlay(pc, i+1, r, *font, wrap); err != nil {
			return fmt.Errorf("ocr: searchable PDF: text layer of page %d: %w", i+1, err)
		}
	}
	if err := imagepdf.Write(pc, out); err != nil {
		return fmt.Errorf("ocr: searchable PDF: %w", err)
	}
	if n, err := j.e.countPDF(ctx, out); err != nil || n != j.pages {
		return domain.Errorf(domain.CodeOutputValidationFailed, "the searchable PDF does not verify")
	}
	return nil
}

// addPage appends a page made from a recognised image: the image input as it came (a
// JPEG placed by its EXIF orientation) or re-encoded, or a PDF page's image. Its size
// follows the image's resolution: the one an image records (else 72 dpi), the one a
// PDF page's image was read at.
func (j *job) addPage(pc *model.Context, r *pageResult) error {
	img, orientation := r.image, 1
	if !j.isPDF && j.jpeg != nil {
		var err error
		if img, err = imagepdf.JPEG(j.jpeg); err != nil {
			return domain.Errorf(domain.CodeCorruptedFile, "the image cannot be read")
		}
		orientation = j.header.Orientation
	}
	if img == nil {
		return errors.New("no page image")
	}
	dpi := r.ppi // a PDF page's image: the resolution it was read at
	if !j.isPDF {
		// An image that records no density gets a point a pixel, as convert gives it
		// (tesseract's own fallback, 70, means nothing either).
		dpi = j.header.DPI
	}
	if dpi <= 0 {
		dpi = 72
	}
	w, h, err := imagepdf.AddPage(pc, img, orientation, dpi)
	if err != nil {
		return err
	}
	// The layer is laid out in the upright pixels tesseract read, which fill the page.
	r.place = &[6]float64{w, 0, 0, h, 0, 0}
	return nil
}

// glyphLessFont is tesseract's pdf.ttf from the language data directory, read once;
// nil when it is not installed (the text layer's font is then not embedded).
func (e *Engine) glyphLessFont() []byte {
	e.fontOnce.Do(func() {
		e.font, _ = os.ReadFile(filepath.Join(e.cfg.TessdataDir, "pdf.ttf"))
	})
	return e.font
}

// recognizer is a loaded tesseract instance: in this process (api) or in a helper
// process (helper). It is not safe for concurrent use.
type recognizer interface {
	page(ctx context.Context, img pageImage, dpi int, want pageWant) (*pageResult, error)
	languages() string
	// usable is false once the instance must not be used again.
	usable() bool
	close()
}

// apiPool keeps loaded tesseract instances per language set between pages and jobs.
type apiPool struct {
	max   int
	start func(langs string) (recognizer, error)

	mu   sync.Mutex
	idle map[string][]recognizer
	n    int // idle instances
}

func (p *apiPool) get(langs string) (recognizer, error) {
	p.mu.Lock()
	if l := p.idle[langs]; len(l) > 0 {
		a := l[len(l)-1]
		p.idle[langs] = l[:len(l)-1]
		p.n--
		p.mu.Unlock()
		return a, nil
	}
	p.mu.Unlock()
	return p.start(langs)
}

func (p *apiPool) put(a recognizer) {
	if !a.usable() {
		a.close()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n >= p.max {
		// Make room by dropping an instance of another language set, else this one.
		for k, l := range p.idle {
			if k != a.languages() && len(l) > 0 {
				l[0].close()
				p.idle[k] = l[1:]
				p.n--
				break
			}
		}
		if p.n >= p.max {
			a.close()
			return
		}
	}
	p.idle[a.languages()] = append(p.idle[a.languages()], a)
	p.n++
}

func (p *apiPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, l := range p.idle {
		for _, a := range l {
			a.close()
		}
		delete(p.idle, k)
	}
	p.n = 0
}

// RecognizePage recognises the words of page (1-based) of the PDF at path in English,
// with the loaded instances jobs use: a scanned page from its image as stored, another
// rendered at the configured DPI; the words are boxed in that image, whose size and
// resolution come with them. For engines that read a PDF's text layer and need the
// words of a page that has none (ai-ready). memory bounds what the page's recognition
// may take (0: no bound), as a page of an ocr job is bounded.
func (e *Engine) RecognizePage(ctx context.Context, pdfPath string, page int, memory int64) (*WordsPage, error) {
	if !e.canRender() {
		return nil, domain.Errorf(domain.CodeUnsupportedInput, "PDF pages cannot be recognised on this worker: no renderer")
	}
	dir, err := os.MkdirTemp("", "filemill-ocr-page-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	img, dpi, _, err := e.pdfPage(ctx, pdfPath, page, dir)
	if err != nil {
		return nil, err
	}
	a, err := e.pool.get("eng")
	if err != nil {
		return nil, err
	}
	res, err := a.page(ctx, img, dpi, pageWant{words: true, memory: memory})
	if err != nil {
		a.close()
		if errors.Is(err, errUnreadableImage) {
			return nil, domain.Errorf(domain.CodeCorruptedFile, "the page's image cannot be read")
		}
		return nil, err
	}
	e.pool.put(a)
	return &WordsPage{Page: page, Width: res.width, Height: res.height, DPI: dpi, Words: res.words}, nil
}
