package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/filemill/filemill/client"
	"github.com/filemill/filemill/client/api"
)

// uploadFlags are the flags of the commands that upload (upload, run, watch).
type uploadFlags struct {
	recursive   bool
	policy      string
	project     string
	resume      bool
	concurrency int
	threshold   int64
}

func (f *uploadFlags) register(c *cobra.Command, recursive bool) {
	if recursive {
		c.Flags().BoolVarP(&f.recursive, "recursive", "r", false, "take the files of a directory's subdirectories too")
	}
	c.Flags().StringVar(&f.policy, "policy", "", `validation policy the files are judged by at completion, as JSON or @FILE: {"formats":["pdf"],"max_bytes":10485760,"scan":true}`)
	c.Flags().StringVar(&f.project, "project", "", "the project the files go to (default: the key's)")
	c.Flags().BoolVar(&f.resume, "resume", false, "continue the multipart uploads of these files that an earlier run left unfinished, sending only their missing parts")
	c.Flags().IntVarP(&f.concurrency, "concurrency", "c", 4, "files handled at once")
	c.Flags().Int64Var(&f.threshold, "multipart-threshold", client.DefaultMultipartThreshold,
		"size in bytes from which a file goes up in parallel parts, resumable with --resume; below it, in one PUT")
}

func (f *uploadFlags) check(c *cobra.Command) (*api.ValidationPolicy, error) {
	if f.concurrency < 1 || f.concurrency > 64 {
		return nil, usagef(c.CommandPath(), "--concurrency must be between 1 and 64")
	}
	if f.policy == "" {
		return nil, nil
	}
	raw := []byte(f.policy)
	if path, ok := strings.CutPrefix(f.policy, "@"); ok {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			return nil, usagef(c.CommandPath(), "--policy: %v", err)
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	var p api.ValidationPolicy
	if err := dec.Decode(&p); err != nil {
		return nil, usagef(c.CommandPath(), "--policy: not a validation policy: %v", err)
	}
	return &p, nil
}

func uploadCommand(g *globals) *cobra.Command {
	var f uploadFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "upload FILE…|DIR… [--recursive] [--policy JSON|@FILE] [--json] [--resume]",
		Short: "upload files straight to storage and print their ids",
		Long: `Uploads files straight to the deployment's storage (one PUT, or parallel parts for large
files) and completes them: detection, the validation policy, SHA-256. A directory
stands for the files in it (not hidden ones; with --recursive, its subdirectories' too).

Prints one line per file, "FILE_ID<TAB>PATH", or with --json the files as the API
answers them, one JSON object per line. A file that fails is reported and the others
go on; the exit code is then 1.`,
		Args: minArgs(1, "at least one file or directory"),
		RunE: func(c *cobra.Command, args []string) error {
			policy, err := f.check(c)
			if err != nil {
				return err
			}
			paths, err := expandPaths(args, f.recursive)
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			ui := newProgressUI(c, g)
			up := &uploader{cl: cl, ui: ui, flags: f, policy: policy}
			var failed int
			var mu sync.Mutex
			err = up.uploadAll(c.Context(), paths, func(path string, file *api.File, err error) {
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					ui.note("%s: %s", path, errorLine(err))
					return
				}
				if asJSON {
					_ = ui.resultWriter(func(w io.Writer) error { return encodeJSONLine(w, file) })
					return
				}
				ui.result("%s\t%s", file.Id, path)
			})
			ui.wait()
			if err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d files were not uploaded", failed, len(paths))
			}
			return nil
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each file as the API answers it, one JSON object per line")
	return cmd
}

// uploader uploads local files with the SDK, showing progress.
type uploader struct {
	cl     *client.Client
	ui     *progressUI
	flags  uploadFlags
	policy *api.ValidationPolicy
}

// uploadAll uploads paths, flags.concurrency at a time, and reports each as it ends;
// it stops early only when ctx is done.
func (u *uploader) uploadAll(ctx context.Context, paths []string, done func(path string, file *api.File, err error)) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.flags.concurrency)
	for _, p := range paths {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			file, err := u.upload(gctx, p)
			if err != nil && gctx.Err() != nil {
				return ctxDone(gctx)
			}
			done(p, file, err)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctxDone(ctx)
	}
	return nil
}

// upload sends one file, recording a multipart session in the state directory so a
// later --resume continues it.
func (u *uploader) upload(ctx context.Context, path string) (*api.File, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	state, err := uploadStatePath(path)
	if err != nil {
		return nil, err
	}
	if !u.flags.resume {
		// A session an earlier run left is not continued: this upload starts afresh
		// (the abandoned session expires on the server).
		if err := os.Remove(state); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	bar := u.ui.transfer(filepath.Base(path), info.Size())
	file, err := u.cl.UploadFile(ctx, path, client.UploadOptions{
		ProjectID: u.flags.project, Validation: u.policy, StateFile: state,
		MultipartThreshold: u.flags.threshold,
		Progress:           func(p client.UploadProgress) { bar.set(p.Sent) },
	})
	bar.end(err == nil)
	if err == nil && u.ui.plain() {
		u.ui.note("uploaded %s (%s) as %s", path, humanBytes(info.Size()), file.Id)
	}
	return file, err
}

// uploadStatePath is where the multipart session of the file at path is recorded:
// one small file per path in the state directory.
func uploadStatePath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir, err := stateDir()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, "uploads")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".json"), nil
}

// expandPaths turns the arguments into the files they name: a file itself, a
// directory the regular files in it that are not hidden (and with recursive, in its
// subdirectories that are not hidden).
func expandPaths(args []string, recursive bool) ([]string, error) {
	var out []string
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			if !info.Mode().IsRegular() {
				return nil, fmt.Errorf("%s is not a regular file", arg)
			}
			out = append(out, arg)
			continue
		}
		files, err := dirFiles(arg, recursive)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s has no files", arg)
		}
		out = append(out, files...)
	}
	return out, nil
}

func dirFiles(dir string, recursive bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		// Stat follows a link to a file.
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() {
			out = append(out, path)
		}
		return nil
	})
	return out, err
}
