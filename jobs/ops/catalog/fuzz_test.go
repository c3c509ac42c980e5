package catalog_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
	"github.com/filemill/filemill/jobs/ops/catalog"
)

// FuzzOptions: the options of every operation and preset are refused with
// invalid_request (or validation_failed) naming an option, or come back canonical: a
// JSON object that validates to itself, and, for a preset, that every step's operation
// accepts once the preset hands it on.
func FuzzOptions(f *testing.F) {
	reg, err := catalog.Registry()
	if err != nil {
		f.Fatal(err)
	}
	ops := reg.List()
	index := map[string]int{}
	for i, op := range ops {
		index[op.Name+"/"+op.Kind] = i
	}
	for _, s := range []struct{ op, options string }{
		{"image.convert/operation", `{"format":"webp","width":256,"height":256,"fit":"cover","gravity":"attention"}`},
		{"image.convert/operation", `{"format":"jpeg","background":"#102030","rotate":90,"quality":70}`},
		{"pdf.pages/operation", `{"pages":"1-3,7,9-","rotate":90}`},
		{"pdf.split/operation", `{"every":1}`},
		{"pdf.split/operation", `{"ranges":["1-2","3-"]}`},
		{"pdf.merge/operation", `{"file_ids":["file_01ARZ3NDEKTSV4RRFFQ69G5FAV"]}`},
		{"pdf.render/operation", `{"format":"png","dpi":150,"pages":"1"}`},
		{"pdf.compress/operation", `{"level":"high"}`},
		{"convert/operation", `{"format":"pdf"}`},
		{"ocr/operation", `{"languages":["eng","deu"],"outputs":["pdf","txt"]}`},
		{"inspect/operation", `{}`},
		{"image/preset", `{"format":"avif"}`},
		{"avatar/preset", `null`},
		{"ai-ready/preset", `{"ocr":true}`},
		{"document/preset", ` { } `},
		{"pdf.pages/operation", `{"pages":"1-3","pages":"4"}`},
		{"image.convert/operation", `{"width":1e400}`},
		{"image.convert/operation", `{"width":9007199254740993}`},
		{"image.convert/operation", `{"format":"webp"} {}`},
		{"pdf.pages/operation", `[1,2]`},
	} {
		i, ok := index[s.op]
		if !ok {
			f.Fatalf("no %s in the catalog", s.op)
		}
		f.Add(uint8(i), []byte(s.options))
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		op := ops[int(which)%len(ops)]
		var canon json.RawMessage
		var err error
		alloc := hostile.Allocated(func() { canon, err = op.ValidateOptions(raw) })
		if limit := uint64(hostile.Slack + 64*len(raw)); alloc > limit {
			t.Fatalf("%s: validating %d bytes allocated %d bytes", op.Name, len(raw), alloc)
		}
		if err != nil {
			de := domain.AsError(err)
			if de == nil || (de.Code != domain.CodeInvalidRequest && de.Code != domain.CodeValidationFailed) {
				t.Fatalf("%s: refusal %#v is not invalid_request", op.Name, err)
			}
			if !strings.HasPrefix(de.Param, "options") || de.Message == "" || !utf8.ValidString(de.Message) || !utf8.ValidString(de.Param) {
				t.Fatalf("%s: refusal %q names no option (param %q)", op.Name, de.Message, de.Param)
			}
			if len(de.Message) > 2<<10 || len(de.Param) > 1<<10 {
				t.Fatalf("%s: a refusal of %d bytes (param %d bytes)", op.Name, len(de.Message), len(de.Param))
			}
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(canon, &obj); err != nil || obj == nil {
			t.Fatalf("%s: canonical options %q are no object: %v", op.Name, canon, err)
		}
		again, err := op.ValidateOptions(canon)
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("%s: canonical options %s validate to %s (%v)", op.Name, canon, again, err)
		}
		for _, st := range op.Steps {
			opts, err := st.StepOptions(canon)
			if err != nil {
				t.Fatalf("%s: step %s: %v", op.Name, st.Name, err)
			}
			if _, err := st.Operation.ValidateOptions(opts); err != nil {
				t.Fatalf("%s accepts %s, but its step %s (%s) refuses %s: %v", op.Name, raw, st.Name, st.Operation.Name, opts, err)
			}
		}
	})
}
