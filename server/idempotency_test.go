package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestIdempotencyKeyHeader: an Add whose answer was lost (the connection
// cut after the server stored it), retried with the same Idempotency-Key,
// answers 200 with the first episode and "repeated"; the store holds one
// episode. The key with another text is 409 idempotency_conflict; a bad
// key, or two of them, is 400.
func TestIdempotencyKeyHeader(t *testing.T) {
	a := newAPI(t, Options{})
	ctx := context.Background()
	body := `{"text":"I live in Oslo."}`
	conn, err := net.Dial("tcp", a.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /v1/users/u/episodes HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nIdempotency-Key: req-1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := a.e.Freshness(ctx, "u")
		if err == nil && f.Latest == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first Add was not stored")
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn.Close() // the answer is lost
	for _, path := range []string{"/v1/users/u/episodes", "/v1/users/u/episodes?wait=true"} {
		st, got := a.doHeaders("POST", path, body, map[string]string{IdempotencyHeader: "req-1"})
		ep, _ := got["episode"].(map[string]any)
		if st != http.StatusOK || got["repeated"] != true || ep["seq"] != float64(1) || ep["key"] != "req-1" {
			t.Fatalf("retry %s: %d %v; want 200 repeating episode 1", path, st, got)
		}
		if path != "/v1/users/u/episodes" && got["applied"] != true {
			t.Fatalf("retry with wait: %v; want applied", got)
		}
	}
	if err := a.e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if eps, err := a.e.Episodes(ctx, "u"); err != nil || len(eps) != 1 {
		t.Fatalf("u holds %d episodes (%v), want 1", len(eps), err)
	}
	st, code, _ := a.raw("POST", "/v1/users/u/episodes", `{"text":"I live in Rome."}`, map[string]string{"Content-Type": "application/json", IdempotencyHeader: "req-1"})
	if st != http.StatusConflict || code != "idempotency_conflict" {
		t.Fatalf("the key with another text: %d %s", st, code)
	}
	st, code, _ = a.raw("POST", "/v1/users/u/episodes", body, map[string]string{"Content-Type": "application/json", IdempotencyHeader: ""})
	if st != http.StatusBadRequest || code != "invalid_idempotency_key" {
		t.Fatalf("an empty key: %d %s", st, code)
	}
	req, _ := http.NewRequest("POST", a.srv.URL+"/v1/users/u/episodes", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add(IdempotencyHeader, "a")
	req.Header.Add(IdempotencyHeader, "b")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("two keys: %d, want 400", resp.StatusCode)
	}
}
