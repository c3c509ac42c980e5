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
	// Progress reports 0–100 for page-wise work; may be nil.
	Progress func(percent int)
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
