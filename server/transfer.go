package server

import (
	"bufio"
	"net/http"

	"github.com/memor-db/memor"
)

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
