package memortest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

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
// written in any language can be measured. client nil means
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
	return h.post(ctx, "/add", addRequest{User: user, Text: text, At: at}, nil)
}

func (h *httpBackend) Query(ctx context.Context, user, q string, k int) ([]string, error) {
	var resp queryResponse
	if err := h.post(ctx, "/query", queryRequest{User: user, Q: q, K: k}, &resp); err != nil {
		return nil, err
	}
	if resp.Results == nil {
		// A missing field is a broken server, an empty list an abstention.
		return nil, fmt.Errorf("%w: /query: response has no \"results\" array", ErrHTTP)
	}
	return resp.Results, nil
}

func (h *httpBackend) Reset(ctx context.Context, user string) error {
	return h.post(ctx, "/reset", resetRequest{User: user}, nil)
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
// memory to tools in other languages and for testing the client.
func HTTPHandler(b Backend) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add", func(w http.ResponseWriter, r *http.Request) {
		var req addRequest
		if !decode(w, r, &req) {
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
		if !decode(w, r, &req) {
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
		if !decode(w, r, &req) {
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

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		status := http.StatusBadRequest
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, "memortest: bad request: "+err.Error(), status)
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
