package proxy

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Config configures a Proxy. DefaultConfig returns the documented
// defaults; Load applies flags, environment and git config over them.
type Config struct {
	// Listen is the address Start binds (host:port; port 0 picks one).
	Listen string
	// Upstream is the backend's base URL (scheme, host, port, optional
	// path prefix). Request paths are appended to it.
	Upstream string
	// Backend is auto, llamacpp, vllm, ollama, openai or anthropic: what
	// the upstream is, for counting and window detection.
	Backend string
	// Window is the context window in tokens; 0 detects it. A window the
	// backend reports can lower a configured one, never raise it.
	Window int
	// Threshold is the share of the window a request may fill.
	Threshold float64
	// Reserve is the output reserve in tokens when a request sets no
	// max_tokens; never more than a quarter of the window.
	Reserve int
	// TailShare is the share of the budget kept verbatim at the end.
	TailShare float64
	// MinTail is the least number of recent messages kept verbatim.
	MinTail int
	// ToolShare is the share of the budget the fixed floor (system
	// prompt and tool definitions, which compaction never touches) may
	// take before the proxy advises, once per session (tool_budget).
	ToolShare float64
	// Margin multiplies estimated counts (1.4 for JSON-heavy traffic, 4
	// for CJK before calibration has seen any usage).
	Margin float64
	// SummaryModel is the model asked for summaries; "" uses the
	// request's own model.
	SummaryModel string
	// SummaryMaxTokens caps a summary's length (max_tokens of the call).
	SummaryMaxTokens int
	// SummaryTimeout bounds one summary call.
	SummaryTimeout time.Duration
	// MinSummary is the shortest summary accepted, in characters.
	MinSummary int
	// PinCap caps the pinned facts forwarded verbatim, in characters.
	PinCap int
	// Recall turns stale recall on: a compacted request whose new user
	// message names something only the folded-away turns still hold gets
	// the original lines quoted before that message (recall.go).
	Recall bool
	// RecallBudget caps a recall message, in tokens (0: no recall).
	RecallBudget int
	// Sessions is how many sessions are kept in memory (least recently
	// used dropped first).
	Sessions int
	// MaxBody is the largest request body the proxy reads to compact;
	// larger ones pass through unread.
	MaxBody int64
	// AllowRemote permits listening on a non-loopback address.
	AllowRemote bool
	// AllowHosts are further names (or addresses) a request's Host may
	// give, each optionally with its own :PORT (else the proxy's port).
	// They count only with AllowRemote and a non-loopback listen address;
	// loopback names (localhost, 127.x.y.z, [::1]) with the proxy's port
	// are always accepted, anything else refused with 403.
	AllowHosts []string
	// AllowOrigins are the browser origins (scheme://host[:port], exact)
	// that may call the proxy, with CORS answered for them. Any other
	// request carrying Origin, or Sec-Fetch-Site cross-site or same-site,
	// is refused with 403; the dashboard's own reads of /lossless/* pass.
	AllowOrigins []string
	// BodyTimeout is how long a request body may take to arrive, from
	// the end of its headers; a body still arriving then is cut (408).
	// 0 means the default.
	BodyTimeout time.Duration

	// Capture is what the proxy archives: CaptureOff (the default: only
	// what compaction folds away) or CaptureJournal (every message of
	// every session as it arrives, each stored once per session; see
	// journal.go). Off by default because the journal grows with every
	// session, compacted or not.
	Capture string

	// Archive receives each compaction's span. When nil, Store is used
	// (through NewStoreArchive); one of them is required.
	Archive Archive
	// Store is the git archive, for spans and for the savings log.
	Store *gitstore.Store
	// Writer is the archive writer name; default WriterName("proxy-",
	// the listen address).
	Writer string
	// LogPath is the savings log (one JSON line per request); default
	// <git dir>/lossless/proxy/requests.jsonl when Store is set, none
	// otherwise. "-" disables it.
	LogPath string
	// Logf receives one line per notable event (compaction, fail-open,
	// window learned, truncation). Default: discard.
	Logf func(format string, args ...any)
	// Verbose also logs every request.
	Verbose bool
	// Now is the clock (tests).
	Now func() time.Time
}

// DefaultConfig returns the defaults the Settings table documents.
func DefaultConfig() Config {
	c := Config{}
	for _, s := range Settings {
		if s.Default != "" && s.Kind != "" {
			if err := c.Set(s.Name, s.Default); err != nil {
				panic("proxy: bad default for " + s.Name + ": " + err.Error())
			}
		}
	}
	return c
}

