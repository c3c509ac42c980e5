package cli

import (
	"context"
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

// maxBatch is the most files one batch takes (the API's limit); more make more batches.
const maxBatch = 100

// jobFlags say what a job does: an operation or a preset, and its options.
type jobFlags struct {
	preset      string
	options     []string
	optionsJSON string
}

func (f *jobFlags) register(g *globals, c *cobra.Command) {
	c.Flags().StringVarP(&f.preset, "preset", "p", "", "run this preset instead of an operation")
	_ = c.RegisterFlagCompletionFunc("preset", completeOperations(g, api.OperationKindPreset))
	c.Flags().StringArrayVar(&f.options, "option", nil, "an option, key=value (the value read as JSON when it is JSON: 90, true, [1,2]; else a string); repeat for more")
	c.Flags().StringVar(&f.optionsJSON, "options-json", "", "a JSON object of options from a file (- for standard input); --option values are laid over it")
}

// what is the operation or preset, and the options, of the command line.
type what struct {
	operation string
	preset    string
	options   map[string]any
}

func (w what) String() string {
	if w.preset != "" {
		return "preset " + w.preset
	}
	return w.operation
}

// parse reads the operation (the first argument when there is no --preset) and the
// options; it answers the arguments left.
func (f *jobFlags) parse(c *cobra.Command, args []string) (what, []string, error) {
	var w what
	if f.preset != "" {
		w.preset = f.preset
	} else {
		if len(args) == 0 {
			return w, nil, usagef(c.CommandPath(), "name an operation, or a preset with --preset")
		}
		w.operation, args = args[0], args[1:]
	}
	opts, err := f.parseOptions(c)
	if err != nil {
		return w, nil, err
	}
	w.options = opts
	return w, args, nil
}

// completeOperations completes the names of the deployment's operations or presets
// (kind), when a key is at hand; nothing otherwise.
func completeOperations(g *globals, kind api.OperationKind) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cl, err := g.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ops, err := cl.Operations(c.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, op := range ops {
			if op.Kind == kind && strings.HasPrefix(op.Name, toComplete) {
				names = append(names, op.Name+"\t"+truncate(op.Description, 60))
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// maxOptionsBytes bounds an --options-json file.
const maxOptionsBytes = 1 << 20

func (f *jobFlags) parseOptions(c *cobra.Command) (map[string]any, error) {
	opts := map[string]any{}
	if f.optionsJSON != "" {
		var r io.Reader
		if f.optionsJSON == "-" {
			r = c.InOrStdin()
		} else {
			file, err := os.Open(f.optionsJSON)
			if err != nil {
				return nil, usagef(c.CommandPath(), "--options-json: %v", err)
			}
			defer file.Close()
			r = file
		}
		raw, err := io.ReadAll(io.LimitReader(r, maxOptionsBytes+1))
		if err != nil {
			return nil, usagef(c.CommandPath(), "--options-json: %v", err)
		}
		if len(raw) > maxOptionsBytes {
			return nil, usagef(c.CommandPath(), "--options-json: larger than %d bytes", maxOptionsBytes)
		}
		if err := json.Unmarshal(raw, &opts); err != nil || opts == nil {
			return nil, usagef(c.CommandPath(), "--options-json: not a JSON object: %v", err)
		}
	}
	for _, kv := range f.options {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef(c.CommandPath(), "--option %q: want key=value", kv)
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			val = v // not JSON: the string as written
		}
		opts[k] = val
	}
	if len(opts) == 0 {
		return nil, nil
	}
	return opts, nil
}

// input is a FILE_OR_ID of the command line: a local file to upload, or a file id.
type input struct {
	name   string // the path, or the id
	path   string // "" for a file already uploaded
	fileID string
}

// resolveInputs turns the arguments into inputs: an existing path is a file (a
// directory its files), else an argument shaped like a file id is one.
func resolveInputs(args []string, recursive bool) ([]*input, error) {
	var ins []*input
	for _, arg := range args {
		_, err := os.Stat(arg)
		if errors.Is(err, fs.ErrNotExist) && strings.HasPrefix(arg, "file_") {
			ins = append(ins, &input{name: arg, fileID: arg})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w (a file already uploaded is given by its id, file_…)", err)
		}
		paths, err := expandPaths([]string{arg}, recursive)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			ins = append(ins, &input{name: p, path: p})
		}
	}
	return ins, nil
}

func runCommand(g *globals) *cobra.Command {
	var jf jobFlags
	var uf uploadFlags
	var wait, asJSON bool
	var dir string
	cmd := &cobra.Command{
		Use:   "run OPERATION|--preset P FILE_OR_ID… [--option k=v]… [--options-json F] [--wait] [-o DIR] [--concurrency N]",
		Short: "run an operation or preset on files, local or uploaded",
		Long: `Runs an operation (filemill operations lists them) or a preset on files: local paths
are uploaded first (a directory stands for its files), ids (file_…) are used as they
are. One file makes a job, several a batch (several batches past 100 files).

Without --wait it prints "JOB_ID<TAB>INPUT" per job and leaves them running. With
--wait, or -o, it follows each job live (a bar per job on a terminal, a line per state
otherwise), downloads the artifacts of each job that succeeded into DIR under their
names, and prints "JOB_ID<TAB>STATE<TAB>INPUT" followed by the paths written. The exit
code is 1 when a job did not succeed; each failure is reported with its error code.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			w, rest, err := jf.parse(c, args)
			if err != nil {
				return err
			}
			if len(rest) == 0 {
				return usagef(c.CommandPath(), "name at least one file, directory or file id")
			}
			policy, err := uf.check(c)
			if err != nil {
				return err
			}
			ins, err := resolveInputs(rest, uf.recursive)
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			var out *outDir
			if dir != "" {
				if out, err = newOutDir(dir); err != nil {
					return err
				}
				wait = true
			}
			ui := newProgressUI(c, g)
			r := &runner{cl: cl, ui: ui, what: w, concurrency: uf.concurrency, out: out, asJSON: asJSON,
				up: &uploader{cl: cl, ui: ui, flags: uf, policy: policy}}
			err = r.run(c.Context(), ins, wait)
			ui.wait()
			return err
		},
	}
	jf.register(g, cmd)
	uf.register(cmd, true)
	// The first argument is an operation unless --preset is given; the rest are files.
	ops := completeOperations(g, api.OperationKindOperation)
	cmd.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if jf.preset == "" && len(args) == 0 {
			return ops(c, args, toComplete)
		}
		return nil, cobra.ShellCompDirectiveDefault
	}
	cmd.Flags().BoolVarP(&wait, "wait", "w", false, "follow the jobs to their end")
	cmd.Flags().StringVarP(&dir, "output", "o", "", "download the artifacts into this directory (made if missing); implies --wait")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each job as the API answers it, one JSON object per line (the created jobs, or with --wait the finished ones)")
	return cmd
}

// runner creates the jobs of a run and follows them.
type runner struct {
	cl          *client.Client
	ui          *progressUI
	up          *uploader
	what        what
	concurrency int
	out         *outDir
	asJSON      bool
	wait        bool
}

// created is one job of the run.
type created struct {
	in    *input
	jobID string
}

func (r *runner) run(ctx context.Context, ins []*input, wait bool) error {
	r.wait = wait
	if err := r.uploadInputs(ctx, ins); err != nil {
		return err
	}
	jobs, err := r.create(ctx, ins)
	if err != nil {
		return err
	}
	if !wait {
		return nil
	}
	return r.follow(ctx, jobs)
}

// uploadInputs uploads the local inputs; any failure stops the run before a job is made.
func (r *runner) uploadInputs(ctx context.Context, ins []*input) error {
	byPath := map[string][]*input{}
	var paths []string
	for _, in := range ins {
		if in.path == "" {
			continue
		}
		if byPath[in.path] == nil {
			paths = append(paths, in.path)
		}
		byPath[in.path] = append(byPath[in.path], in)
	}
	var mu sync.Mutex
	var errs []error
	err := r.up.uploadAll(ctx, paths, func(path string, file *api.File, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("upload %s: %w", path, err))
			return
		}
		for _, in := range byPath[path] {
			in.fileID = file.Id
		}
	})
	if err != nil {
		return err
	}
	if len(errs) == 0 {
		return nil
	}
	for _, e := range errs[1:] {
		r.ui.note("%s", errorLine(e))
	}
	return errs[0]
}

// create makes one job for one input, else batches of up to 100.
func (r *runner) create(ctx context.Context, ins []*input) ([]created, error) {
	var out []created
	if len(ins) == 1 {
		req := api.CreateJobRequest{FileId: ins[0].fileID, Options: optionsPtr(r.what.options)}
		if r.what.preset != "" {
			req.Preset = client.Ptr(api.Preset(r.what.preset))
		} else {
			req.Operation = &r.what.operation
		}
		job, err := r.cl.CreateJob(ctx, req)
		if err != nil {
			return nil, err
		}
		out = append(out, created{in: ins[0], jobID: job.Id})
		if err := r.printCreated(job, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	for start := 0; start < len(ins); start += maxBatch {
		chunk := ins[start:min(start+maxBatch, len(ins))]
		req := api.CreateBatchRequest{Options: optionsPtr(r.what.options)}
		for _, in := range chunk {
			req.FileIds = append(req.FileIds, in.fileID)
		}
		if r.what.preset != "" {
			req.Preset = client.Ptr(api.Preset(r.what.preset))
		} else {
			req.Operation = &r.what.operation
		}
		b, err := r.cl.CreateBatch(ctx, req)
		if err != nil {
			if len(out) > 0 {
				r.ui.note("the batches created before this error keep running ('filemill jobs' lists them)")
			}
			return nil, err
		}
		if len(b.Items) != len(chunk) {
			return nil, fmt.Errorf("batch %s has %d members for %d files", b.Id, len(b.Items), len(chunk))
		}
		r.ui.note("batch %s: %d jobs (%s)", b.Id, len(b.Items), r.what)
		var these []created
		for i, it := range b.Items {
			these = append(these, created{in: chunk[i], jobID: it.JobId})
		}
		out = append(out, these...)
		if err := r.printCreated(b, these); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// printCreated prints the jobs just made, unless they are followed (then they are
// printed as they end).
func (r *runner) printCreated(v any, jobs []created) error {
	if r.wait {
		return nil
	}
	if r.asJSON {
		return r.ui.resultWriter(func(w io.Writer) error { return encodeJSONLine(w, v) })
	}
	for _, j := range jobs {
		r.ui.result("%s\t%s", j.jobID, j.in.name)
	}
	return nil
}

// stem is a path's last element without its extension.
func stem(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

func optionsPtr(m map[string]any) *map[string]any {
	if m == nil {
		return nil
	}
	return &m
}

// follow waits for each job (concurrency at a time), downloads the artifacts of those
// that succeeded, and prints each as it ends.
func (r *runner) follow(ctx context.Context, jobs []created) error {
	lines := make([]*jobLine, len(jobs))
	for i, j := range jobs {
		lines[i] = r.ui.job(j.in.name)
	}
	var mu sync.Mutex
	failed := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.concurrency)
	for i, j := range jobs {
		g.Go(func() error {
			ok, err := r.followOne(gctx, j, lines[i])
			if err != nil {
				if gctx.Err() != nil {
					return ctxDone(gctx)
				}
				return err
			}
			if !ok {
				mu.Lock()
				failed++
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if failed > 0 {
		return &jobsFailedError{failed: failed, total: len(jobs)}
	}
	return nil
}

// followOne waits for one job and downloads its artifacts; ok is whether it succeeded.
func (r *runner) followOne(ctx context.Context, j created, line *jobLine) (bool, error) {
	job, err := r.cl.WaitJob(ctx, j.jobID, client.OnProgress(func(p client.JobProgress) {
		line.set(string(p.State), p.Progress)
	}))
	if err != nil {
		line.end("error", false)
		return false, fmt.Errorf("job %s (%s): %w", j.jobID, j.in.name, err)
	}
	var paths []string
	if job.State == api.JobStateSucceeded && r.out != nil {
		line.set("downloading", 100)
		if paths, err = saveArtifacts(ctx, r.cl, job.Id, stem(j.in.name), r.out); err != nil {
			line.end("download failed", false)
			return false, fmt.Errorf("job %s (%s): %w", j.jobID, j.in.name, err)
		}
	}
	ok := job.State == api.JobStateSucceeded
	line.end(string(job.State), ok)
	if !ok {
		msg := string(job.State)
		if job.Error != nil {
			msg += ": " + string(job.Error.Code) + ": " + job.Error.Message
		}
		r.ui.note("job %s (%s) %s", job.Id, j.in.name, msg)
	}
	if r.asJSON {
		return ok, r.ui.resultWriter(func(w io.Writer) error { return encodeJSONLine(w, job) })
	}
	fields := append([]string{job.Id, string(job.State), j.in.name}, paths...)
	r.ui.result("%s", strings.Join(fields, "\t"))
	return ok, nil
}
