package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Loops. An upstream that leads back to the proxy — its own address in
// any spelling (127.0.0.1, localhost, [::1], 0.0.0.0 against a wildcard
// listener), or another proxy whose upstream is this one — would make
// every request call itself until the process runs out of files and
// memory. Two checks stop it:
//
//   - At start (Listen, Run, Serve): an upstream whose host resolves to
//     the address the proxy listens on, at its port, is refused with
//     ErrUpstreamIsSelf.
//   - Per request: every request the proxy sends upstream (forwarded
//     requests, summary calls, detection and tokenizer probes) carries
//     HopHeader: the ids of the git-lossless proxies it has passed
//     through, this one's last. A request arriving with this proxy's id
//     in it has come round, and one that has passed through more than
//     maxHops proxies is refused as well: 508 Loop Detected, before its
//     body is read, counted as loops_refused. The answer goes back along
//     the chain, so the client gets the 508.
//
// The id is random per proxy process and names nothing (no host, no
// user, no path). The check holds no state: each request is judged by
// its own header alone, so a client that spells an id into its header
// can get only its own request refused, never anyone else's. A client's
// header is not passed on as it came: only well-formed ids go upstream,
// with this proxy's id appended. The header is never relayed back to a
// client in an answer.

// HopHeader lists the git-lossless proxies a request has passed through.
const HopHeader = "X-Git-Lossless-Hop"

// maxHops is the most proxies a request may have passed through. Chains
// of git-lossless proxies are one or two long in practice; a longer one
// is a loop through processes that restarted (new ids) or a client
// playing games.
const maxHops = 8

// ErrUpstreamIsSelf is returned by Listen, Run and Serve when the
// upstream is the proxy's own listening address.
var ErrUpstreamIsSelf = errors.New("the upstream is this proxy itself")

// newInstanceID returns a fresh random id for HopHeader.
func newInstanceID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "glp-" + hex.EncodeToString(b[:])
}

// validHopID reports whether s may be a hop id: 1 to 64 letters, digits,
// '.', '_' or '-' (anything else cannot be a git-lossless proxy's id and
// is dropped).
func validHopID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// hopChain returns the well-formed ids of h's HopHeader (every line,
// comma-separated), at most maxHops+1 of them: enough to tell that there
// are too many.
func hopChain(h http.Header) []string {
	var ids []string
	for _, v := range h.Values(HopHeader) {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); validHopID(f) {
				ids = append(ids, f)
				if len(ids) > maxHops {
					return ids
				}
			}
		}
	}
	return ids
}

// checkLoop returns why r must be refused as a loop, or "".
func (p *Proxy) checkLoop(r *http.Request) string {
	ids := hopChain(r.Header)
	for _, id := range ids {
		if id == p.id {
			return "this request has already passed through this proxy: its upstream leads back to it"
		}
	}
	if len(ids) > maxHops {
		return fmt.Sprintf("this request has passed through more than %d git-lossless proxies", maxHops)
	}
	return ""
}

// refuseLoop answers 508 Loop Detected, without reading the body, and
// closes the connection. The body is an error in the route's dialect,
// so that a client shows the reason.
func (p *Proxy) refuseLoop(w http.ResponseWriter, r *http.Request, why string) {
	p.stats.add(func(s *statCounters) { s.loops++ })
	p.note(Event{Kind: "loop", Detail: r.Method + " " + r.URL.Path + ": " + why})
	p.logOnce("loop "+why, "refused a request (508 loop detected): %s %s: %s; check --upstream (%s)", r.Method, r.URL.Path, why, p.up.base.String())
	msg := "git-lossless proxy: loop detected: " + why + " (upstream " + p.up.base.String() + ")"
	var body []byte
	if r.URL.Path == "/v1/messages" {
		body, _ = marshalNoEscape(map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": msg}})
	} else {
		body, _ = marshalNoEscape(map[string]any{"error": map[string]any{"message": msg, "type": "upstream_error", "code": "loop_detected"}})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusLoopDetected)
	w.Write(append(body, '\n'))
}

// hopTransport adds the proxy's id to HopHeader of every request it
// carries upstream, after the ids already there (a forwarded request's
// chain, which upstreamRequest has cleaned).
type hopTransport struct {
	base http.RoundTripper
	id   string
}

func (t *hopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r2 := new(http.Request)
	*r2 = *req // a RoundTripper must not change the caller's request
	r2.Header = req.Header.Clone()
	if r2.Header == nil {
		r2.Header = http.Header{}
	}
	chain := append(hopChain(req.Header), t.id)
	r2.Header.Set(HopHeader, strings.Join(chain, ", "))
	return t.base.RoundTrip(r2)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport.
func (t *hopTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// checkUpstreamNotSelf refuses an upstream that is the proxy's own
// listener at bound: same port, and a host that resolves to the bound
// address (or to any local address when the proxy listens on all of
// them). A host that does not resolve now is let through: the backend may
// not be up yet, and the per-request check still stops a loop.
func checkUpstreamNotSelf(ctx context.Context, upstream string, bound net.Addr) error {
	ta, ok := bound.(*net.TCPAddr)
	if !ok {
		return nil
	}
	u, err := url.Parse(upstream)
	if err != nil {
		return nil // validate has refused it already
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if port != strconv.Itoa(ta.Port) {
		return nil
	}
	host := u.Hostname()
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	for _, ip := range ips {
		if reachesListener(ip, ta.IP) {
			return fmt.Errorf("upstream %s: %w: it listens on %s, and %s is %s; every request would call itself until the process runs out of files",
				upstream, ErrUpstreamIsSelf, bound, host, ip)
		}
	}
	return nil
}

// reachesListener reports whether a connection to ip arrives at a
// listener bound to lip (same port assumed). Dialling an unspecified
// address (0.0.0.0, ::) reaches the local host's loopback; a wildcard
// listener takes every local address.
func reachesListener(ip, lip net.IP) bool {
	ip, lip = unmap(ip), unmap(lip)
	if ip.IsUnspecified() {
		if ip.To4() != nil {
			ip = net.IPv4(127, 0, 0, 1)
		} else {
			ip = net.IPv6loopback
		}
	}
	if lip.IsUnspecified() {
		return ip.IsLoopback() || isLocalIP(ip)
	}
	return ip.Equal(lip)
}

// unmap turns an IPv4-mapped IPv6 address into its IPv4 form.
func unmap(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip
}

// isLocalIP reports whether ip is one of this machine's interface
// addresses.
func isLocalIP(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && unmap(n.IP).Equal(ip) {
			return true
		}
	}
	return false
}
