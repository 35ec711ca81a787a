package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Who may talk to the proxy.
//
// The proxy forwards the client's credentials, drives the user's model and
// writes into the user's archive, and it listens on a port any program on
// the machine — and any web page the user opens — can reach. Two checks
// run on every request, on every route (the /lossless/* surface, the
// dashboard, the compacted routes, pass-through), before its body is read
// and before anything is forwarded or archived:
//
//   - Host must name the proxy: a loopback name (localhost, 127.x.y.z,
//     [::1]) with the port the connection arrived on; with allow-remote and
//     a non-loopback listen address also the listen host, the address the
//     connection arrived on, and the allow-host names. This defeats DNS
//     rebinding: a page on evil.example whose name later resolves to
//     127.0.0.1 sends Host: evil.example.
//   - A request a browser made on a web page's behalf is refused: any
//     Origin header (Origin: null too), and Sec-Fetch-Site cross-site or
//     same-site. A "simple" cross-origin POST (Content-Type text/plain)
//     needs no preflight, so without this any page could drive the model.
//     Exceptions: origins named with allow-origin (CORS answered for
//     them), and the dashboard's own GETs of /lossless/* (Sec-Fetch-Site
//     same-origin, no Origin or the proxy's own). Sec-Fetch-Site none (an
//     address typed by the user) and no browser headers at all (every
//     non-browser client) pass.

// guard holds what the checks compare a request with.
type guard struct {
	listenHost string // cfg.Listen's host, lower case ("" when unspecified)
	listenPort int    // cfg.Listen's port (0 when unknown), used when the connection's is not known
	remote     bool   // AllowRemote and a non-loopback listen address
	hosts      []hostRule
	origins    map[string]bool // normalised (normOrigin)
}

// hostRule is one allow-host name, with its own port or (0) the proxy's.
type hostRule struct {
	host string
	port int
}

func newGuard(cfg *Config) (*guard, error) {
	g := &guard{origins: map[string]bool{}}
	if h, port, err := net.SplitHostPort(cfg.Listen); err == nil {
		g.listenHost = strings.ToLower(h)
		g.listenPort, _ = strconv.Atoi(port)
		if ip := net.ParseIP(g.listenHost); ip != nil && ip.IsUnspecified() {
			g.listenHost = ""
		}
		g.remote = cfg.AllowRemote && !isLoopbackHost(h)
	}
	for _, h := range cfg.AllowHosts {
		r, err := parseAllowHost(h)
		if err != nil {
			return nil, fmt.Errorf("allow-host %q: %v", h, err)
		}
		g.hosts = append(g.hosts, r)
	}
	for _, o := range cfg.AllowOrigins {
		n, err := configOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("allow-origin %q: %v", o, err)
		}
		g.origins[n] = true
	}
	return g, nil
}

// isLoopbackHost reports whether h is localhost or a loopback IP literal
// (127.0.0.0/8, ::1).
func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// splitHost splits a Host header (or an allow-host value) into a lower-case
// host and a port (0: none given). Brackets around an IPv6 literal are
// required when a port follows and removed.
func splitHost(s string) (string, int, error) {
	if s == "" {
		return "", 0, errors.New("empty")
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, errors.New("unclosed [")
		}
		host, port = s[1:end], s[end+1:]
		if port != "" {
			if port[0] != ':' {
				return "", 0, errors.New("junk after ]")
			}
			port = port[1:]
			if port == "" {
				return "", 0, errors.New("empty port")
			}
		}
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i+1:]
		if strings.Contains(host, ":") {
			return "", 0, errors.New("an IPv6 address needs brackets")
		}
		if port == "" {
			return "", 0, errors.New("empty port")
		}
	}
	if host == "" {
		return "", 0, errors.New("no host")
	}
	for _, c := range host {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == ':' || c == '_') {
			return "", 0, fmt.Errorf("%q is not a host name", host)
		}
	}
	n := 0
	if port != "" {
		var err error
		n, err = strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "", 0, fmt.Errorf("bad port %q", port)
		}
	}
	return strings.ToLower(host), n, nil
}

