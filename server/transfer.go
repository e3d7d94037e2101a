package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/memor-db/memor"
)

// DefaultMaxImportBytes bounds an import's body when
// Options.MaxImportBytes is 0.
const DefaultMaxImportBytes = 256 << 20

// exportUser streams GET /v1/users/{user}/export: the user's episodes in
// the export format (memor.ExportFormat), as application/x-ndjson. The
// user is checked before the first byte; a failure after it (the store
// failing mid-read) aborts the response, so a client never takes a
// truncated file for a whole one.
func (h *Handler) exportUser(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	if err := memor.ValidUser(user); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="memor-export.jsonl"`)
	h.stampFreshness(w, r)
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := h.e.Export(r.Context(), bw, user); err != nil {
		h.log.Error("server: export failed", "method", r.Method, "path", r.URL.Path, "err", err)
		panic(http.ErrAbortHandler)
	}
	if err := bw.Flush(); err != nil {
		panic(http.ErrAbortHandler)
	}
}

// importUser serves POST /v1/users/{user}/import: the body is a backup of
// that user in the export format (application/x-ndjson, or
// application/json), every episode the user's. It answers 200 with the
// memor.ImportSummary, 400 invalid_import naming the line and field of a
// bad line (nothing imported), 409 history_conflict if the user has
// history later than the file's. An import only adds episodes recorded
// after everything the user has (or skips those already held): it cannot
// rewrite or delete history.
func (h *Handler) importUser(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	if err := memor.ValidUser(user); err != nil {
		h.fail(w, r, err)
		return
	}
	var sum memor.ImportSummary
	var err error
	if h.o.Router == nil {
		sum, err = h.e.Import(r.Context(), r.Body, memor.ImportOnly(user))
	} else {
		// A cluster node's write may run twice (Router.Write retries it
		// after catching up): the body is read once, within the import
		// limit, and each run imports from the bytes.
		var body []byte
		if body, err = readBody(r, importBody); err == nil {
			err = h.write(r, func() (err error) {
				sum, err = h.e.Import(r.Context(), bytes.NewReader(body), memor.ImportOnly(user))
				return err
			})
		}
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) { // read by Import itself
		err = fmt.Errorf("%w: %s larger than %d bytes", memor.ErrTooLarge, importBody, tooBig.Limit)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.e.Sync(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sum)
}

// isImport reports whether r is a request to the import route.
func isImport(r *http.Request) bool {
	seg := strings.Split(r.URL.EscapedPath(), "/")
	return r.Method == http.MethodPost && len(seg) == 5 && seg[0] == "" && seg[1] == "v1" && seg[2] == "users" &&
		seg[3] != "" && seg[4] == "import"
}

// isNDJSON reports whether ct is application/x-ndjson (at most with a
// UTF-8 charset). Like application/json it is not a type a web form or a
// no-cors fetch can send, so a page of another origin still needs the
// preflight the guard refuses.
func isNDJSON(ct string) bool {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/x-ndjson" {
		return false
	}
	for k, v := range params {
		if k != "charset" || (!strings.EqualFold(v, "utf-8") && !strings.EqualFold(v, "utf8")) {
			return false
		}
	}
	return true
}

// bodyLimit is how many bytes r's body may have.
func (h *Handler) bodyLimit(r *http.Request) int64 {
	if isImport(r) {
		if h.o.MaxImportBytes > 0 {
			return h.o.MaxImportBytes
		}
		return DefaultMaxImportBytes
	}
	return h.o.MaxBodyBytes
}
