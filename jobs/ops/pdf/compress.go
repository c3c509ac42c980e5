package pdf

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/fsutil"
	"github.com/filemill/filemill/jobs/ops/internal/vips"
)

// level is what a compression level does to images: the resolution they are brought
// down to (only when they exceed it by half: the rule Ghostscript's presets use) and
// the JPEG quality they are re-encoded at.
type level struct {
	dpi     float64
	quality int
}

var levels = map[string]level{
	"low":    {dpi: 300, quality: 85},
	"medium": {dpi: 150, quality: 70},
	"high":   {dpi: 96, quality: 50},
}

// downsampleThreshold: an image is down-sampled only above this multiple of the target.
const downsampleThreshold = 1.5

// Validate checks the level.
func (o CompressOptions) Validate() error {
	if _, ok := levels[o.Level]; !ok && o.Level != "" {
		return domain.InvalidParam("options.level", "level must be low, medium or high")
	}
	return nil
}

// CompressReport is the content of the report artifact.
type CompressReport struct {
	Level       string  `json:"level"`
	BytesBefore int64   `json:"bytes_before"`
	BytesAfter  int64   `json:"bytes_after"`
	Ratio       float64 `json:"ratio"` // bytes_after / bytes_before
	// Images counts image objects; ImagesRecompressed those re-encoded smaller.
	Images             int `json:"images"`
	ImagesRecompressed int `json:"images_recompressed"`
	// Gained is false when nothing made the file smaller: the output is then the
	// input's own bytes.
	Gained bool `json:"gained"`
}

// ReportName is the compress report's download name.
const ReportName = "compress-report.json"

func (e *Engine) compress(ctx context.Context, in domain.EngineInput, o CompressOptions) (*domain.EngineOutput, error) {
	if o.Level == "" {
		o.Level = "medium"
	}
	lv := levels[o.Level]
	st, err := os.Stat(in.Path)
	if err != nil {
		return nil, fmt.Errorf("pdf: stat input: %w", err)
	}
	pc, err := e.read(ctx, in.Path, model.OPTIMIZE)
	if err != nil {
		return nil, err
	}
	progress(in, 20, 100)
	rep := CompressReport{Level: o.Level, BytesBefore: st.Size()}
	if rep.Images, rep.ImagesRecompressed, err = e.recompressImages(ctx, pc, lv); err != nil {
		return nil, err
	}
	progress(in, 80, 100)
	deflateStreams(pc.XRefTable)

	name := domain.OutputStem(in.Filename) + ".pdf"
	path := filepath.Join(in.WorkDir, name)
	if err := e.write(ctx, pc, path); err != nil {
		return nil, err
	}
	out, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("pdf: stat output: %w", err)
	}
	rep.BytesAfter, rep.Gained = out.Size(), out.Size() < st.Size()
	if !rep.Gained {
		// Never larger than the input: hand back the input's own bytes.
		if err := fsutil.CopyFile(in.Path, path); err != nil {
			return nil, fmt.Errorf("pdf: copy input: %w", err)
		}
		rep.BytesAfter, rep.ImagesRecompressed = st.Size(), 0
	}
	if err := Verify(ctx, path, pc.PageCount); err != nil {
		return nil, err
	}
	if rep.BytesBefore > 0 {
		rep.Ratio = math.Round(float64(rep.BytesAfter)/float64(rep.BytesBefore)*10000) / 10000
	}
	raw, _ := json.MarshalIndent(rep, "", "  ")
	repPath := filepath.Join(in.WorkDir, ReportName)
	if err := os.WriteFile(repPath, append(raw, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("pdf: write report: %w", err)
	}
	return &domain.EngineOutput{Artifacts: []domain.EngineArtifact{
		{Name: name, MIMEType: pdfMIME, Path: path, Verified: true},
		{Name: ReportName, MIMEType: "application/json", Path: repPath},
	}}, nil
}

// imageJob is one image to re-encode.
type imageJob struct {
	nr     int
	sd     types.StreamDict
	w, h   int
	nw, nh int
	bands  int
	dct    bool
	out    []byte
}