func parseAllowHost(s string) (hostRule, error) {
	if strings.Contains(s, "/") || strings.Contains(s, "*") {
		return hostRule{}, errors.New("a host name or address, optionally with :PORT (no scheme, path or wildcard)")
	}
	h, port, err := splitHost(strings.TrimSpace(s))
	if err != nil {
		return hostRule{}, err
	}
	return hostRule{host: h, port: port}, nil
}

// sameHost compares two lower-case hosts, IP literals by address.
func sameHost(a, b string) bool {
	if a == b {
		return true
	}
	ia, ib := net.ParseIP(a), net.ParseIP(b)
	return ia != nil && ib != nil && ia.Equal(ib)
}

// localAddr is the address the request's connection arrived on, when the
// server says (net/http does; a handler called directly has none).
func localAddr(r *http.Request) *net.TCPAddr {
	a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	t, _ := a.(*net.TCPAddr)
	return t
}

// checkHost reports why r's Host does not name the proxy ("" when it does).
func (g *guard) checkHost(r *http.Request) string {
	if r.Host == "" {
		return "no Host header; send Host: 127.0.0.1:PORT"
	}
	host, port, err := splitHost(r.Host)
	if err != nil {
		return fmt.Sprintf("Host %s is not host[:port] (%v)", strconv.Quote(r.Host), err)
	}
	want := g.listenPort
	var local net.IP
	if la := localAddr(r); la != nil {
		want, local = la.Port, la.IP
	}
	// A Host without a port is what clients send for port 80 only. When
	// the port is unknown (a handler called without a server and a listen
	// address with port 0), any port is taken.
	portOK := func(want int) bool { return want == 0 || port == want || port == 0 && want == 80 }
	ok := false
	switch {
	case isLoopbackHost(host):
		ok = portOK(want)
	case g.remote:
		if g.listenHost != "" && sameHost(host, g.listenHost) || local != nil && net.ParseIP(host) != nil && net.ParseIP(host).Equal(local) {
			ok = portOK(want)
		}
		for _, h := range g.hosts {
			if !ok && sameHost(host, h.host) {
				if h.port != 0 {
					ok = port == h.port
				} else {
					ok = portOK(want)
				}
			}
		}
	}
	if ok {
		return ""
	}
	hint := "127.0.0.1 or localhost"
	if want != 0 {
		hint = fmt.Sprintf("127.0.0.1:%d or localhost:%d", want, want)
	}
	if g.remote {
		hint += ", the listen address, or a name given with --allow-host"
	}
	return fmt.Sprintf("Host %s is not this proxy's address (DNS rebinding protection); use %s", strconv.Quote(r.Host), hint)
}

// normOrigin returns an Origin header's serialisation in lower case with
// a default port dropped ("http://localhost:3000"), or "" for anything
// that is not scheme://host[:port] (null, a path, user info).
func normOrigin(s string) string {
	if s == "" || s == "null" || strings.ContainsAny(s, " \t") {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#") {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	host, port, err := splitHost(u.Host)
	if err != nil {
		return ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == 0 || scheme == "http" && port == 80 || scheme == "https" && port == 443 {
		return scheme + "://" + host
	}
	return scheme + "://" + host + ":" + strconv.Itoa(port)
}

// configOrigin checks an allow-origin value: an exact origin (a trailing
// slash is forgiven), never null or a wildcard.
func configOrigin(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "*":
		return "", errors.New("no wildcard: name each origin (scheme://host:port)")
	case "null":
		return "", errors.New("null is the origin of sandboxed frames and file:// pages, any of which could then call the proxy")
	}
	n := normOrigin(strings.TrimSuffix(s, "/"))
	if n == "" {
		return "", errors.New("not an origin; use scheme://host[:port], e.g. http://localhost:3000")
	}
	return n, nil
}

// ownOrigin is the origin of pages the proxy itself serves, as the
// browser names it from the Host it sent (checked before this is used).
func ownOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return normOrigin(scheme + "://" + r.Host)
}

