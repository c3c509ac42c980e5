package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/filemill/filemill/client"
)

// Version names the client in its User-Agent.
var Version = "dev"

// globals are the settings every client command takes: which deployment and key
// (flags > environment > the profile), and how much it says.
type globals struct {
	apiURL  string
	profile string
	quiet   bool
}

// Commands returns the client's commands, to add beside the server's.
func Commands() []*cobra.Command {
	g := &globals{}
	cmds := []*cobra.Command{
		loginCommand(g), profilesCommand(g),
		uploadCommand(g), runCommand(g), watchCommand(g), downloadCommand(g),
		filesCommand(g), jobsCommand(g), batchesCommand(g), webhooksCommand(g), eventsCommand(g),
		usageCommand(g), operationsCommand(g),
	}
	for _, c := range cmds {
		fs := c.PersistentFlags()
		fs.StringVar(&g.apiURL, "api-url", "", "the deployment's API URL [FILEMILL_API_URL] (default: the profile's, else "+DefaultAPIURL+")")
		fs.StringVar(&g.profile, "profile", "", "the profile of the config file to use [FILEMILL_PROFILE] (default: its default_profile, else default)")
		fs.BoolVarP(&g.quiet, "quiet", "q", false, "print results only: no progress, no notes")
	}
	return cmds
}

// Groups makes every command that has subcommands refuse, as a usage error, a
// subcommand it does not know or none at all (unless it does something of its own,
// as `files` lists): cobra would print the help and exit 0.
func Groups(root *cobra.Command) {
	for _, c := range root.Commands() {
		Groups(c)
	}
	if !root.HasSubCommands() || root.RunE != nil || root.Run != nil {
		return
	}
	root.Args = cobra.ArbitraryArgs
	root.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return UsageError(strings.TrimRight(c.UsageString(), "\n"))
		}
		return usagef(c.CommandPath(), "unknown command %q for %q", args[0], c.CommandPath())
	}
}

// settings are the deployment and key a command uses, and where they came from.
type settings struct {
	profile string
	apiURL  string
	apiKey  string
}

// resolve finds the deployment and key: flags, then FILEMILL_API_URL, FILEMILL_API_KEY
// and FILEMILL_PROFILE, then the profile in the config file.
func (g *globals) resolve() (*settings, error) {
	cfg, path, err := loadConfig()
	if err != nil {
		return nil, err
	}
	s := &settings{profile: firstOf(g.profile, os.Getenv("FILEMILL_PROFILE"), cfg.DefaultProfile, "default")}
	p, found := cfg.Profiles[s.profile]
	s.apiURL = firstOf(g.apiURL, os.Getenv("FILEMILL_API_URL"), p.APIURL, DefaultAPIURL)
	s.apiKey = firstOf(os.Getenv("FILEMILL_API_KEY"), p.APIKey)
	if s.apiKey == "" {
		msg := "filemill: not logged in: run 'filemill login' or set FILEMILL_API_KEY"
		if !found && (g.profile != "" || os.Getenv("FILEMILL_PROFILE") != "") {
			msg = fmt.Sprintf("filemill: no profile %q in %s: run 'filemill login --profile %s' or set FILEMILL_API_KEY", s.profile, path, s.profile)
		}
		return nil, &notAuthenticatedError{msg: msg}
	}
	return s, nil
}

// client is the SDK's client for the resolved deployment and key.
func (g *globals) client() (*client.Client, error) {
	s, err := g.resolve()
	if err != nil {
		return nil, err
	}
	return newClient(s.apiURL, s.apiKey)
}

func newClient(apiURL, apiKey string) (*client.Client, error) {
	c, err := client.New(apiURL, apiKey, client.WithUserAgent("filemill-cli/"+Version))
	if err != nil {
		return nil, UsageError(err.Error())
	}
	return c, nil
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// isTerminal tells whether w is a terminal: progress bars and prompts only there.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// note prints a line for the person at the terminal (standard error) unless --quiet.
func (g *globals) note(c *cobra.Command, format string, args ...any) {
	if !g.quiet {
		fmt.Fprintf(c.ErrOrStderr(), format+"\n", args...)
	}
}

// out is where results go.
func out(c *cobra.Command) io.Writer { return c.OutOrStdout() }

// exactArgs wants n positional arguments, naming them in the usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef(c.CommandPath(), "%s takes %s", c.CommandPath(), what)
		}
		return nil
	}
}

// minArgs wants at least n positional arguments.
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef(c.CommandPath(), "%s takes %s", c.CommandPath(), what)
		}
		return nil
	}
}