// Setting is one configuration setting, readable from a flag
// (--NAME), the environment (Env) and git config (Git), in that order of
// precedence over its default.
type Setting struct {
	Name    string // flag name
	Git     string // git config key
	Env     string // environment variable
	Default string
	Kind    string // int, float, string, bool, duration, bytes, list ("" for settings read elsewhere)
	Doc     string
}

// Settings lists every setting the proxy and its commands read. Help text
// and README are checked against it (and against the source) by a test.
var Settings = []Setting{
	{"listen", "lossless.proxy.listen", "LOSSLESS_PROXY_LISTEN", "127.0.0.1:8786", "string", "address to listen on (loopback unless allow-remote)"},
	{"upstream", "lossless.proxy.upstream", "LOSSLESS_PROXY_UPSTREAM", "http://127.0.0.1:11434", "string", "backend base URL (Ollama :11434, llama.cpp :8080, vLLM :8000, ...)"},
	{"backend", "lossless.proxy.backend", "LOSSLESS_PROXY_BACKEND", "auto", "string", "auto, llamacpp, vllm, ollama, openai or anthropic"},
	{"window", "lossless.proxy.window", "LOSSLESS_PROXY_WINDOW", "0", "int", "context window in tokens; 0 detects it; a reported window only lowers it"},
	{"threshold", "lossless.proxy.threshold", "LOSSLESS_PROXY_THRESHOLD", "0.85", "float", "share of the window a request may fill"},
	{"reserve", "lossless.proxy.reserve", "LOSSLESS_PROXY_RESERVE", "8192", "int", "output reserve in tokens when the request sets no max_tokens (at most window/4)"},
	{"tail", "lossless.proxy.tail", "LOSSLESS_PROXY_TAIL", "0.2", "float", "share of the budget kept verbatim as the recent tail"},
	{"min-tail", "lossless.proxy.min-tail", "LOSSLESS_PROXY_MIN_TAIL", "4", "int", "least number of recent messages kept verbatim"},
	{"tool-share", "lossless.proxy.tool-share", "LOSSLESS_PROXY_TOOL_SHARE", "0.5", "float", "share of the budget the system prompt and tool definitions may take before a tool_budget advice (once per session)"},
	{"margin", "lossless.proxy.margin", "LOSSLESS_PROXY_MARGIN", "1", "float", "multiplier on estimated counts (1.4 JSON-heavy, 4 CJK)"},
	{"summary-model", "lossless.proxy.summary-model", "LOSSLESS_PROXY_SUMMARY_MODEL", "", "string", "model for summaries (default: the request's model)"},
	{"summary-max-tokens", "lossless.proxy.summary-max-tokens", "LOSSLESS_PROXY_SUMMARY_MAX_TOKENS", "1024", "int", "max_tokens of a summary call"},
	{"summary-timeout", "lossless.proxy.summary-timeout", "LOSSLESS_PROXY_SUMMARY_TIMEOUT", "2m", "duration", "time limit of one summary call"},
	{"min-summary", "lossless.proxy.min-summary", "LOSSLESS_PROXY_MIN_SUMMARY", "40", "int", "shortest summary accepted, in characters (retried once, then fail open)"},
	{"pin-cap", "lossless.proxy.pin-cap", "LOSSLESS_PROXY_PIN_CAP", "1600", "int", "characters of pinned facts forwarded verbatim (oldest dropped first)"},
	{"recall", "lossless.proxy.recall", "LOSSLESS_PROXY_RECALL", "on", "bool", "stale recall: quote archived lines a new user message names that the compacted request lacks (on|off)"},
	{"recall-budget", "lossless.proxy.recall-budget", "LOSSLESS_PROXY_RECALL_BUDGET", "600", "int", "tokens a recall message may take (at most 3 lines)"},
	{"sessions", "lossless.proxy.sessions", "LOSSLESS_PROXY_SESSIONS", "64", "int", "sessions kept in memory (least recently used dropped)"},
	{"max-body", "lossless.proxy.max-body", "LOSSLESS_PROXY_MAX_BODY", "32MiB", "bytes", "largest request body read for compaction; larger ones pass through"},
	{"allow-remote", "lossless.proxy.allow-remote", "LOSSLESS_PROXY_ALLOW_REMOTE", "false", "bool", "allow listening on a non-loopback address"},
	{"allow-host", "lossless.proxy.allow-host", "LOSSLESS_PROXY_ALLOW_HOST", "", "list", "with allow-remote: a further Host name (or name:PORT) clients may use; multi-valued"},
	{"allow-origin", "lossless.proxy.allow-origin", "LOSSLESS_PROXY_ALLOW_ORIGIN", "", "list", "a web origin (scheme://host:port, exact) allowed to call the proxy from a browser; multi-valued"},
	{"body-timeout", "lossless.proxy.body-timeout", "LOSSLESS_PROXY_BODY_TIMEOUT", "1m", "duration", "time a request body may take to arrive after its headers"},
	{"capture", "lossless.proxy.capture", "LOSSLESS_PROXY_CAPTURE", "off", "string", "off, or journal: archive every message of every session as it arrives (each once per session, redacted, encrypted with lossless.encrypt, found by recall), not only what compaction folds; off by default because it grows with every session"},
	{"url", "lossless.proxy.url", "LOSSLESS_PROXY_URL", "", "", "proxy URL for statusline (default: http:// + listen)"},
	{"", "lossless.encrypt", "", "false", "", "archive span contents as age ciphertext (needs lossless.recipient)"},
	{"", "lossless.recipient", "", "", "", "age (age1...) or SSH (ssh-ed25519, ssh-rsa) public key; multi-valued"},
	{"identity", "lossless.identity", "LOSSLESS_AGE_IDENTITY", "", "", "identity file to read encrypted spans (git lossless span)"},
}

