package server

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// StudioPath is the prefix Options.Studio is served under.
const StudioPath = "/studio/"

// studioCookie carries the bearer token of a browser session of the
// studio: a browser sends no Authorization header when it follows a link.
const studioCookie = "memor_studio"

// studioSession reports whether r, a request under StudioPath, carries the
// token the way a browser can: in the studio's cookie, or, on the login
// route alone, in the query string (the URL `memor studio` prints). Every
// other check of the guard (Host, Origin, Sec-Fetch-Site, Content-Type)
// applies to the studio as to the API; the cookie is SameSite=Strict and
// scoped to StudioPath, so no API route accepts it.
func (h *Handler) studioSession(r *http.Request) bool {
	if h.o.Studio == nil || !strings.HasPrefix(r.URL.Path, StudioPath) {
		return false
	}
	if c, err := r.Cookie(studioCookie); err == nil && h.tokenIs(c.Value) {
		return true
	}
	return r.Method == http.MethodGet && r.URL.Path == StudioPath+"login" && h.tokenIs(r.URL.Query().Get("token"))
}

func (h *Handler) tokenIs(s string) bool {
	return s != "" && subtle.ConstantTimeCompare([]byte(s), []byte(h.o.Token)) == 1
}

// studioLogin turns the token of the login URL into the session cookie and
// sends the browser on to the studio, so the token leaves the address bar.
func (h *Handler) studioLogin(w http.ResponseWriter, r *http.Request) {
	if h.o.Token != "" {
		http.SetCookie(w, &http.Cookie{Name: studioCookie, Value: h.o.Token, Path: StudioPath,
			HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	}
	http.Redirect(w, r, StudioPath, http.StatusSeeOther)
}