// recompressImages re-encodes, in parallel, every image it can make smaller:
// down-sampled to the level's resolution where it is displayed finer than that, and
// JPEG-encoded at the level's quality. It returns how many images there are and how
// many were replaced.
func (e *Engine) recompressImages(ctx context.Context, pc *model.Context, lv level) (int, int, error) {
	x := pc.XRefTable
	masks := map[int]bool{} // images used as another's soft mask or mask keep their bytes
	var images []int
	for nr, entry := range x.Table {
		sd, ok := imageStream(entry)
		if !ok {
			continue
		}
		images = append(images, nr)
		for _, k := range []string{"SMask", "Mask"} {
			if ir, ok := sd.Dict[k].(types.IndirectRef); ok {
				masks[ir.ObjectNumber.Value()] = true
			}
		}
	}
	if len(images) == 0 {
		return 0, 0, nil
	}
	placed := findPlacements(ctx, x, pc.PageCount)
	pageMax := largestPage(x, pc.PageCount)

	var jobs []*imageJob
	for _, nr := range images {
		if masks[nr] {
			continue
		}
		sd, _ := imageStream(x.Table[nr])
		if j := e.plan(x, nr, sd, placed, pageMax, lv); j != nil {
			jobs = append(jobs, j)
		}
	}
	work := make(chan *imageJob)
	var wg sync.WaitGroup
	for range min(e.cfg.Workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				j.out = e.encode(x, j, lv)
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case work <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	done := 0
	for _, j := range jobs {
		if j.out == nil || len(j.out) >= len(j.sd.Raw) {
			continue
		}
		sd := j.sd
		sd.Raw, sd.Content = j.out, nil
		l := int64(len(j.out))
		sd.StreamLength = &l
		sd.FilterPipeline = []types.PDFFilter{{Name: "DCTDecode"}}
		sd.Dict = sd.Dict.Clone().(types.Dict)
		sd.Update("Filter", types.Name("DCTDecode"))
		sd.Delete("DecodeParms")
		sd.Update("Width", types.Integer(j.nw))
		sd.Update("Height", types.Integer(j.nh))
		sd.Update("BitsPerComponent", types.Integer(8))
		sd.Update("Length", types.Integer(l))
		x.Table[j.nr].Object = sd
		done++
	}
	return len(images), done, nil
}

func imageStream(entry *model.XRefTableEntry) (types.StreamDict, bool) {
	if entry == nil || entry.Free || entry.Object == nil {
		return types.StreamDict{}, false
	}
	sd, ok := entry.Object.(types.StreamDict)
	if !ok {
		return sd, false
	}
	st := sd.Subtype()
	return sd, st != nil && *st == "Image"
}

// plan decides whether and to what size image nr is re-encoded; nil leaves it alone.
func (e *Engine) plan(x *model.XRefTable, nr int, sd types.StreamDict, placed map[int]size, pageMax size, lv level) *imageJob {
	w, h, bpc := sd.IntEntry("Width"), sd.IntEntry("Height"), sd.IntEntry("BitsPerComponent")
	if w == nil || h == nil || bpc == nil || *bpc != 8 || *w <= 0 || *h <= 0 || int64(*w)*int64(*h) > e.cfg.MaxImagePixels {
		return nil
	}
	if m := sd.BooleanEntry("ImageMask"); m != nil && *m {
		return nil
	}
	for _, k := range []string{"Decode", "Mask"} {
		if _, ok := sd.Find(k); ok {
			return nil // colour-key masks and decode arrays do not survive lossy coding
		}
	}
	bands := colorBands(x, sd.Dict["ColorSpace"])
	if bands != 1 && bands != 3 {
		return nil
	}
	j := &imageJob{nr: nr, sd: sd, w: *w, h: *h, nw: *w, nh: *h, bands: bands}
	switch {
	case len(sd.FilterPipeline) == 1 && sd.FilterPipeline[0].Name == "DCTDecode":
		j.dct = true
	case len(sd.FilterPipeline) == 0, len(sd.FilterPipeline) == 1 && sd.FilterPipeline[0].Name == "FlateDecode":
	default:
		return nil
	}
	shown, ok := placed[nr]
	if !ok {
		shown = pageMax
	}
	if shown.w > 0 && shown.h > 0 {
		tw, th := shown.w/72*lv.dpi, shown.h/72*lv.dpi
		if s := math.Max(tw/float64(*w), th/float64(*h)); s*downsampleThreshold < 1 {
			j.nw, j.nh = max(1, int(math.Round(float64(*w)*s))), max(1, int(math.Round(float64(*h)*s)))
		}
	}
	return j
}

// encode returns the image re-encoded as a JPEG, or nil when that fails or gains
// too little to be worth a lossy step.
func (e *Engine) encode(x *model.XRefTable, j *imageJob, lv level) []byte {
	var out []byte
	if j.dct {
		_, _, bands, err := vips.JPEGHeader(j.sd.Raw)
		if err != nil || bands != j.bands {
			return nil
		}
		shrink := 1
		for _, k := range []int{8, 4, 2} {
			if j.w/k >= j.nw && j.h/k >= j.nh {
				shrink = k
				break
			}
		}
		if out, err = vips.ResizeJPEG(j.sd.Raw, shrink, j.nw, j.nh, lv.quality); err != nil {
			e.log.Debug("pdf: recompress JPEG", "object", j.nr, "error", err)
			return nil
		}
	} else {
		sd := j.sd
		if err := sd.DecodeWithLimit(e.cfg.MaxStreamBytes); err != nil || len(sd.Content) < j.w*j.h*j.bands {
			return nil
		}
		var err error
		if out, err = vips.RawToJPEG(sd.Content, j.w, j.h, j.bands, j.nw, j.nh, lv.quality); err != nil {
			e.log.Debug("pdf: encode image", "object", j.nr, "error", err)
			return nil
		}
	}
	// An image kept at its size is re-encoded only for a clear gain: a lossless
	// drawing or an already lean JPEG stays as it is.
	resized := j.nw != j.w || j.nh != j.h
	if !resized && float64(len(out)) > 0.8*float64(len(j.sd.Raw)) {
		return nil
	}
	return out
}

// colorBands is the number of colour components of a colour space JPEG can carry
// unchanged (DeviceGray, DeviceRGB, ICCBased with 1 or 3); 0 for any other.
func colorBands(x *model.XRefTable, cs types.Object) int {
	o, err := x.Dereference(cs)
	if err != nil {
		return 0
	}
	switch v := o.(type) {
	case types.Name:
		switch v {
		case "DeviceGray":
			return 1
		case "DeviceRGB":
			return 3
		}
	case types.Array:
		if len(v) == 2 {
			if n, ok := v[0].(types.Name); ok && n == "ICCBased" {
				if sd, _, err := x.DereferenceStreamDict(v[1]); err == nil && sd != nil {
					if nn := sd.IntEntry("N"); nn != nil && (*nn == 1 || *nn == 3) {
						return *nn
					}
				}
			}
		}
	}
	return 0
}

// largestPage is the largest page size in points, the most an unplaced image shows at.
func largestPage(x *model.XRefTable, pages int) size {
	var s size
	for i := 1; i <= pages; i++ {
		_, _, attrs, err := x.PageDict(i, false)
		if err != nil || attrs == nil || attrs.MediaBox == nil {
			continue
		}
		s.w = math.Max(s.w, math.Abs(attrs.MediaBox.Width()))
		s.h = math.Max(s.h, math.Abs(attrs.MediaBox.Height()))
	}
	m := math.Max(s.w, s.h) // an image may be turned: allow either way round
	return size{m, m}
}

// deflateStreams compresses streams stored without a filter (content, fonts, raw
// images) when that makes them smaller. Metadata stays readable as the standard asks.
func deflateStreams(x *model.XRefTable) {
	for _, entry := range x.Table {
		if entry == nil || entry.Free || entry.Object == nil {
			continue
		}
		sd, ok := entry.Object.(types.StreamDict)
		if !ok || len(sd.FilterPipeline) > 0 || len(sd.Raw) < 256 {
			continue
		}
		if t := sd.Type(); t != nil && (*t == "Metadata" || *t == "XRef" || *t == "ObjStm") {
			continue
		}
		old := len(sd.Raw)
		c := sd
		c.Dict = sd.Dict.Clone().(types.Dict)
		c.Content = sd.Raw
		c.FilterPipeline = []types.PDFFilter{{Name: "FlateDecode"}}
		if err := c.Encode(); err != nil || len(c.Raw) >= old {
			continue
		}
		c.Update("Filter", types.Name("FlateDecode"))
		c.Content = nil
		entry.Object = c
	}
}
