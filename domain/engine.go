package domain

import (
	"context"
	"encoding/json"
)

// Engine turns one input file into artifacts. Engines live in jobs/ops; they know
// nothing of HTTP, queues or databases, and must respect ctx's deadline.
type Engine interface {
	Run(ctx context.Context, in EngineInput) (*EngineOutput, error)
}

// EngineInput is one run's input. The caller owns Path and WorkDir and removes them.
type EngineInput struct {
	Operation string          // the operation or the preset step being run
	Options   json.RawMessage // already validated against the operation's options
	Path      string          // the input bytes on local disk
	Filename  string          // the file's name as uploaded (for output names)
	Format    Format          // detected at completion
	ByteSize  int64
	SHA256    string // "" outside the hash window
	WorkDir   string // an empty directory for outputs
	// Pages is the input's page count as measured at completion; 0 when unknown.
	Pages int
	// Inputs are the further inputs of an operation that takes several files
	// (pdf.merge's options.file_ids), in order, each already on local disk.
	Inputs []EngineFile
	// Progress reports 0–100 for page-wise work; may be nil.
	Progress func(percent int)
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
}
