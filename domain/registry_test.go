package domain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type testRotation struct {
	Pages string `json:"pages" doc:"pages to turn" schema:"required"`
	Angle int    `json:"angle" doc:"degrees clockwise" schema:"enum=90|180|270,required"`
}

type testPagesOptions struct {
	Pages  string         `json:"pages,omitempty" doc:"page ranges" schema:"maxLength=20"`
	Rotate []testRotation `json:"rotate,omitempty" doc:"rotations" schema:"maxItems=3"`
	Format string         `json:"format" doc:"image format" schema:"enum=png|jpeg,default=png"`
	DPI    int            `json:"dpi" doc:"resolution" schema:"min=36,max=600,default=72"`
	Width  *int           `json:"width,omitempty" doc:"width in pixels" schema:"min=1"`
	Strip  bool           `json:"strip" doc:"drop metadata" schema:"default=true"`
	Scale  float64        `json:"scale,omitempty" doc:"a factor" schema:"min=0.1,max=10"`
	Files  []string       `json:"file_ids,omitempty" doc:"more files" schema:"minItems=1,maxItems=2"`
	Kinds  []string       `json:"kinds,omitempty" doc:"what to make" schema:"enum=text|pdf,default=text"`
}

// Validate is a rule across fields: a width replaces the DPI.
func (o testPagesOptions) Validate() error {
	if o.Width != nil && o.DPI != 72 {
		return InvalidParam("options.width", "give dpi or width, not both")
	}
	return nil
}

func testRegistry(t *testing.T) *Registry {
	t.Helper()
	r := NewRegistry()
	require.NoError(t, r.AddOperations(
		OperationSpec{Name: "t.pages", Engine: "pdf", Description: "pages", Options: testPagesOptions{},
			InputFormats: []string{"pdf"}, Price: Price{Credits: 2, Per: "page"}, FileIDsOption: "file_ids"},
		OperationSpec{Name: "t.convert", Engine: "office", Description: "convert", InputFormats: []string{"docx", "pdf"},
			Price: Price{Credits: 5, Per: "file"}, Options: struct {
				Format string `json:"format" doc:"target" schema:"enum=pdf|txt,default=pdf"`
			}{}},
		OperationSpec{Name: "t.compress", Engine: "pdf", Description: "compress", InputFormats: []string{"pdf"},
			Price: Price{Credits: 1, Per: "file"}},
		OperationSpec{Name: "t.ocr", Engine: "ocr", Description: "ocr", InputFormats: []string{"pdf", "image/*"}, Hidden: true,
			Price: Price{Credits: 3, Per: "page"}, Options: struct {
				ChunkSize int `json:"chunk_size" doc:"chunk" schema:"min=100,default=2000"`
			}{}},
	))
	return r
}

