package domain

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"
)

// Engine turns one input file into artifacts. Engines live in jobs/ops; they know
// nothing of HTTP, queues or databases, and must respect ctx's deadline.
type Engine interface {
	Run(ctx context.Context, in EngineInput) (*EngineOutput, error)
}

// LanguageEngine is an engine whose runs need language data installed where it runs
// (OCR): workers announce the languages they have, and admission checks them.
type LanguageEngine interface {
	Languages() ([]string, error)
}

// PageLimitedEngine is an engine that reads documents of at most MaxPages pages:
// workers announce it, and admission refuses longer documents.
type PageLimitedEngine interface {
	MaxPages() int
}

// DescribeEngine is what a worker announces of an engine beyond its version: the
// languages it has and the longest document it reads, when it tells them.
func DescribeEngine(e Engine) EngineInfo {
	var info EngineInfo
	if le, ok := e.(LanguageEngine); ok {
		if langs, err := le.Languages(); err == nil {
			info.Languages = langs
			if info.Languages == nil {
				info.Languages = []string{}
			}
		}
	}
	if pe, ok := e.(PageLimitedEngine); ok {
		info.MaxPages = pe.MaxPages()
	}
	return info
}

// EngineInput is one run's input. The caller owns Path and WorkDir and removes them.
type EngineInput struct {
	Operation string // the operation or the preset step being run
	// Options are the run's options as a value of the operation's options type (its
	// OperationSpec.Options; nil when it takes none or none were given), decoded and
	// checked by the registry (Operation.DecodeOptions): engines take them with
	// EngineOptions and neither decode nor check them again.
	Options  any
	Path     string // the input bytes on local disk
	Filename string // the file's name as uploaded, made safe (SafeName): a base name, for output names
	Format   Format // detected at completion
	ByteSize int64
	SHA256   string // "" outside the hash window
	WorkDir  string // an empty directory for outputs
	// Pages is the input's page count as measured at completion; 0 when unknown.
	Pages int
	// Source is the job's file itself. A preset step reading another step's output
	// (a PDF converted from the file) may read the file's own structure here.
	Source EngineFile
	// Inputs are the further inputs of an operation that takes several files
	// (pdf.merge's options.file_ids), in order, each already on local disk.
	Inputs []EngineFile
	// Progress reports 0–100 for page-wise work; may be nil.
	Progress func(percent int)
	// Limits are the job's bounds, for the engines that enforce them themselves
	// (a memory bound in-process, a file size limit on a child).
	Limits JobLimits
}

// JobLimits bound one job's resources, in bytes; 0 is no bound. An engine that
// exceeds one fails with ResourceLimit.
type JobLimits struct {
	Memory int64
	Disk   int64
}

// MemoryShare is the memory bound of each of n parts of the job that run at once
// (pages recognised in parallel): the job's bound divided among them. 0: no bound.
func (l JobLimits) MemoryShare(n int) int64 {
	if l.Memory <= 0 {
		return 0
	}
	return l.Memory / int64(max(1, n))
}

// EngineOptions returns a run's options as T, the operation's options type; T's zero
// value when the run has none. Options of another type are a wiring error.
func EngineOptions[T any](in EngineInput) (T, error) {
	o, err := OptionsAs[T](in.Options)
	if err != nil {
		return o, fmt.Errorf("%s: %w", in.Operation, err)
	}
	return o, nil
}

// OptionsAs returns options the registry decoded (a run's, a plan's) as T, the
// operation's options type; T's zero value for none.
func OptionsAs[T any](options any) (T, error) {
	var zero T
	switch o := options.(type) {
	case nil:
		return zero, nil
	case T:
		return o, nil
	case *T:
		if o != nil {
			return *o, nil
		}
		return zero, nil
	}
	return zero, fmt.Errorf("options of type %T, not %T", options, zero)
}

// EngineFile is one further input of a run, on local disk.
type EngineFile struct {
	FileID   string
	Path     string
	Filename string
	Format   Format
	ByteSize int64
	Pages    int // 0 when unknown
}

// EngineOutput is what a run produced.
type EngineOutput struct {
	Artifacts []EngineArtifact
	// Units is how many priced units (pages) were processed; 0 for per-file prices.
	Units int
}

// EngineArtifact is one output file in WorkDir.
type EngineArtifact struct {
	Name     string // download name, e.g. "inspect.json"
	MIMEType string
	Path     string
	// Verified says the engine read the output back in full with its own decoder and
	// found it to be what was asked (format, size, pages): the platform then checks
	// only that it is there and of its type, instead of decoding it again.
	Verified bool
	// MayBeEmpty says an empty file is a whole answer (the text of a document that has
	// none), not a failed output.
	MayBeEmpty bool
}

// OperationSpec is what an engine package declares for one operation it serves. The
// registry is built from these: the options schema shown to clients is generated from
// Options, and options are validated against it; nothing is listed by hand.
//
// Options is the zero value of the operation's options struct (nil when it takes none).
// Its fields are described by tags:
//
//	json:"name,omitempty"   the option's name
//	doc:"…"                 the option's description
//	schema:"…"              constraints, comma-separated: enum=a|b|c, default=v,
//	                        min=n, max=n, minItems=n, maxItems=n, maxLength=n, required
//
// Field types: string, bool, int, int64, float64, pointers to them (absent differs from
// zero), slices of those, and structs (nested objects) and slices of structs. When the
// struct (as a value) has a method Validate() error, it is called after the schema
// checks, for rules across fields (e.g. page-range syntax); it returns *Error with
// Param "options.<name>".
type OperationSpec struct {
	Name         string // e.g. "pdf.merge"
	Engine       string // the engine family: its queue and its unit of availability, e.g. "pdf"
	Description  string
	Options      any
	InputFormats []string // extensions, MIME types or families ("image/*"); "*" takes anything
	Price        Price
	// Plan tells, before a job runs, what a run will read and make, and refuses options
	// its input cannot satisfy; nil: it reads its whole input and makes a few documents.
	Plan PlanFunc
	// FileIDsOption names the option that lists further input files (pdf.merge:
	// "file_ids"); "" when the operation takes one file.
	FileIDsOption string
	// Hidden operations run only as steps of presets: they are not listed and cannot
	// be requested on their own.
	Hidden bool
	// Timeout is the deadline of one attempt unless FILEMILL_OPERATION_TIMEOUTS says
	// otherwise; zero takes FILEMILL_JOB_TIMEOUT.
	Timeout time.Duration
}

// OutputStem is the stem engines name their outputs after: the file's name as uploaded,
// its last path element without its extension and without control characters, at most
// 100 characters; "document" when nothing is left.
func OutputStem(filename string) string {
	name := SafeName(filename)
	name = strings.TrimSuffix(name, path.Ext(name))
	name = strings.Map(func(r rune) rune {
		if strings.ContainsRune(`/\:*?"<>|`, r) {
			return '_'
		}
		return r
	}, name)
	if r := []rune(name); len(r) > 100 {
		name = string(r[:100])
	}
	if strings.Trim(name, ". ") == "" {
		return "document"
	}
	return name
}