func isSurfacePath(p string) bool { return p == "/lossless" || strings.HasPrefix(p, "/lossless/") }

// checkOrigin decides on a request's browser headers. It returns the
// Origin to answer with CORS headers (an allowed one), or why the request
// is refused.
func (g *guard) checkOrigin(r *http.Request) (cors, why string) {
	site := strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site")))
	readSurface := (r.Method == http.MethodGet || r.Method == http.MethodHead) && isSurfacePath(r.URL.Path)
	origins := r.Header.Values("Origin")
	if len(origins) > 1 {
		return "", "more than one Origin header"
	}
	if len(origins) == 1 {
		o := origins[0]
		n := normOrigin(o)
		switch {
		case n != "" && g.origins[n]:
			return o, ""
		case n != "" && n == ownOrigin(r) && readSurface && (site == "" || site == "same-origin"):
			// The dashboard reading its own data.
			return "", ""
		}
		return "", fmt.Sprintf("Origin %s: a web page may not call this proxy; allow a trusted one with --allow-origin", strconv.Quote(o))
	}
	switch site {
	case "", "none":
		// No browser, or the user typed the address.
		return "", ""
	case "same-origin":
		if readSurface {
			return "", ""
		}
	}
	return "", fmt.Sprintf("Sec-Fetch-Site %s: a web page may not call this proxy; allow a trusted origin with --allow-origin", strconv.Quote(site))
}

// admit runs both checks. It answers a refused request (403) and an
// allowed origin's preflight itself and then reports false; otherwise it
// returns the origin to send CORS headers to ("" for none).
func (p *Proxy) admit(w http.ResponseWriter, r *http.Request) (string, bool) {
	if why := p.guard.checkHost(r); why != "" {
		p.refuse(w, "host", why)
		return "", false
	}
	cors, why := p.guard.checkOrigin(r)
	if why != "" {
		reason := "origin"
		if len(r.Header.Values("Origin")) == 0 {
			reason = "sec-fetch-site"
		}
		p.refuse(w, reason, why)
		return "", false
	}
	if cors != "" && r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		preflight(w, r, cors)
		return "", false
	}
	return cors, true
}

// refuse answers 403 with a one-line plain-text reason, without reading
// the body, and closes the connection.
func (p *Proxy) refuse(w http.ResponseWriter, reason, why string) {
	p.stats.add(func(s *statCounters) { s.refused[reason]++ })
	p.logOnce(reason+" "+why, "refused a request: %s", why)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, "git-lossless proxy: refused: "+why+"\n")
}

// logOnce logs a line the first time key is seen (up to 64 keys), and
// every time when verbose: a page that keeps knocking does not flood the
// console, and the first refusal of each kind is still there to explain
// why a client does not work.
func (p *Proxy) logOnce(key, format string, args ...any) {
	p.logMu.Lock()
	seen := p.logged[key]
	if !seen && len(p.logged) < 64 {
		p.logged[key] = true
	}
	p.logMu.Unlock()
	if !seen || p.cfg.Verbose {
		p.cfg.Logf(format, args...)
	}
}

// preflight answers an allowed origin's CORS preflight: the method and
// headers it asks for, for ten minutes.
func preflight(w http.ResponseWriter, r *http.Request, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" && validTokenList(req) {
		h.Set("Access-Control-Allow-Headers", req)
	}
	if strings.EqualFold(r.Header.Get("Access-Control-Request-Private-Network"), "true") {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	h.Set("Access-Control-Max-Age", "600")
	h.Add("Vary", "Origin")
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusNoContent)
}

// validTokenList reports whether s is a comma-separated list of header
// names (what a preflight may ask for, echoed back only if so).
func validTokenList(s string) bool {
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return false
		}
		for _, c := range f {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
				return false
			}
		}
	}
	return true
}

// corsWriter adds an allowed origin's CORS headers to every answer,
// replacing any the backend sent (copyResponseHeaders drops those).
type corsWriter struct {
	http.ResponseWriter
	origin string
	set    bool
}