// Set applies one setting by name from its text form.
func (c *Config) Set(name, v string) error {
	v = strings.TrimSpace(v)
	bad := func(err error) error { return fmt.Errorf("%s %q: %v", name, v, err) }
	atoi := func() (int, error) {
		n, err := strconv.Atoi(v)
		if err == nil && n < 0 {
			err = fmt.Errorf("must not be negative")
		}
		return n, err
	}
	share := func() (float64, error) {
		f, err := strconv.ParseFloat(v, 64)
		if err == nil && (f <= 0 || f > 1) {
			err = fmt.Errorf("must be in (0, 1]")
		}
		return f, err
	}
	var err error
	switch name {
	case "listen":
		c.Listen = v
	case "upstream":
		c.Upstream = v
	case "backend":
		switch v {
		case "auto", "llamacpp", "vllm", "ollama", "openai", "anthropic":
			c.Backend = v
		default:
			return bad(fmt.Errorf("use auto, llamacpp, vllm, ollama, openai or anthropic"))
		}
	case "window":
		c.Window, err = atoi()
	case "threshold":
		c.Threshold, err = share()
	case "reserve":
		c.Reserve, err = atoi()
	case "tail":
		c.TailShare, err = share()
	case "min-tail":
		c.MinTail, err = atoi()
		if err == nil && c.MinTail < 1 {
			err = fmt.Errorf("must be at least 1")
		}
	case "tool-share":
		c.ToolShare, err = share()
	case "margin":
		c.Margin, err = strconv.ParseFloat(v, 64)
		if err == nil && (c.Margin < 0.5 || c.Margin > 10) {
			err = fmt.Errorf("must be between 0.5 and 10")
		}
	case "summary-model":
		c.SummaryModel = v
	case "summary-max-tokens":
		c.SummaryMaxTokens, err = atoi()
		if err == nil && c.SummaryMaxTokens < 64 {
			err = fmt.Errorf("must be at least 64")
		}
	case "summary-timeout":
		c.SummaryTimeout, err = time.ParseDuration(v)
		if err == nil && c.SummaryTimeout <= 0 {
			err = fmt.Errorf("must be positive")
		}
	case "min-summary":
		c.MinSummary, err = atoi()
	case "pin-cap":
		c.PinCap, err = atoi()
	case "recall":
		c.Recall, err = parseBool(v)
	case "recall-budget":
		c.RecallBudget, err = atoi()
	case "sessions":
		c.Sessions, err = atoi()
		if err == nil && c.Sessions < 1 {
			err = fmt.Errorf("must be at least 1")
		}
	case "max-body":
		c.MaxBody, err = parseBytes(v)
	case "allow-remote":
		c.AllowRemote, err = parseBool(v)
	case "allow-host":
		c.AllowHosts = nil
		for _, h := range splitList(v) {
			if _, err = parseAllowHost(h); err != nil {
				return bad(fmt.Errorf("%q: %v", h, err))
			}
			c.AllowHosts = append(c.AllowHosts, h)
		}
	case "allow-origin":
		c.AllowOrigins = nil
		for _, o := range splitList(v) {
			n, err := configOrigin(o)
			if err != nil {
				return bad(fmt.Errorf("%q: %v", o, err))
			}
			c.AllowOrigins = append(c.AllowOrigins, n)
		}
	case "capture":
		switch v {
		case CaptureOff, CaptureJournal:
			c.Capture = v
		case "":
			c.Capture = CaptureOff
		default:
			return bad(fmt.Errorf("use %s or %s", CaptureOff, CaptureJournal))
		}
	case "body-timeout":
		c.BodyTimeout, err = time.ParseDuration(v)
		if err == nil && c.BodyTimeout <= 0 {
			err = fmt.Errorf("must be positive")
		}
	default:
		return fmt.Errorf("unknown setting %q", name)
	}
	if err != nil {
		return bad(err)
	}
	return nil
}

