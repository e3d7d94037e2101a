package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/memor-db/memor"
)

// TestStudioMount: Options.Studio is served under StudioPath behind the
// guard; the session cookie the login sets passes the token check there
// and nowhere else, and without a Studio there is no login and no cookie.
func TestStudioMount(t *testing.T) {
	e := openEngine(t, memor.Options{})
	const token = "studio-mount-token-0123"
	studio := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "studio "+r.URL.Path) })
	cookie := &http.Cookie{Name: "memor_studio", Value: token}
	for _, c := range []struct {
		name   string
		studio http.Handler
		path   string
		cookie *http.Cookie
		want   int
	}{
		{"studio page, cookie", studio, "/studio/u/alice/", cookie, 200},
		{"studio page, no cookie", studio, "/studio/u/alice/", nil, 401},
		{"studio page, token in its query", studio, "/studio/?token=" + token, nil, 401},
		{"login, token", studio, "/studio/login?token=" + token, nil, 303},
		{"login, wrong token", studio, "/studio/login?token=nope", nil, 401},
		{"API, cookie", studio, "/v1/users", cookie, 401},
		{"no studio, cookie", nil, "/studio/", cookie, 401},
		{"no studio, login", nil, "/studio/login?token=" + token, nil, 401},
	} {
		ts := httptest.NewServer(New(e, Options{Token: token, Studio: c.studio}))
		req, _ := http.NewRequest(http.MethodGet, ts.URL+c.path, nil)
		if c.cookie != nil {
			req.AddCookie(c.cookie)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
		if c.want == 303 {
			if len(resp.Cookies()) != 1 || resp.Cookies()[0].Value != token || !resp.Cookies()[0].HttpOnly || resp.Header.Get("Location") != "/studio/" {
				t.Errorf("%s: cookies %v, Location %q", c.name, resp.Cookies(), resp.Header.Get("Location"))
			}
		}
		ts.Close()
	}
}