func (c *corsWriter) addHeaders() {
	if c.set {
		return
	}
	c.set = true
	h := c.ResponseWriter.Header()
	h.Set("Access-Control-Allow-Origin", c.origin)
	h.Add("Vary", "Origin")
}

func (c *corsWriter) WriteHeader(code int) { c.addHeaders(); c.ResponseWriter.WriteHeader(code) }

func (c *corsWriter) Write(b []byte) (int, error) {
	c.addHeaders()
	return c.ResponseWriter.Write(b)
}

func (c *corsWriter) Flush() {
	c.addHeaders()
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *corsWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// deadlineBody is a request body read under the body timeout; it notes
// whether the deadline cut it. The deadline is the connection's, set when
// the handler starts. It bounds the body only: net/http clears the
// connection's read deadline itself as soon as the body has been read to
// its end (it then starts reading in the background, to notice a client
// that leaves), so a streamed answer that outlasts the deadline is never
// cut by it.
type deadlineBody struct {
	io.ReadCloser
	timedOut atomic.Bool
}

// limitBody sets the body timeout on r's connection and wraps r.Body.
func (p *Proxy) limitBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(p.cfg.BodyTimeout)); err != nil {
		return // not a net/http connection (a test recorder)
	}
	r.Body = &deadlineBody{ReadCloser: r.Body}
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.timedOut.Store(true)
	}
	return n, err
}

// bodyTimedOut reports whether r's body was cut by the body timeout.
func bodyTimedOut(r *http.Request) bool {
	b, ok := r.Body.(*deadlineBody)
	return ok && b.timedOut.Load()
}

// answerBodyTimeout answers a request whose body did not arrive in time:
// 408, nothing forwarded (or, for a pass-through already under way, the
// backend's request aborted), nothing archived.
func (p *Proxy) answerBodyTimeout(w http.ResponseWriter, r *http.Request) {
	p.stats.add(func(s *statCounters) { s.bodyTimeouts++ })
	p.logOnce("body-timeout", "refused a request: %s %s: its body did not arrive within %s (body-timeout)", r.Method, r.URL.Path, p.cfg.BodyTimeout)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusRequestTimeout)
	fmt.Fprintf(w, "git-lossless proxy: the request body did not arrive within %s (body-timeout)\n", p.cfg.BodyTimeout)
}

// Log lines. Everything a client sends (model names, session ids, paths,
// header values, error texts quoting them) reaches the console through
// Logf; escapeLogf escapes every such argument with logText, so one log
// call prints one line however the client spelled its text.

// rawLog is log text the proxy wrote itself (a stack trace): printed as
// it is.
type rawLog string

// logText returns s with every character that is not printable — line
// breaks, tabs, terminal escapes, Unicode line and paragraph separators,
// bidirectional overrides, invalid UTF-8 — written as a Go escape (\n,
// \x1b, \u2028). Ordinary text, spaces and backslashes stay as they are.
func logText(s string) string {
	clean := true
	for _, c := range s {
		if c == utf8.RuneError || c != ' ' && !strconv.IsPrint(c) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case c == ' ' || strconv.IsPrint(c) && c != utf8.RuneError:
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(c) // '\n', '\x1b', '\u2028'
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// escapeLogf wraps a Logf so that its text arguments are escaped.
func escapeLogf(logf func(string, ...any)) func(string, ...any) {
	return func(format string, args ...any) {
		esc := make([]any, len(args))
		for i, a := range args {
			esc[i] = escapeLogArg(a)
		}
		logf(format, esc...)
	}
}

func escapeLogArg(a any) any {
	switch v := a.(type) {
	case rawLog:
		return string(v)
	case string:
		return logText(v)
	case []byte:
		return logText(string(v))
	case []string:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = logText(s)
		}
		return out
	case error:
		return logText(v.Error())
	case fmt.Stringer:
		return logText(v.String())
	}
	return a
}

// Compile-time checks that the wrappers keep what the relay needs.
var (
	_ http.Flusher = (*corsWriter)(nil)
	_ io.Reader    = (*deadlineBody)(nil)
)
