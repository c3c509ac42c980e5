package domain

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// partsOptions are the options of a test operation that makes one document per part.
type partsOptions struct {
	Parts int `json:"parts,omitempty" doc:"documents to make" schema:"min=1"`
}

func planRegistry(t *testing.T) *Registry {
	t.Helper()
	r := NewRegistry()
	require.NoError(t, r.AddOperations(
		OperationSpec{Name: "t.split", Engine: "pdf", Description: "split", InputFormats: []string{"pdf"}, Options: partsOptions{},
			Price: Price{Credits: 1, Per: PerOutput}, Plan: func(options any, in PlanInput) (Work, error) {
				o, err := OptionsAs[partsOptions](options)
				if err != nil {
					return Work{}, err
				}
				if o.Parts > in.Pages {
					return Work{}, OptionRefused("options.parts", "%d parts of %d pages", o.Parts, in.Pages)
				}
				return Work{Pages: in.Pages, Outputs: o.Parts}, nil
			}},
		OperationSpec{Name: "t.read", Engine: "ai", Description: "read", InputFormats: []string{"pdf"}, Price: Price{Credits: 2, Per: PerPage}},
	))
	require.NoError(t, r.AddPreset(PresetSpec{Name: "avatar", InputFormats: []string{"pdf"}, Steps: []StepSpec{
		{Name: "big", Operation: "t.read", OutputSuffix: "-512"}, {Name: "small", Operation: "t.read", OutputSuffix: "-128"}}}))
	return r
}

func TestPlanRefusesWhatCannotRun(t *testing.T) {
	t.Parallel()
	r := planRegistry(t)
	pdf := &File{ID: NewID(PrefixFile), DetectedExt: "pdf", DetectedMIMEType: "application/pdf", Pages: 4}
	plan := func(op *Operation, options string, live map[string]EngineInfo, maxArtifacts int) (*Pricing, error) {
		canon, err := op.ValidateOptions(json.RawMessage(options))
		require.NoError(t, err)
		return op.plan(planRequest{file: pdf, options: canon, live: live, maxArtifacts: maxArtifacts})
	}

	pr, err := plan(r.Operation("t.split"), `{"parts":3}`, nil, 10)
	require.NoError(t, err)
	require.EqualValues(t, 3, pr.Credits, "priced per document made")

	_, err = plan(r.Operation("t.split"), `{"parts":5}`, nil, 10)
	require.Equal(t, CodeValidationFailed, ErrorCode(err))
	require.Equal(t, "options.parts", AsError(err).Param)
	require.NotEmpty(t, AsError(err).Details["findings"], "the reason is a finding, as validation_failed always has")

	_, err = plan(r.Operation("t.split"), `{"parts":3}`, nil, 2)
	require.Equal(t, CodeValidationFailed, ErrorCode(err), "more documents than a job holds")

	_, err = plan(r.Operation("t.read"), `{}`, map[string]EngineInfo{"ai": {MaxPages: 3}}, 10)
	require.Equal(t, CodeUnsupportedInput, ErrorCode(err), "longer than the engine reads")
	require.Equal(t, 3, AsError(err).Details["max_pages"])
	pr, err = plan(r.Operation("t.read"), `{}`, map[string]EngineInfo{"ai": {MaxPages: 4}}, 10)
	require.NoError(t, err)
	require.EqualValues(t, 8, pr.Credits)

	// An uncounted document is estimated, and not refused by the estimate.
	uncounted := &File{DetectedExt: "pdf", DetectedMIMEType: "application/pdf", ByteSize: 10 << 20}
	pr, err = r.Operation("t.read").plan(planRequest{file: uncounted, live: map[string]EngineInfo{"ai": {MaxPages: 3}}})
	require.NoError(t, err)
	require.True(t, pr.Estimated)
	require.Equal(t, 160, pr.Pages)
}

func TestArtifactNamesAreKeptApart(t *testing.T) {
	t.Parallel()
	r := planRegistry(t)
	steps := r.Preset("avatar").Steps
	require.Equal(t, "photo-512.webp", steps[0].OutputName("photo.webp"))
	require.Equal(t, "photo-128.webp", steps[1].OutputName("photo.webp"))
	require.Equal(t, "noext-128", steps[1].OutputName("noext"))

	names := ArtifactNames{}
	require.Equal(t, "a.pdf", names.Take("a.pdf"))
	require.Equal(t, "a-2.pdf", names.Take("a.pdf"))
	require.Equal(t, "a-3.pdf", names.Take("a.pdf"))
	require.Equal(t, "b", names.Take("b"))
	require.Equal(t, "b-2", names.Take("b"))
}

func TestDescribeEngine(t *testing.T) {
	t.Parallel()
	require.Equal(t, EngineInfo{Languages: []string{"deu", "eng"}, MaxPages: 500}, DescribeEngine(describedEngine{}))
	require.Equal(t, EngineInfo{}, DescribeEngine(plainEngine{}), "an engine that tells nothing is not checked")
}

type plainEngine struct{}

func (plainEngine) Run(ctx context.Context, in EngineInput) (*EngineOutput, error) { return nil, nil }

type describedEngine struct{ plainEngine }

func (describedEngine) Languages() ([]string, error) { return []string{"deu", "eng"}, nil }
func (describedEngine) MaxPages() int                { return 500 }
