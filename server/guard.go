package server

import (
	"crypto/subtle"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MinTokenBytes is the shortest bearer token Serve and ListenAndServe
// accept.
const MinTokenBytes = 16

// maxLoggedRefusals bounds how many distinct refused origins and hosts a
// Handler logs (each once), so that a page cannot flood the log.
const maxLoggedRefusals = 64

// NormalizeOrigin checks that s is a web origin, scheme://host[:port] with
// scheme http or https and nothing else (no path but "/", no user, query
// or fragment), and returns it as a browser serializes it in an Origin
// header: lowercase, without the scheme's default port. The error wraps
// ErrInvalidOrigin.
func NormalizeOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") || (u.Path != "" && u.Path != "/") || u.Opaque != "" {
		return "", fmt.Errorf("%w: %q: want scheme://host[:port], e.g. https://app.example or http://localhost:3000", ErrInvalidOrigin, s)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%w: %q: bad port", ErrInvalidOrigin, s)
		}
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, nil
}

// loopbackName reports whether host (without a port) is "localhost" or a
// loopback IP: a name no DNS answer can make a browser send for another
// site.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// splitHost splits a Host header or an origin's authority into host and
// port; a missing port is def.
func splitHost(hostport, def string) (host, port string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), def
}

// sameServer reports whether origin (normalized) names the server the
// request was sent to: the same port, and the same host or two loopback
// names of it.
func sameServer(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if u.Scheme != scheme {
		return false
	}
	def := "80"
	if scheme == "https" {
		def = "443"
	}
	oh, op := splitHost(u.Host, def)
	rh, rp := splitHost(r.Host, def)
	if op != rp {
		return false
	}
	return strings.EqualFold(oh, rh) || (loopbackName(oh) && loopbackName(rh))
}

