package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/filemill/filemill/client"
	"github.com/filemill/filemill/client/api"
)

// outDir writes downloads into a directory under the names they carry: a name's last
// element only. A name met again in one run (every pdf.compress makes a
// compress-report.json) is put after its owner's name (the input file's, the job's),
// then numbered, so one output never replaces another.
type outDir struct {
	dir  string
	mu   sync.Mutex
	used map[string]bool
}

func newOutDir(dir string) (*outDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &outDir{dir: dir, used: map[string]bool{}}, nil
}

// reserve answers the path a download named name (fallback when it has no usable
// name) of owner is written to.
func (o *outDir) reserve(name, fallback, owner string) string {
	name = safeName(name, fallback)
	o.mu.Lock()
	defer o.mu.Unlock()
	candidate := name
	if o.used[candidate] && owner != "" {
		candidate = owner + "-" + name
	}
	ext := filepath.Ext(candidate)
	stem := strings.TrimSuffix(candidate, ext)
	for n := 2; o.used[candidate]; n++ {
		candidate = stem + "-" + strconv.Itoa(n) + ext
	}
	o.used[candidate] = true
	return filepath.Join(o.dir, candidate)
}

// safeName is the last element of a name, without control characters; fallback when
// nothing usable is left.
func safeName(name, fallback string) string {
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	if name == "." || name == ".." || name == "/" || name == "" {
		return fallback
	}
	return name
}

// save downloads a file (artifactID empty) or an artifact to path, through a temporary
// file renamed into place: a download cut short leaves no half file under the name.
func save(ctx context.Context, cl *client.Client, fileID, artifactID, path string) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.part")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	n, err := cl.Download(ctx, fileID, artifactID, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return n, err
	}
	return n, os.Rename(tmp.Name(), path)
}

// saveArtifacts downloads every artifact of a job into out and answers their paths;
// owner names the job's outputs apart from others' of the same name.
func saveArtifacts(ctx context.Context, cl *client.Client, jobID, owner string, out *outDir) ([]string, error) {
	var paths []string
	for a, err := range cl.JobArtifacts(ctx, jobID) {
		if err != nil {
			return paths, err
		}
		path := out.reserve(a.Name, a.Id, owner)
		if _, err := save(ctx, cl, a.FileId, a.Id, path); err != nil {
			return paths, fmt.Errorf("artifact %s (%s): %w", a.Id, a.Name, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func downloadCommand(g *globals) *cobra.Command {
	var dir, artifact string
	cmd := &cobra.Command{
		Use:   "download ID… -o DIR [--artifact ARTIFACT_ID]",
		Short: "download files, or every artifact of jobs, into a directory",
		Long: `Downloads into DIR, under the names they carry:
  a file id (file_…)   the file's bytes, or with --artifact one of its artifacts
  a job id (job_…)     every artifact the job made
and prints the path of each file written.`,
		Args: minArgs(1, "at least one file or job id"),
		RunE: func(c *cobra.Command, args []string) error {
			if artifact != "" && (len(args) != 1 || !strings.HasPrefix(args[0], "file_")) {
				return usagef(c.CommandPath(), "--artifact goes with one file id (the artifact's file_id)")
			}
			for _, id := range args {
				if !strings.HasPrefix(id, "file_") && !strings.HasPrefix(id, "job_") {
					return usagef(c.CommandPath(), "%q is neither a file id (file_…) nor a job id (job_…)", id)
				}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			o, err := newOutDir(dir)
			if err != nil {
				return err
			}
			ctx := c.Context()
			for _, id := range args {
				var paths []string
				switch {
				case strings.HasPrefix(id, "job_"):
					job, err := cl.GetJob(ctx, id)
					if err != nil {
						return err
					}
					if job.State != api.JobStateSucceeded {
						return fmt.Errorf("job %s is %s: its artifacts come when it has succeeded", id, job.State)
					}
					if paths, err = saveArtifacts(ctx, cl, id, id, o); err != nil {
						return err
					}
				case artifact != "":
					f, err := cl.GetFile(ctx, id)
					if err != nil {
						return err
					}
					name := artifact
					for _, a := range f.Artifacts {
						if a.Id == artifact {
							name = a.Name
						}
					}
					path := o.reserve(name, artifact, id)
					if _, err := save(ctx, cl, id, artifact, path); err != nil {
						return err
					}
					paths = []string{path}
				default:
					f, err := cl.GetFile(ctx, id)
					if err != nil {
						return err
					}
					path := o.reserve(f.Filename, id, id)
					if _, err := save(ctx, cl, id, "", path); err != nil {
						return err
					}
					paths = []string{path}
				}
				for _, p := range paths {
					fmt.Fprintln(out(c), p)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "output", "o", ".", "the directory to write into (made if missing)")
	cmd.Flags().StringVar(&artifact, "artifact", "", "download this artifact of the file")
	return cmd
}
