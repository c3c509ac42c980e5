// Command filemill is the file processing service: one binary for the API, the storage
// host, the workers, migrations and operator commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `filemill — a self-hostable file processing service

Usage:
  filemill serve      API, storage host and workers in one process (the embedded default)
  filemill api        the API (and local storage host) only
  filemill worker     workers only
  filemill migrate    apply database migrations
  filemill admin …    operator commands (bootstrap, keys, credits, org, projects)

Every command takes the configuration flags (see 'filemill serve -h'); each flag has a
FILEMILL_* environment variable.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "filemill:", err)
		os.Exit(1)
	}
}

type usageError string

func (u usageError) Error() string { return string(u) }

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError(usage)
	}
	switch args[0] {
	case "serve":
		return runServer(ctx, args[1:], roleAPI|roleWorker)
	case "api":
		return runServer(ctx, args[1:], roleAPI)
	case "worker":
		return runServer(ctx, args[1:], roleWorker)
	case "migrate":
		return runMigrate(ctx, args[1:])
	case "admin":
		return runAdmin(ctx, args[1:])
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	}
	return usageError("unknown command " + args[0] + "\n\n" + usage)
}