// defaultBodyTimeout is body-timeout's default: a 32 MiB body (max-body)
// takes well under a second over loopback and half a minute at 1 MB/s,
// while a client that trickles its body is cut within a minute.
const defaultBodyTimeout = time.Minute

// splitList reads a list setting: values separated by commas (a flag
// given several times, an environment variable, every git config value
// joined), blanks dropped.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0", "":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean")
}

// parseBytes reads 1048576, 64K, 32M, 32MiB, 1G.
func parseBytes(v string) (int64, error) {
	s := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(v), "iB"), "B"))
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("not a size (1048576, 64K, 32MiB)")
	}
	return n * mult, nil
}

// Sources are where Load reads settings from, highest precedence first.
type Sources struct {
	// Flags holds the settings given on the command line, by name.
	Flags map[string]string
	// Getenv reads the environment (nil: none).
	Getenv func(string) string
	// Git reads git config (nil: none).
	Git func(key string) string
	// GitAll reads every value of a multi-valued git config key, for the
	// list settings (nil: Git's single value is used).
	GitAll func(key string) []string
}

// Load returns DefaultConfig with every setting found in src applied: a
// flag over the environment over git config. For a list setting
// (allow-host, allow-origin) the first source that gives any value gives
// them all: flags (repeated, or comma-separated), else the environment
// (comma-separated), else every git config value of the key.
func Load(src Sources) (Config, error) {
	c := DefaultConfig()
	for _, s := range Settings {
		if s.Kind == "" || s.Name == "" {
			continue
		}
		v, ok := lookup(s, src)
		if !ok {
			continue
		}
		if err := c.Set(s.Name, v); err != nil {
			return c, fmt.Errorf("%s: %w", origin(s, src), err)
		}
	}
	return c, nil
}

// Lookup returns a setting's configured value from src (flag, env, git),
// for settings the commands read themselves (url, identity).
func Lookup(name string, src Sources) (string, bool) {
	for _, s := range Settings {
		if s.Name == name {
			return lookup(s, src)
		}
	}
	return "", false
}

func lookup(s Setting, src Sources) (string, bool) {
	if v, ok := src.Flags[s.Name]; ok && s.Name != "" {
		return v, true
	}
	if src.Getenv != nil && s.Env != "" {
		if v := src.Getenv(s.Env); v != "" {
			return v, true
		}
	}
	if s.Kind == "list" && src.GitAll != nil && s.Git != "" {
		if v := strings.Join(src.GitAll(s.Git), ","); strings.Trim(v, ", ") != "" {
			return v, true
		}
		return "", false
	}
	if src.Git != nil && s.Git != "" {
		if v := src.Git(s.Git); v != "" {
			return v, true
		}
	}
	return "", false
}

func origin(s Setting, src Sources) string {
	if _, ok := src.Flags[s.Name]; ok {
		return "--" + s.Name
	}
	if src.Getenv != nil && s.Env != "" && src.Getenv(s.Env) != "" {
		return s.Env
	}
	return "git config " + s.Git
}

// validate checks the parts of c that Start and New depend on.
func (c *Config) validate() error {
	u, err := url.Parse(c.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("upstream %q: need an http(s) URL such as http://127.0.0.1:11434", c.Upstream)
	}
	if _, err := newGuard(c); err != nil {
		return err
	}
	if c.Threshold <= 0 || c.TailShare <= 0 || c.ToolShare <= 0 || c.MinTail < 1 || c.Sessions < 1 || c.Margin <= 0 || c.MaxBody <= 0 || c.SummaryMaxTokens <= 0 || c.SummaryTimeout <= 0 {
		return fmt.Errorf("incomplete config: start from DefaultConfig()")
	}
	return nil
}

// checkListen refuses a non-loopback listen address unless allowed.
func checkListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %q: %v", addr, err)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen %q is not a loopback address; the proxy forwards your credentials and archives your conversations, so it listens on 127.0.0.1 unless allow-remote is set", addr)
	}
	return nil
}
