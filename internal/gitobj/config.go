package gitobj

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
)

// Unsupported says why go-git cannot write this repository safely, or "".
func Unsupported(commonDir string) string {
	cfg, err := readConfigFile(filepath.Join(commonDir, "config"))
	if err != nil {
		return "has an unreadable config (" + err.Error() + ")"
	}
	core := cfg.Section("core")
	if v := core.Option("repositoryformatversion"); v != "" && v != "0" && v != "1" {
		return "uses repository format version " + v + ", which go-git does not support"
	}
	ext := cfg.Section("extensions")
	if v := strings.ToLower(ext.Option("refstorage")); v != "" && v != "files" {
		return "uses " + v + " ref storage, which go-git cannot read or write (go-git #1827)"
	}
	if v := strings.ToLower(ext.Option("objectformat")); v != "" && v != "sha1" {
		return "uses the " + v + " object format, which go-git v5 cannot write safely"
	}
	return ""
}

func readConfigFile(p string) (*gitconfig.Config, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg := gitconfig.New()
	if err := gitconfig.NewDecoder(f).Decode(cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", p, err)
	}
	return cfg, nil
}

// IsBare reports whether the git directory d's own config says
// core.bare = true.
func IsBare(d string) bool {
	cfg, err := readConfigFile(filepath.Join(d, "config"))
	if err != nil {
		return false
	}
	return cfg.Section("core").Option("bare") == "true"
}

// Config holds the git configuration the store reads: system, global and
// repository files, later ones overriding earlier ones, multi-valued keys
// accumulating (git's own rule for `git config --get-all`).
type Config struct {
	values map[string][]string // "section.key" or "section.sub.key", lower-case section and key
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
		cfg, err := readConfigFile(f)
		if err != nil {
			continue
		}
		for _, s := range cfg.Sections {
			sec := strings.ToLower(s.Name)
			for _, o := range s.Options {
				k := sec + "." + strings.ToLower(o.Key)
				c.values[k] = append(c.values[k], o.Value)
			}
			for _, sub := range s.Subsections {
				for _, o := range sub.Options {
					k := sec + "." + sub.Name + "." + strings.ToLower(o.Key)
					c.values[k] = append(c.values[k], o.Value)
				}
			}
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
