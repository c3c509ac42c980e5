// Command filemill is the file processing service and its client: one binary for the
// API, the storage host, the workers, migrations and operator commands, and for the
// command-line client of a deployment (package cli, on the Go SDK).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/filemill/filemill/cmd/filemill/cli"
	"github.com/filemill/filemill/domain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(execute(ctx, os.Args[1:]))
}

// usageError is a command line that cannot be run as given: exit code 2.
type usageError = cli.UsageError

// execute runs the command line and answers the exit code (see cli.ExitCode).
func execute(ctx context.Context, args []string) int {
	root := newRoot()
	root.SetArgs(goStyleFlags(root, args))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := cli.ReportError(os.Stderr, err)
	// The admin commands answer the services' errors: a missing organization, project,
	// key or user exits as a 404 does for the client commands.
	if code == cli.ExitFailed && domain.ErrorCode(err) == domain.CodeNotFound {
		return cli.ExitNotFound
	}
	return code
}

const rootLong = `filemill — a self-hostable file processing service, and its command-line client.

Run a deployment with serve (or api and worker apart), operate it with admin; use one
with login, then upload, run, watch, download and the listing commands.

The server commands take the configuration flags (see 'filemill serve -h'); each flag
has a FILEMILL_* environment variable.`

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "filemill",
		Short: "a self-hostable file processing service",
		Long:  rootLong,
		// Errors are printed once, by execute, with their exit code.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(fmt.Sprintf("%v\nRun '%s --help' for usage.", err, c.CommandPath()))
	})
	root.AddGroup(&cobra.Group{ID: "server", Title: "Run and operate a deployment:"},
		&cobra.Group{ID: "client", Title: "Use a deployment:"})
	for _, c := range []*cobra.Command{
		serverCommand("serve", "API, storage host and workers in one process (the embedded default)", roleAPI|roleWorker),
		serverCommand("api", "the API (and local storage host) only", roleAPI),
		serverCommand("worker", "workers only", roleWorker),
		migrateCommand(),
		adminCommand(),
	} {
		c.GroupID = "server"
		root.AddCommand(c)
	}
	for _, c := range cli.Commands() {
		c.GroupID = "client"
		root.AddCommand(c)
	}
	cli.Groups(root)
	return root
}

// goFlag is a long flag written with one dash, as Go's flag package accepted before
// the commands moved to cobra (filemill serve -data-dir x).
var goFlag = regexp.MustCompile(`^-([a-z][a-z0-9-]+)(=.*)?$`)

// goStyleFlags rewrites the command's long flags given with one dash to two, so the
// command lines that worked before keep working; a shorthand group (-qo) is left as it is.
func goStyleFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if m := goFlag.FindStringSubmatch(a); m != nil && cmd.Flags().Lookup(m[1]) != nil {
			a = "-" + a
		}
		out = append(out, a)
	}
	return out
}
