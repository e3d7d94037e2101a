package memor_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract/llm"
	"github.com/memor-db/memor/internal/fakellm"
)

// modelServer is an OpenAI-compatible chat-completions endpoint for the
// engine-level tests: extraction requests (schema memor_ops) are answered
// by extract(text, attempt), judge requests (memor_verdict) by judge(n).
type modelServer struct {
	mu       sync.Mutex
	attempts map[string]int // extraction requests seen per episode text
	judged   atomic.Int32
	extract  func(text string, attempt int) (status int, content string)
	judge    func(n int) (status int, content string)
}

func (s *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := fakellm.ReadChat(r)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var status int
	var content string
	switch req.Schema {
	case fakellm.Ops:
		text := req.Text()
		s.mu.Lock()
		s.attempts[text]++
		n := s.attempts[text]
		s.mu.Unlock()
		status, content = s.extract(text, n)
	case fakellm.Verdict:
		status, content = s.judge(int(s.judged.Add(1)))
	default:
		status = http.StatusBadRequest
	}
	if status != http.StatusOK {
		w.Header().Set("Retry-After-Ms", "1")
		http.Error(w, `{"error":{"message":"try later"}}`, status)
		return
	}
	fakellm.WriteCompletion(w, "m", content)
}

func (s *modelServer) calls(text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[text]
}

// llmEngine opens an engine whose extractor and judge talk to s.
func llmEngine(t *testing.T, s *modelServer, opts ...llm.Option) (*memor.Engine, string) {
	t.Helper()
	if s.attempts == nil {
		s.attempts = map[string]int{}
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	base := []llm.Option{llm.WithBaseURL(srv.URL + "/v1"), llm.WithModel("m"), llm.WithAPIKey("k"),
		llm.WithTimeout(5 * time.Second), llm.WithMaxRetries(2), llm.WithMaxRetryDelay(5 * time.Millisecond)}
	c, err := llm.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return openTest(t, memor.Options{Extractor: llm.NewExtractor(c), Judge: llm.NewJudge(c)})
}

func opJSON(pred, obj, quote string) string {
	return fmt.Sprintf(`{"kind":"assert","subject":"user","predicate":%q,"object":%q,"context":"","valid_from":"","confidence":1,"additive":false,"quote":%q}`, pred, obj, quote)
}

// fullDump renders every version of every fact the log mentions, and the
// log itself: what "the same state" means.
func fullDump(t *testing.T, e *memor.Engine, user string) string {
	t.Helper()
	ctx := context.Background()
	log, err := e.Log(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	pairs := map[[2]string]bool{}
	for _, d := range log {
		pairs[[2]string{d.Subject, d.Predicate}] = true
	}
	keys := make([][2]string, 0, len(pairs))
	for k := range pairs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+"\x00"+keys[i][1] < keys[j][0]+"\x00"+keys[j][1] })
	var b strings.Builder
	for _, k := range keys {
		fs, err := e.History(ctx, user, k[0], k[1])
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			fmt.Fprintf(&b, "%+v\n", f)
		}
	}
	for _, d := range log {
		fmt.Fprintf(&b, "%+v\n", d)
	}
	return b.String()
}