func TestOptionsSchema(t *testing.T) {
	t.Parallel()
	op := testRegistry(t).Operation("t.pages")
	out, err := op.ValidateOptions(json.RawMessage(`{"pages":"1-3","rotate":[{"pages":"2","angle":90}],"width":300}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"pages":"1-3","rotate":[{"pages":"2","angle":90}],"format":"png","dpi":72,"width":300,"strip":true,"kinds":["text"]}`, string(out),
		"defaults are filled in, nothing else is added")

	for raw, param := range map[string]string{
		`{"format":"bmp"}`:                            "options.format",
		`{"dpi":601}`:                                 "options.dpi",
		`{"dpi":72.5}`:                                "options.dpi",
		`{"dpi":"72"}`:                                "options.dpi",
		`{"strip":"yes"}`:                             "options.strip",
		`{"colour":1}`:                                "options.colour",
		`{"pages":"123456789012345678901"}`:           "options.pages",
		`{"rotate":[{"pages":"1"}]}`:                  "options.rotate[0].angle",
		`{"rotate":[{"pages":"1","angle":45}]}`:       "options.rotate[0].angle",
		`{"rotate":[{"pages":"1","angle":90,"x":1}]}`: "options.rotate[0].x",
		`{"rotate":[{},{},{},{}]}`:                    "options.rotate",
		`{"scale":0.01}`:                              "options.scale",
		`{"file_ids":[]}`:                             "options.file_ids",
		`{"file_ids":[1]}`:                            "options.file_ids[0]",
		`{"width":300,"dpi":150}`:                     "options.width",
		`[1]`:                                         "options",
		`"x"`:                                         "options",
	} {
		_, err := op.ValidateOptions(json.RawMessage(raw))
		require.Error(t, err, raw)
		require.Equal(t, CodeInvalidRequest, ErrorCode(err), raw)
		require.Equal(t, param, AsError(err).Param, raw)
	}
	_, err = testRegistry(t).Operation("t.compress").ValidateOptions(json.RawMessage(`{"x":1}`))
	require.Equal(t, "options.x", AsError(err).Param, "an operation without options takes none")

	schema := op.OptionsSchema()
	raw, err := json.Marshal(schema)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","additionalProperties":false,"properties":{
		"pages":{"type":"string","description":"page ranges","maxLength":20},
		"rotate":{"type":"array","description":"rotations","maxItems":3,"items":{"type":"object","additionalProperties":false,
			"required":["pages","angle"],"properties":{"pages":{"type":"string","description":"pages to turn"},
			"angle":{"type":"integer","description":"degrees clockwise","enum":[90,180,270]}}}},
		"format":{"type":"string","description":"image format","enum":["png","jpeg"],"default":"png"},
		"dpi":{"type":"integer","description":"resolution","minimum":36,"maximum":600,"default":72},
		"width":{"type":"integer","description":"width in pixels","minimum":1},
		"strip":{"type":"boolean","description":"drop metadata","default":true},
		"scale":{"type":"number","description":"a factor","minimum":0.1,"maximum":10},
		"file_ids":{"type":"array","description":"more files","minItems":1,"maxItems":2,"items":{"type":"string"}},
		"kinds":{"type":"array","description":"what to make","default":["text"],"items":{"type":"string","enum":["text","pdf"]}}}}`, string(raw),
		"the schema is generated from the struct the options are checked against")
}

func TestRegistryRefusesBadDeclarations(t *testing.T) {
	t.Parallel()
	for name, spec := range map[string]OperationSpec{
		"NoDoc": {Name: "x", Engine: "e", Price: Price{1, "file"}, Options: struct {
			A int `json:"a"`
		}{}},
		"BadDefault": {Name: "x", Engine: "e", Price: Price{1, "file"}, Options: struct {
			A int `json:"a" doc:"a" schema:"max=3,default=4"`
		}{}},
		"UnknownTag": {Name: "x", Engine: "e", Price: Price{1, "file"}, Options: struct {
			A int `json:"a" doc:"a" schema:"maximum=3"`
		}{}},
		"BadPrice":       {Name: "x", Engine: "e", Price: Price{1, "call"}},
		"NoEngine":       {Name: "x", Price: Price{1, "file"}},
		"FileIDsMissing": {Name: "x", Engine: "e", Price: Price{1, "file"}, FileIDsOption: "file_ids"},
	} {
		require.Error(t, NewRegistry().AddOperations(spec), name)
	}
	r := testRegistry(t)
	require.Error(t, r.AddOperations(OperationSpec{Name: "t.compress", Engine: "pdf", Price: Price{1, "file"}}), "twice")
	require.Error(t, r.AddPreset(PresetSpec{Name: "p", Steps: []StepSpec{{Name: "a", Operation: "nope"}}}))
	require.Error(t, r.AddPreset(PresetSpec{Name: "p", Steps: []StepSpec{{Name: "a", Operation: "t.convert", Options: `{"format":"doc"}`}}}),
		"fixed options are checked at registration")
	require.Error(t, r.AddPreset(PresetSpec{Name: "p", Steps: []StepSpec{{Name: "a", Operation: "t.pages"}}}), "a step takes one file")
	require.Error(t, r.AddPreset(PresetSpec{Name: "p", Steps: []StepSpec{{Name: "a", Operation: "t.compress", Intermediate: true}}}))
	require.Error(t, r.AddPreset(PresetSpec{Name: "p", Options: struct {
		Nope int `json:"nope" doc:"n"`
	}{}, Steps: []StepSpec{{Name: "a", Operation: "t.compress"}}}), "a preset option no step takes")
}

func TestPresetPipeline(t *testing.T) {
	t.Parallel()
	r := testRegistry(t)
	require.NoError(t, r.AddPreset(PresetSpec{Name: "document", InputFormats: []string{"docx", "pdf", "png"},
		Options: struct {
			ChunkSize int `json:"chunk_size" doc:"chunk" schema:"min=100,default=2000"`
		}{},
		Steps: []StepSpec{
			{Name: "convert", Operation: "t.convert", Options: `{"format":"pdf"}`, When: []string{"docx"}, Intermediate: true},
			{Name: "ocr", Operation: "t.ocr", When: []string{"image/*"}, Intermediate: true},
			{Name: "compress", Operation: "t.compress"},
		}}))
	p := r.Preset("document")
	docx := Format{"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
	pdf := Format{"pdf", "application/pdf"}
	png := Format{"png", "image/png"}
	names := func(f Format) []string {
		var out []string
		for _, st := range p.Pipeline(f) {
			out = append(out, st.Name)
		}
		return out
	}
	require.Equal(t, []string{"convert", "compress"}, names(docx))
	require.Equal(t, []string{"compress"}, names(pdf))
	require.Equal(t, []string{"ocr", "compress"}, names(png))
	require.Equal(t, []string{"office", "pdf"}, p.Engines(docx))
	require.Equal(t, []string{"pdf"}, p.Engines(pdf))
	require.Equal(t, "the sum of the steps that run for the file: t.convert: 5 credits per file (for docx); "+
		"t.ocr: 3 credits per page read (for image/*); t.compress: 1 credit per file", p.PriceRule())

	// Reservations are exact when pages were counted, and only the steps that run count.
	reserve := func(op *Operation, f *File) *Pricing {
		opts, err := op.ValidateOptions(nil)
		require.NoError(t, err)
		pr, err := op.plan(planRequest{file: f, options: opts})
		require.NoError(t, err)
		return pr
	}
	require.EqualValues(t, 5+1, reserve(p, &File{DetectedExt: "docx", DetectedMIMEType: docx.MIMEType, Pages: 7}).Credits)
	require.EqualValues(t, 1, reserve(p, &File{DetectedExt: "pdf", DetectedMIMEType: pdf.MIMEType, Pages: 7}).Credits)
	require.EqualValues(t, 3*1+1, reserve(p, &File{DetectedExt: "png", DetectedMIMEType: png.MIMEType, ByteSize: 20 << 20}).Credits,
		"an image is one page, whatever its size")
	pages := reserve(r.Operation("t.pages"), &File{DetectedExt: "pdf", DetectedMIMEType: pdf.MIMEType, Pages: 4})
	require.Equal(t, &Pricing{Rule: "t.pages: 2 credits per page read", Pages: 4, Credits: 8,
		Lines: []PricingLine{{Step: "t.pages", Operation: "t.pages", Price: Price{2, PerPage}, Units: 4, Credits: 8}}}, pages)
	guessed := reserve(r.Operation("t.pages"), &File{DetectedExt: "pdf", DetectedMIMEType: pdf.MIMEType, ByteSize: 200 << 10})
	require.EqualValues(t, 2*4, guessed.Credits, "uncounted pages are estimated: one per 64 KiB")
	require.True(t, guessed.Estimated)

	// The preset's own options reach the steps that take them, over their fixed options.
	opts, err := p.ValidateOptions(json.RawMessage(`{"chunk_size":500}`))
	require.NoError(t, err)
	st, err := p.Steps[1].StepOptions(opts)
	require.NoError(t, err)
	require.JSONEq(t, `{"chunk_size":500}`, string(st))
	st, err = p.Steps[0].StepOptions(opts)
	require.NoError(t, err)
	require.JSONEq(t, `{"format":"pdf"}`, string(st))

	// Queues: every set of engines a job of the registry can need.
	require.ElementsMatch(t, [][]string{{"pdf"}, {"office"}, {"office", "pdf"}, {"ocr", "pdf"}, {"ocr", "office", "pdf"}}, r.EngineSets())
	require.Equal(t, "engine:office+pdf", QueueName(p.Engines(docx)))

	// Hidden operations run as steps only.
	for _, op := range r.List() {
		require.NotEqual(t, "t.ocr", op.Name)
	}
	require.Equal(t, KindPreset, r.List()[len(r.List())-1].Kind, "operations are listed before presets")
}

func TestOutputStem(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"My Report.pdf": "My Report", "../../etc/passwd": "passwd", `C:\docs\a:b.docx`: "a_b", "": "file",
		".pdf": "document", "scan.tar.gz": "scan.tar", "bad\x00name.png": "badname", "Übersicht.odt": "Übersicht",
	} {
		require.Equal(t, want, OutputStem(in), in)
	}
	require.Len(t, []rune(OutputStem(strings.Repeat("é", 300)+".txt")), 100)
}

// TestDecodeOptions: an engine receives its options as its own type, defaults filled
// in and rules checked by the registry; what the registry refuses never reaches it.
func TestDecodeOptions(t *testing.T) {
	t.Parallel()
	r := testRegistry(t)
	v, err := r.Operation("t.pages").DecodeOptions(json.RawMessage(`{"pages":"2-3","kinds":["pdf"]}`))
	require.NoError(t, err)
	o, err := EngineOptions[testPagesOptions](EngineInput{Operation: "t.pages", Options: v})
	require.NoError(t, err)
	require.Equal(t, testPagesOptions{Pages: "2-3", Format: "png", DPI: 72, Strip: true, Kinds: []string{"pdf"}}, o)

	_, err = r.Operation("t.pages").DecodeOptions(json.RawMessage(`{"width":300,"dpi":100}`))
	require.Equal(t, "options.width", AsError(err).Param, "the options type's own rule")
	_, err = r.Operation("t.pages").DecodeOptions(json.RawMessage(`{"dpi":1}`))
	require.Equal(t, "options.dpi", AsError(err).Param, "the schema's bound")

	v, err = r.Operation("t.compress").DecodeOptions(nil)
	require.NoError(t, err)
	require.Nil(t, v, "an operation without options gets none")
	none, err := EngineOptions[testPagesOptions](EngineInput{Operation: "t.pages"})
	require.NoError(t, err)
	require.Equal(t, testPagesOptions{}, none)
	_, err = EngineOptions[testPagesOptions](EngineInput{Operation: "t.pages", Options: json.RawMessage(`{}`)})
	require.Error(t, err, "raw JSON is not the engine's options: a wiring error, not a silent zero")

	specs := []OperationSpec{{Name: "t.pages", Options: testPagesOptions{}}}
	v, err = DecodeOptions(specs, "t.pages", json.RawMessage(`{"format":"jpeg"}`))
	require.NoError(t, err)
	require.Equal(t, "jpeg", v.(testPagesOptions).Format)
	_, err = DecodeOptions(specs, "t.other", nil)
	require.Error(t, err)
}
