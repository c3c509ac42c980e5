package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func loginCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "login [--api-url URL] [--profile NAME]",
		Short: "store a deployment's URL and an API key in a profile",
		Long: `Stores the API URL and an API key in a profile of $XDG_CONFIG_HOME/filemill/config.toml
(readable by you only). The key is read from standard input when it is not a terminal
(echo "$KEY" | filemill login), and asked for, not echoed, when it is. It is checked
against the deployment before it is stored.

The first profile stored becomes the default one. Every other command uses the profile
of --profile, FILEMILL_PROFILE or the default one; FILEMILL_API_URL, FILEMILL_API_KEY and
--api-url override what it holds.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, path, err := loadConfig()
			if err != nil {
				return err
			}
			name := firstOf(g.profile, os.Getenv("FILEMILL_PROFILE"), cfg.DefaultProfile, "default")
			apiURL := firstOf(g.apiURL, os.Getenv("FILEMILL_API_URL"), cfg.Profiles[name].APIURL, DefaultAPIURL)
			key, err := readKey(c, apiURL)
			if err != nil {
				return err
			}
			cl, err := newClient(apiURL, key)
			if err != nil {
				return err
			}
			// Checked before it is stored: GET /v1/operations asks for a key and no scope.
			if _, err := cl.Operations(c.Context()); err != nil {
				return fmt.Errorf("the key was not stored: %w", err)
			}
			cfg.Profiles[name] = profile{APIURL: apiURL, APIKey: key}
			if cfg.DefaultProfile == "" {
				cfg.DefaultProfile = name
			}
			if err := cfg.save(path); err != nil {
				return err
			}
			g.note(c, "logged in to %s as profile %q (key %s), stored in %s", apiURL, name, keyHint(key), path)
			return nil
		},
	}
}

// maxKeyLength bounds what is read as a key from standard input.
const maxKeyLength = 4096

// readKey reads the key: prompted for without echo on a terminal, else the first line
// of standard input.
func readKey(c *cobra.Command, apiURL string) (string, error) {
	in := c.InOrStdin()
	var key string
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(c.ErrOrStderr(), "API key for %s: ", apiURL)
		raw, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.ErrOrStderr())
		if err != nil {
			return "", fmt.Errorf("read the key: %w", err)
		}
		key = string(raw)
	} else {
		line, err := bufio.NewReader(io.LimitReader(in, maxKeyLength)).ReadString('\n')
		if err != nil && err != io.EOF {
			return "", fmt.Errorf("read the key from standard input: %w", err)
		}
		key = line
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return "", usagef(c.CommandPath(), "no API key given: type it at the prompt, or pipe it to standard input")
	}
	return key, nil
}

func profilesCommand(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "profiles [--json]",
		Short: "list the profiles login stored (the one in use marked *)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, path, err := loadConfig()
			if err != nil {
				return err
			}
			current := firstOf(g.profile, os.Getenv("FILEMILL_PROFILE"), cfg.DefaultProfile, "default")
			if asJSON {
				type row struct {
					Name    string `json:"name"`
					APIURL  string `json:"api_url"`
					KeyHint string `json:"key_hint"`
					Default bool   `json:"default"`
					InUse   bool   `json:"in_use"`
				}
				rows := []row{}
				for _, n := range cfg.names() {
					p := cfg.Profiles[n]
					rows = append(rows, row{n, p.APIURL, keyHint(p.APIKey), n == cfg.DefaultProfile, n == current})
				}
				return json.NewEncoder(out(c)).Encode(rows)
			}
			if len(cfg.Profiles) == 0 {
				g.note(c, "no profiles in %s: run 'filemill login'", path)
				return nil
			}
			tw := tabwriter.NewWriter(out(c), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "\tPROFILE\tAPI URL\tKEY")
			for _, n := range cfg.names() {
				mark := ""
				if n == current {
					mark = "*"
				}
				p := cfg.Profiles[n]
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mark, n, p.APIURL, keyHint(p.APIKey))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