// guard is the part of ServeHTTP that decides, before any route, whether a
// request may be served at all. It writes the refusal and returns false,
// or returns true.
func (h *Handler) guard(w http.ResponseWriter, r *http.Request) bool {
	// DNS rebinding: a page of attacker.example whose name now resolves
	// to 127.0.0.1 sends Host: attacker.example.
	if !h.o.AnyHost {
		host, _ := splitHost(r.Host, "")
		if !loopbackName(host) {
			h.refused("host", r.Host, r)
			writeErr(w, http.StatusForbidden, "forbidden_host", fmt.Sprintf("Host %q is not a loopback name or address: this server answers only requests sent to 127.0.0.1, [::1] or localhost", r.Host))
			return false
		}
	}
	// Web pages: a browser names the page's origin in Origin (every
	// request but a no-cors GET) and says in Sec-Fetch-Site whether the
	// page is of this origin.
	origin := r.Header.Get("Origin")
	allowed := false
	if origin != "" {
		if o, err := NormalizeOrigin(origin); err == nil && h.origins[o] {
			allowed, origin = true, o
		}
	}
	if !allowed {
		site := r.Header.Get("Sec-Fetch-Site")
		foreign := site == "cross-site" || site == "same-site"
		if origin != "" {
			o, err := NormalizeOrigin(origin)
			foreign = foreign || err != nil || !sameServer(o, r)
		}
		if foreign {
			who := origin
			if who == "" {
				who = "Sec-Fetch-Site: " + site
			}
			h.refused("origin", who, r)
			writeErr(w, http.StatusForbidden, "forbidden_origin", fmt.Sprintf("refused a request from the web page at %s: a page may call this server only if its origin is allowed (memor serve --allow-origin)", who))
			return false
		}
	} else {
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Add("Vary", "Origin")
		hd.Set("Access-Control-Expose-Headers", "Memor-Applied, Memor-Latest, Memor-Pending, Memor-Failed, Memor-Node, Memor-Forwarded-By, Mcp-Session-Id")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			hd.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			// The Mcp- headers and Last-Event-ID are those an MCP
			// client sends to MCPPath.
			hd.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, Memor-Redirect, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-ID")
			hd.Set("Access-Control-Max-Age", "600")
			if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
				hd.Set("Access-Control-Allow-Private-Network", "true")
			}
			w.WriteHeader(http.StatusNoContent)
			return false
		}
	}
	if len(h.origins) > 0 && !allowed {
		w.Header().Add("Vary", "Origin")
	}
	if h.o.Token != "" && r.URL.Path != "/v1/health" && !h.authorized(r.Header.Get("Authorization")) && !h.studioSession(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="memor"`)
		writeErr(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token: send Authorization: Bearer $MEMOR_TOKEN")
		return false
	}
	if p := r.URL.EscapedPath(); cleanPath(p) != p || dotSegment(p) {
		// The mux would redirect to the cleaned path, which can name
		// another user ("/v1/users//alice" → user "alice"): refuse it.
		// A percent-encoded dot segment is the same segment (RFC 3986
		// §6.2.2.2).
		writeErr(w, http.StatusBadRequest, "bad_request", "path "+p+" has an empty, '.' or '..' segment (also percent-encoded); escape a '/' in a user ID as %2F")
		return false
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "query string does not parse: "+err.Error())
		return false
	}
	for k, vs := range q {
		for _, v := range append(vs, k) {
			if !utf8.ValidString(v) {
				writeErr(w, http.StatusBadRequest, "invalid_text", fmt.Sprintf("query parameter %q is not valid UTF-8", k))
				return false
			}
		}
	}
	if r.ContentLength != 0 && !(isImport(r) && isNDJSON(r.Header.Get("Content-Type"))) {
		if msg := notJSON(r.Header.Get("Content-Type")); msg != "" {
			writeErr(w, http.StatusUnsupportedMediaType, "unsupported_media_type", msg)
			return false
		}
	}
	return true
}

// authorized reports whether an Authorization header carries the token:
// the scheme "Bearer" in any case (RFC 7235 §2.1), one or more spaces, the
// token compared in constant time.
func (h *Handler) authorized(header string) bool {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	tok = strings.TrimLeft(tok, " ")
	return subtle.ConstantTimeCompare([]byte(tok), []byte(h.o.Token)) == 1
}

// dotSegment reports whether a segment of the escaped path p is "." or
// ".." once unescaped ("%2E%2E", ".%2e").
func dotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if !strings.Contains(seg, "%") {
			continue // the literal ones are cleanPath's
		}
		if s, err := url.PathUnescape(seg); err == nil && (s == "." || s == "..") {
			return true
		}
	}
	return false
}

// notJSON says what is wrong with a body's Content-Type, or "" if it is
// application/json (in any case, with at most a charset of UTF-8).
func notJSON(ct string) string {
	const want = "send Content-Type: application/json (with curl: -H 'Content-Type: application/json')"
	if ct == "" {
		return "request has a body but no Content-Type: " + want
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" || strings.HasSuffix(strings.TrimSpace(ct), ";") {
		return fmt.Sprintf("Content-Type %q is not JSON: %s", ct, want)
	}
	for k, v := range params {
		if k != "charset" || (!strings.EqualFold(v, "utf-8") && !strings.EqualFold(v, "utf8")) {
			return fmt.Sprintf("Content-Type %q: the body must be UTF-8 JSON: %s", ct, want)
		}
	}
	return ""
}

// refusals remembers which refused origins and hosts were logged.
type refusals struct {
	mu   sync.Mutex
	seen map[string]bool
}

// refused logs a refused page or host once per distinct value (up to
// maxLoggedRefusals of them), at Warn: the person running the server
// learns that a page tried, and a page cannot flood the log.
func (h *Handler) refused(kind, value string, r *http.Request) {
	key := kind + " " + value
	h.ref.mu.Lock()
	first := !h.ref.seen[key] && len(h.ref.seen) < maxLoggedRefusals
	if first {
		h.ref.seen[key] = true
	}
	h.ref.mu.Unlock()
	if first {
		// The route pattern, never the path: a path holds user and fact
		// IDs, which a log must not (see logRequest).
		_, route := h.mux.Handler(r)
		h.log.Warn("server: refused a request from outside (logged once per "+kind+")", kind, value, "method", r.Method, "route", route)
	}
}
