package gitobj

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Unsupported says why go-git cannot write this repository safely, or "".
func Unsupported(commonDir string) string {
	cfg, err := readConfigFile(filepath.Join(commonDir, "config"))
	if err != nil {
		return "has an unreadable config (" + err.Error() + ")"
	}
	if v := cfg.Get("core.repositoryformatversion"); v != "" && v != "0" && v != "1" {
		return "uses repository format version " + v + ", which go-git does not support"
	}
	if v := strings.ToLower(cfg.Get("extensions.refstorage")); v != "" && v != "files" {
		return "uses " + v + " ref storage, which go-git cannot read or write (go-git #1827)"
	}
	if v := strings.ToLower(cfg.Get("extensions.objectformat")); v != "" && v != "sha1" {
		return "uses the " + v + " object format, which go-git v5 cannot write safely"
	}
	return ""
}

// readConfigFile parses one config file (see ParseConfig).
func readConfigFile(p string) (*Config, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	c := &Config{values: map[string][]string{}}
	if err := parseConfig(b, c.add); err != nil {
		return nil, fmt.Errorf("parse %s: %w", p, err)
	}
	return c, nil
}

// IsBare reports whether the git directory d's own config says
// core.bare = true.
func IsBare(d string) bool {
	cfg, err := readConfigFile(filepath.Join(d, "config"))
	if err != nil {
		return false
	}
	return cfg.Get("core.bare") == "true"
}

// Config holds the git configuration the store reads: system, global and
// repository files, later ones overriding earlier ones, multi-valued keys
// accumulating (git's own rule for `git config --get-all`).
type Config struct {
	values map[string][]string // "section.key" or "section.sub.key", lower-case section and key
	order  []string            // keys in first-seen order
}

func (c *Config) add(key, value string) {
	if _, ok := c.values[key]; !ok {
		c.order = append(c.order, key)
	}
	c.values[key] = append(c.values[key], value)
}

// LoadConfig reads the configuration that applies to a repository whose
// common dir is commonDir ("" for none).
func LoadConfig(commonDir string) *Config {
	c := &Config{values: map[string][]string{}}
	var files []string
	if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		files = append(files, "/etc/gitconfig")
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		files = append(files, g)
	} else {
		xdg := os.Getenv("XDG_CONFIG_HOME")
		home, _ := os.UserHomeDir()
		if xdg == "" && home != "" {
			xdg = filepath.Join(home, ".config")
		}
		if xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "config"))
		}
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
	}
	if commonDir != "" {
		files = append(files, filepath.Join(commonDir, "config"))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// A file git would reject is skipped whole, as before; git itself
		// would refuse to run, which is not ours to do for the user.
		one := &Config{values: map[string][]string{}}
		if parseConfig(b, one.add) != nil {
			continue
		}
		for _, k := range one.order {
			c.values[k] = append(c.values[k], one.values[k]...)
		}
	}
	return c
}

// Get returns the last value of key ("lossless.fsync"), or "".
func (c *Config) Get(key string) string {
	v := c.values[normKey(key)]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// GetAll returns every value of a multi-valued key.
func (c *Config) GetAll(key string) []string { return c.values[normKey(key)] }

func normKey(key string) string {
	first := strings.IndexByte(key, '.')
	last := strings.LastIndexByte(key, '.')
	if first < 0 {
		return strings.ToLower(key)
	}
	if first == last {
		return strings.ToLower(key)
	}
	return strings.ToLower(key[:first]) + key[first:last] + "." + strings.ToLower(key[last+1:])
}
