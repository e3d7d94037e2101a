package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// UserPrefix is the reserved prefix of the suite's users over HTTP:
// HTTPBackend sends the case's user "alice" as "memortest/alice", and
// HTTPHandler refuses any user without it. A memory that also serves real
// users (memor serve --conformance) thus never sees the suite reset, add
// to or read one of them. Prefixing is injective, so the leakage cases
// ("a" and "ab", " " and "x") still probe distinct users.
const UserPrefix = "memortest/"

// Wire types of the HTTP contract (see the package documentation).
type (
	addRequest struct {
		User string    `json:"user"`
		Text string    `json:"text"`
		At   time.Time `json:"at"`
	}
	queryRequest struct {
		User string `json:"user"`
		Q    string `json:"q"`
		K    int    `json:"k"`
	}
	queryResponse struct {
		Results []string `json:"results"`
	}
	resetRequest struct {
		User string `json:"user"`
	}
)

// HTTPBackend returns a Backend that speaks the HTTP contract to the server
// at baseURL (e.g. "http://127.0.0.1:8080/memory"), so that a memory
// written in any language can be measured. Every user goes on the wire
// under UserPrefix. A user, text or question that is not valid UTF-8 is an
// ErrHTTP error, not sent (JSON cannot carry it). client nil means
// http.DefaultClient. The returned Backend is safe for concurrent use if
// client is.
func HTTPBackend(baseURL string, client *http.Client) Backend {
	if client == nil {
		client = http.DefaultClient
	}
	return &httpBackend{base: strings.TrimRight(baseURL, "/"), client: client}
}

type httpBackend struct {
	base   string
	client *http.Client
}

func (h *httpBackend) Add(ctx context.Context, user, text string, at time.Time) error {
	if err := utf8Only("/add", user, text); err != nil {
		return err
	}
	return h.post(ctx, "/add", addRequest{User: UserPrefix + user, Text: text, At: at}, nil)
}

// utf8Only refuses strings encoding/json would silently change.
func utf8Only(path string, ss ...string) error {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: %s: %q is not valid UTF-8, which JSON cannot carry", ErrHTTP, path, s)
		}
	}
	return nil
}

func (h *httpBackend) Query(ctx context.Context, user, q string, k int) ([]string, error) {
	if err := utf8Only("/query", user, q); err != nil {
		return nil, err
	}
	var resp queryResponse
	if err := h.post(ctx, "/query", queryRequest{User: UserPrefix + user, Q: q, K: k}, &resp); err != nil {
		return nil, err
	}
	if resp.Results == nil {
		// A missing field is a broken server, an empty list an abstention.
		return nil, fmt.Errorf("%w: /query: response has no \"results\" array", ErrHTTP)
	}
	return resp.Results, nil
}

func (h *httpBackend) Reset(ctx context.Context, user string) error {
	if err := utf8Only("/reset", user); err != nil {
		return err
	}
	return h.post(ctx, "/reset", resetRequest{User: UserPrefix + user}, nil)
}

// maxBody bounds what is read of a response, so that a runaway server
// cannot exhaust memory.
const maxBody = 16 << 20

func (h *httpBackend) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrHTTP, path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrHTTP, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrHTTP, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%w: %s: reading response: %w", ErrHTTP, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(data))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return fmt.Errorf("%w: %s: status %d: %s", ErrHTTP, path, resp.StatusCode, msg)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s: decoding response: %w", ErrHTTP, path, err)
	}
	return nil
}

// HTTPHandler serves b under the HTTP contract: POST /add, /query and
// /reset relative to where it is mounted (use http.StripPrefix to mount it
// under a path). It is the server side of [HTTPBackend], for exposing a Go
// memory to tools in other languages and for testing the client. It hands
// b the users as sent, and refuses with 400, before calling b, a user
// without UserPrefix and a body that is not valid UTF-8 (or holds an
// unpaired surrogate escape, which JSON would turn into U+FFFD).
func HTTPHandler(b Backend) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add", func(w http.ResponseWriter, r *http.Request) {
		var req addRequest
		if !decode(w, r, &req) || !suiteUser(w, req.User) {
			return
		}
		if req.At.IsZero() {
			http.Error(w, `"at" is required (RFC 3339)`, http.StatusBadRequest)
			return
		}
		if err := b.Add(r.Context(), req.User, req.Text, req.At); err != nil {
			http.Error(w, err.Error(), errStatus(err))
			return
		}
		writeJSON(w, struct{}{})
	})
	mux.HandleFunc("POST /query", func(w http.ResponseWriter, r *http.Request) {
		var req queryRequest
		if !decode(w, r, &req) || !suiteUser(w, req.User) {
			return
		}
		res, err := b.Query(r.Context(), req.User, req.Q, req.K)
		if err != nil {
			http.Error(w, err.Error(), errStatus(err))
			return
		}
		if res == nil {
			res = []string{}
		}
		writeJSON(w, queryResponse{Results: res})
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		var req resetRequest
		if !decode(w, r, &req) || !suiteUser(w, req.User) {
			return
		}
		if err := b.Reset(r.Context(), req.User); err != nil {
			http.Error(w, err.Error(), errStatus(err))
			return
		}
		writeJSON(w, struct{}{})
	})
	return mux
}

// errStatus is 400 for input the backend refused, 500 otherwise.
func errStatus(err error) int {
	if errors.Is(err, ErrInvalidInput) {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// suiteUser refuses (400) a user outside UserPrefix.
func suiteUser(w http.ResponseWriter, user string) bool {
	if strings.HasPrefix(user, UserPrefix) {
		return true
	}
	http.Error(w, fmt.Sprintf("memortest: user %q is not under the reserved prefix %q: the conformance contract serves only the suite's own users", user, UserPrefix), http.StatusBadRequest)
	return false
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		status := http.StatusBadRequest
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, "memortest: bad request: "+err.Error(), status)
		return false
	}
	if msg := invalidJSONText(data); msg != "" {
		http.Error(w, "memortest: bad request: body "+msg, http.StatusBadRequest)
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		http.Error(w, "memortest: bad request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	// Only white space may follow the object (dec.More would let a stray
	// ']' through).
	if _, err := dec.Token(); err != io.EOF {
		http.Error(w, "memortest: bad request: more than one JSON value", http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // the client has gone if this fails
}

// invalidJSONText (a copy of the server package's: memortest imports only
// the standard library) says what is wrong with data as JSON text, or "": it
// must be valid UTF-8, and every \u escape of a surrogate must be half of a
// pair (a high one followed by a low one). encoding/json replaces both
// faults with U+FFFD without an error. It does not check the rest of the
// JSON syntax; the decoder does.
func invalidJSONText(data []byte) string {
	if !utf8.Valid(data) {
		return "is not valid UTF-8"
	}
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(data) {
				return "" // truncated: the decoder says so
			}
			if data[i+1] != 'u' {
				i++ // the escaped byte
				continue
			}
			r, ok := hex4(data, i+2)
			if !ok {
				return "" // a bad escape: the decoder says so
			}
			i += 5
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return "holds an unpaired surrogate escape \\u" + strconv.FormatInt(int64(r), 16)
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := rune(0), i+2 < len(data) && data[i+1] == '\\' && data[i+2] == 'u'
				if ok {
					lo, ok = hex4(data, i+3)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return "holds an unpaired surrogate escape \\u" + strconv.FormatInt(int64(r), 16)
				}
				i += 6
			}
		}
	}
	return ""
}

// hex4 decodes the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(data[i:i+4]), 16, 32)
	return rune(n), err == nil
}
