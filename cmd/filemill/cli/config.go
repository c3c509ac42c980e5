package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/BurntSushi/toml"
)

// DefaultAPIURL is the deployment a profile without a URL talks to: `filemill serve` on
// its defaults.
const DefaultAPIURL = "http://127.0.0.1:8080"

// configFile is $XDG_CONFIG_HOME/filemill/config.toml: the profiles login stored.
//
//	default_profile = "default"
//
//	[profiles.default]
//	api_url = "http://127.0.0.1:8080"
//	api_key = "fm_live_…"
type configFile struct {
	DefaultProfile string             `toml:"default_profile,omitempty"`
	Profiles       map[string]profile `toml:"profiles"`
}

type profile struct {
	APIURL string `toml:"api_url"`
	APIKey string `toml:"api_key"`
}

// configPath is where the profiles live: $XDG_CONFIG_HOME/filemill/config.toml
// ($HOME/.config when XDG_CONFIG_HOME is unset).
func configPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("the configuration directory: %w (set XDG_CONFIG_HOME)", err)
	}
	return filepath.Join(dir, "filemill", "config.toml"), nil
}

// stateDir is where the client keeps what it needs across runs (upload sessions to
// resume, the files watch has handled): $XDG_STATE_HOME/filemill, by default
// $HOME/.local/state/filemill.
func stateDir() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "filemill"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("the state directory: %w (set XDG_STATE_HOME)", err)
	}
	return filepath.Join(home, ".local", "state", "filemill"), nil
}

// loadConfig reads the profiles; a missing file is no profile.
func loadConfig() (*configFile, string, error) {
	path, err := configPath()
	if err != nil {
		return nil, "", err
	}
	cfg := &configFile{Profiles: map[string]profile{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, path, nil
	}
	if err != nil {
		return nil, "", err
	}
	if err := toml.Unmarshal(raw, cfg); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	if cfg.Profiles == nil {
		cfg.Profiles = map[string]profile{}
	}
	return cfg, path, nil
}

// save writes the profiles whole, readable by their owner only (they hold keys): a new
// file renamed over the old, so a crash never leaves half of one.
func (c *configFile) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(c); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.toml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// names lists the profiles in order.
func (c *configFile) names() []string {
	out := make([]string, 0, len(c.Profiles))
	for n := range c.Profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// keyHint shows enough of a key to tell keys apart, never the secret part.
func keyHint(key string) string {
	const shown = 12 // "fm_live_" and four characters
	if len(key) <= shown {
		return "…"
	}
	return key[:shown] + "…"
}