// TestLLMPipeline runs the asynchronous pipeline over the LLM extractor and
// judge against a fake endpoint: malformed JSON, a wrong schema and an
// invented quote each become a failure recorded on their episode (nothing
// of them applied), a 429 is retried, the judge is asked once per unknown
// predicate, Retry applies the failed episodes once the model behaves, and
// Rebuild — with a judge that would now answer differently — reproduces
// the same state without asking it again.
func TestLLMPipeline(t *testing.T) {
	t.Parallel()
	const (
		tesla     = "I drive a Tesla now."
		malformed = "I live in Porto."
		schema    = "I speak Portuguese."
		invented  = "I play the cello."
		throttled = "I like fado."
		rivian    = "Sold it: I drive a Rivian now."
	)
	var healed atomic.Bool
	s := &modelServer{
		extract: func(text string, attempt int) (int, string) {
			good := map[string]string{
				tesla:     opJSON("current_car", "Tesla", "I drive a Tesla now"),
				malformed: opJSON("lives_in", "Porto", "I live in Porto"),
				schema:    opJSON("speaks_language", "Portuguese", "I speak Portuguese"),
				invented:  opJSON("plays_instrument", "cello", "I play the cello"),
				throttled: opJSON("likes", "fado", "I like fado"),
				rivian:    opJSON("current_car", "Rivian", "I drive a Rivian now"),
			}[text]
			if healed.Load() {
				return http.StatusOK, `{"ops":[` + good + `]}`
			}
			switch text {
			case malformed:
				return http.StatusOK, `{"ops":[` + good // cut off
			case schema:
				return http.StatusOK, `{"facts":[` + good + `]}`
			case invented:
				// One honest op beside an invented one: nothing of the
				// answer may be applied.
				return http.StatusOK, `{"ops":[` + good + `,` + opJSON("lives_in", "Vienna", "I moved to Vienna") + `]}`
			case throttled:
				if attempt == 1 {
					return http.StatusTooManyRequests, ""
				}
			}
			return http.StatusOK, `{"ops":[` + good + `]}`
		},
		judge: func(n int) (int, string) {
			if n == 1 {
				return http.StatusOK, `{"verdict":"replace","reason":"one car at a time"}`
			}
			return http.StatusOK, `{"verdict":"append","reason":"changed its mind"}`
		},
	}
	e, _ := llmEngine(t, s)
	ctx := context.Background()
	for i, text := range []string{tesla, malformed, schema, invented, throttled, rivian} {
		if _, err := e.Add(ctx, "u", text, memor.At(day(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	f, err := e.Freshness(ctx, "u")
	if err != nil || f != (memor.Freshness{Applied: 6, Latest: 6, Pending: 0, Failed: 3}) {
		t.Fatalf("freshness %+v, %v", f, err)
	}
	fails, err := e.Failed(ctx, "u")
	if err != nil || len(fails) != 3 {
		t.Fatalf("failed: %+v, %v", fails, err)
	}
	for i, want := range []error{llm.ErrMalformed, llm.ErrSchema, llm.ErrInvented} {
		if fails[i].Seq != uint64(i+2) || !strings.Contains(fails[i].Error, want.Error()) {
			t.Errorf("failure %d: episode %d, %q; want episode %d, %v", i, fails[i].Seq, fails[i].Error, i+2, want)
		}
	}
	if n := s.calls(throttled); n != 2 {
		t.Errorf("throttled episode took %d requests, want 2 (429, then success)", n)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[current_car=Rivian likes=fado]" {
		t.Fatalf("state with failures: %s", got)
	}
	log, _ := e.Log(ctx, "u")
	for _, d := range log {
		if d.Episode >= 2 && d.Episode <= 4 {
			t.Fatalf("a failed episode left a decision: %+v", d)
		}
	}
	if s.judged.Load() != 1 {
		t.Fatalf("judge asked %d times, want once for current_car", s.judged.Load())
	}

	if n, err := e.Retry(ctx, "u"); err != nil || n != 3 {
		t.Fatalf("retry while the model misbehaves: %d still failing, %v", n, err)
	}
	healed.Store(true)
	if n, err := e.Retry(ctx, "u"); err != nil || n != 0 {
		t.Fatalf("retry: %d still failing, %v", n, err)
	}
	want := "[current_car=Rivian likes=fado lives_in=Porto plays_instrument=cello speaks_language=Portuguese]"
	if got := fmt.Sprint(objects(t, e, "u")); got != want {
		t.Fatalf("after retry: %s", got)
	}
	if f, _ := e.Freshness(ctx, "u"); f.Failed != 0 {
		t.Fatalf("freshness after retry: %+v", f)
	}

	// Rebuild replays every episode through the (now healthy) extractor;
	// the judge would now say "append", which would keep Tesla current,
	// but its cached verdict is used.
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != want {
		t.Fatalf("after rebuild: %s, want %s", got, want)
	}
	if s.judged.Load() != 1 {
		t.Fatalf("rebuild asked the judge again (%d calls)", s.judged.Load())
	}
	first := fullDump(t, e, "u")
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if again := fullDump(t, e, "u"); again != first {
		t.Fatalf("second rebuild differs:\n%s\n---\n%s", first, again)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLLMSlowModel: Add returns at once while the model is slow; the
// per-call timeout turns the hung call into a recorded failure (the user's
// later episodes are not held up behind it) and Retry applies it.
func TestLLMSlowModel(t *testing.T) {
	t.Parallel()
	const slow, fast = "I live in Graz.", "I like skiing."
	var healed atomic.Bool
	unblock := make(chan struct{})
	s := &modelServer{
		extract: func(text string, _ int) (int, string) {
			if text == slow && !healed.Load() {
				select { // past the client's timeout
				case <-time.After(3 * time.Second):
				case <-unblock:
				}
			}
			if text == slow {
				return http.StatusOK, `{"ops":[` + opJSON("lives_in", "Graz", "I live in Graz") + `]}`
			}
			return http.StatusOK, `{"ops":[` + opJSON("likes", "skiing", "I like skiing") + `]}`
		},
		judge: func(int) (int, string) { return http.StatusInternalServerError, "" },
	}
	e, _ := llmEngine(t, s, llm.WithTimeout(time.Second), llm.WithMaxRetries(0))
	ctx := context.Background()
	for _, text := range []string{slow, fast} {
		if _, err := e.Add(ctx, "u", text); err != nil {
			t.Fatal(err)
		}
	}
	// Had Add waited for the model, the slow episode would be applied or
	// failed by now (the call times out after a second).
	if f, _ := e.Freshness(ctx, "u"); f.Applied != 0 || f.Latest != 2 {
		t.Fatalf("Add waited for the model: %+v", f)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	fails, _ := e.Failed(ctx, "u")
	if len(fails) != 1 || fails[0].Seq != 1 || !strings.Contains(fails[0].Error, context.DeadlineExceeded.Error()) {
		t.Fatalf("failed: %+v", fails)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[likes=skiing]" {
		t.Fatalf("state: %s", got)
	}
	close(unblock)
	healed.Store(true)
	if n, err := e.Retry(ctx, "u"); err != nil || n != 0 {
		t.Fatalf("retry: %d, %v", n, err)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[likes=skiing lives_in=Graz]" {
		t.Fatalf("after retry: %s", got)
	}
}

// TestJudgeFailureIsRecorded: a judge that keeps failing (5xx past its
// retries) makes the episode a recorded failure like an extraction
// failure: the user's ingestion does not stall behind it, nothing of the
// episode is applied, and Retry applies it once the judge answers.
func TestJudgeFailureIsRecorded(t *testing.T) {
	t.Parallel()
	const car, city = "I drive a Volvo.", "I live in Malmo."
	var healed atomic.Bool
	s := &modelServer{
		extract: func(text string, _ int) (int, string) {
			if text == car {
				return http.StatusOK, `{"ops":[` + opJSON("likes", "driving", "I drive") + `,` + opJSON("current_car", "Volvo", "I drive a Volvo") + `]}`
			}
			return http.StatusOK, `{"ops":[` + opJSON("lives_in", "Malmo", "I live in Malmo") + `]}`
		},
		judge: func(int) (int, string) {
			if !healed.Load() {
				return http.StatusBadGateway, ""
			}
			return http.StatusOK, `{"verdict":"replace","reason":"one car"}`
		},
	}
	e, _ := llmEngine(t, s)
	ctx := context.Background()
	for _, text := range []string{car, city} {
		if _, err := e.Add(ctx, "u", text); err != nil {
			t.Fatal(err)
		}
	}
	flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.Flush(flushCtx, "u"); err != nil {
		t.Fatalf("ingestion stalled behind a failing judge: %v", err)
	}
	if n := s.judged.Load(); n != 3 {
		t.Errorf("judge asked %d times, want 3 (one call, two retries)", n)
	}
	f, _ := e.Freshness(ctx, "u")
	if f.Failed != 1 || f.Pending != 0 {
		t.Fatalf("freshness: %+v", f)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[lives_in=Malmo]" {
		t.Fatalf("partial state from the failed episode: %s", got)
	}
	fails, _ := e.Failed(ctx, "u")
	if len(fails) != 1 || !strings.Contains(fails[0].Error, "judge") {
		t.Fatalf("failed: %+v", fails)
	}
	if n, err := e.Retry(ctx, "u"); err != nil || n != 1 {
		t.Fatalf("retry while the judge is down: %d, %v", n, err)
	}
	healed.Store(true)
	if n, err := e.Retry(ctx, "u"); err != nil || n != 0 {
		t.Fatalf("retry: %d, %v", n, err)
	}
	if got := fmt.Sprint(objects(t, e, "u")); got != "[current_car=Volvo likes=driving lives_in=Malmo]" {
		t.Fatalf("after retry: %s", got)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
