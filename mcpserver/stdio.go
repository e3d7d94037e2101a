package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memor-db/memor/internal/jsontext"
)

// MaxLineBytes is Transport's default bound on one JSON-RPC line, the SDK's
// own default.
const MaxLineBytes = mcp.DefaultMaxLineLength

// MaxDepth bounds how deeply a JSON-RPC line may nest arrays and objects:
// the SDK's own limit.
const MaxDepth = 1000

// Transport is newline-delimited JSON-RPC over a reader and a writer (stdin
// and stdout for `memor mcp`), as the SDK's [mcp.IOTransport], except that
// a malformed line does not end the session. The SDK closes the connection
// on the first line it cannot decode; Transport checks each line before the
// SDK sees it, answers a bad one with a JSON-RPC error and logs it, and
// keeps serving. A line is refused when it:
//
//   - is longer than MaxLineBytes, is not valid UTF-8, is not one JSON
//     value, nests deeper than MaxDepth, or holds a string escape that is
//     half a UTF-16 surrogate pair (\ud800 alone): -32700 parse error.
//     Decoding would turn invalid UTF-8 and lone surrogates into U+FFFD,
//     making different inputs (user IDs "\xff" and "\xfe") the same;
//   - is a batch (an array; MCP dropped JSON-RPC batches in 2025-06-18), or
//     valid JSON that is not a JSON-RPC 2.0 message (no "jsonrpc":"2.0", a
//     bad id or method): -32600 invalid request.
//
// The error carries the request's id when the line is a request whose id
// can be read, and null otherwise. Blank lines are skipped.
type Transport struct {
	Reader io.Reader
	Writer io.Writer
	// Logger receives a warning for each refused line (nil: none).
	Logger *slog.Logger
	// MaxLineBytes bounds a line; 0 means MaxLineBytes.
	MaxLineBytes int
}

// Connect implements [mcp.Transport]. A Transport connects once.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxLineBytes
	if limit <= 0 {
		limit = MaxLineBytes
	}
	calls := newCalls(ctx)
	w := &lockedWriter{w: t.Writer, calls: calls}
	f := &lineFilter{src: bufio.NewReaderSize(t.Reader, 64<<10), closer: t.Reader, out: w, log: t.Logger, limit: limit, calls: calls}
	// The SDK sees only lines that passed, each whole and newline
	// terminated, so its own frame limit is not needed.
	inner := &mcp.IOTransport{Reader: f, Writer: w, MaxLineLength: -1}
	return inner.Connect(ctx)
}

// lockedWriter serialises the SDK's writes and the filter's error
// responses; each is one Write of one whole line. A response marks its
// call answered.
type lockedWriter struct {
	mu    sync.Mutex
	w     io.Writer
	calls *calls
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if msg, derr := jsonrpc.DecodeMessage(bytes.TrimSpace(p)); derr == nil {
		if r, ok := msg.(*jsonrpc.Response); ok {
			l.calls.done(r.ID)
		}
	}
	return n, err
}

// drainTimeout bounds how long the input's end waits for the calls read
// before it to be answered.
const drainTimeout = 2 * time.Minute

// calls are the requests the SDK has read and not yet answered. The SDK
// ends the session at the input's end and drops the calls still running
// (unanswered, a write possibly not made), so a host that closes stdin
// right after a call, or `memor mcp < calls.jsonl`, would lose its last
// calls: the filter holds the end back until they are answered, the
// session's context ends, a call is cancelled by the client (MCP sends no
// answer to a cancelled request), or drainTimeout passes.
type calls struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending map[any]int // by jsonrpc.ID.Raw(): a string or a float64
	ended   bool
}

func newCalls(ctx context.Context) *calls {
	c := &calls{pending: map[any]int{}}
	c.cond = sync.NewCond(&c.mu)
	context.AfterFunc(ctx, c.end)
	return c
}

func (c *calls) read(id jsonrpc.ID) {
	c.mu.Lock()
	c.pending[id.Raw()]++
	c.mu.Unlock()
}

func (c *calls) done(id jsonrpc.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := id.Raw()
	if c.pending[k] <= 1 {
		delete(c.pending, k)
	} else {
		c.pending[k]--
	}
	c.cond.Broadcast()
}

func (c *calls) end() {
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.cond.Broadcast()
}

// wait returns once every call read has been answered, or the wait ended.
func (c *calls) wait() {
	t := time.AfterFunc(drainTimeout, c.end)
	defer t.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.pending) > 0 && !c.ended {
		c.cond.Wait()
	}
}

// note records a good line the SDK will read: a call to be answered, or
// the client's cancellation of one.
func (c *calls) note(line []byte) {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	if req.ID.IsValid() {
		c.read(req.ID)
		return
	}
	if req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
				c.done(id)
			}
		}
	}
}

func (l *lockedWriter) Close() error { return nil }

// lineFilter is the reader the SDK decodes: the input's good lines.
type lineFilter struct {
	src    *bufio.Reader
	closer io.Reader // closed by Close if it is an io.Closer
	out    io.Writer
	log    *slog.Logger
	limit  int
	calls  *calls

	line    int    // number of the last line read
	buf     []byte // the line being read
	pending []byte // the rest of a good line for the SDK
	err     error  // the input's end or failure, once reached
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			f.calls.wait()
			return 0, f.err
		}
		line, tooLong, err := f.next()
		if err != nil {
			f.err = err
		}
		if tooLong {
			if err := f.refuse(jsonrpc.CodeParseError, nil, fmt.Sprintf("line longer than %d bytes", f.limit)); err != nil {
				return 0, err
			}
			continue
		}
		line = bytes.Trim(line, " \t\r\n") // JSON's white space
		if len(line) == 0 {
			continue
		}
		if code, msg := check(line); code != 0 {
			if err := f.refuse(code, requestID(line, code), msg); err != nil {
				return 0, err
			}
			continue
		}
		f.calls.note(line)
		f.pending = append(line, '\n')
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// next reads one line without its newline. Past the limit it discards the
// rest of the line and reports tooLong. At the input's end it returns the
// unterminated last line, if any, with the error.
func (f *lineFilter) next() (line []byte, tooLong bool, err error) {
	f.line++
	f.buf = f.buf[:0]
	for {
		chunk, err := f.src.ReadSlice('\n')
		if !tooLong {
			if len(f.buf)+len(chunk) > f.limit+1 { // +1: the newline
				tooLong, f.buf = true, f.buf[:0]
			} else {
				f.buf = append(f.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return f.buf, tooLong, err
		}
		return f.buf, tooLong, nil
	}
}

func (f *lineFilter) Close() error {
	if c, ok := f.closer.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// refuse answers a refused line with a JSON-RPC error and logs it.
func (f *lineFilter) refuse(code int64, id json.RawMessage, msg string) error {
	if f.log != nil {
		f.log.Warn("mcp: refused a malformed JSON-RPC line", "line", f.line, "code", code, "reason", msg)
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		return err
	}
	_, err = f.out.Write(append(b, '\n'))
	return err
}

// check returns 0 for a line the SDK can take as one JSON-RPC message, or
// the JSON-RPC error code and the reason to refuse it.
func check(line []byte) (int64, string) {
	if !utf8.Valid(line) {
		return jsonrpc.CodeParseError, jsontext.Lossy(line).Error()
	}
	var v json.RawMessage
	if err := json.Unmarshal(line, &v); err != nil {
		return jsonrpc.CodeParseError, "not JSON: " + err.Error()
	}
	if err := jsontext.Lossy(line); err != nil {
		return jsonrpc.CodeParseError, err.Error()
	}
	if depth(line) > MaxDepth {
		return jsonrpc.CodeParseError, fmt.Sprintf("nested deeper than %d", MaxDepth)
	}
	if line[0] == '[' {
		return jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message a line"
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return jsonrpc.CodeInvalidRequest, "not a JSON-RPC 2.0 message: " + err.Error()
	}
	return 0, ""
}

// depth is the deepest nesting of arrays and objects in valid JSON.
func depth(b []byte) int {
	d, deepest, in := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if in {
			switch c {
			case '\\':
				i++
			case '"':
				in = false
			}
			continue
		}
		switch c {
		case '"':
			in = true
		case '{', '[':
			d++
			deepest = max(deepest, d)
		case '}', ']':
			d--
		}
	}
	return deepest
}

// requestID is the id to answer a refused line with: that of a request (a
// JSON object with a "method") whose id is a string or a number, else nil
// (null). A message without a method would be a response, whose id is in
// the client's own numbering: answering it could resolve an unrelated call.
func requestID(line []byte, code int64) json.RawMessage {
	if line[0] != '{' || (code == jsonrpc.CodeParseError && !json.Valid(bytes.ToValidUTF8(line, []byte("\uFFFD")))) {
		return nil
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if json.Unmarshal(bytes.ToValidUTF8(line, []byte("\uFFFD")), &m) != nil || m.Method == nil || len(m.ID) == 0 {
		return nil
	}
	switch m.ID[0] {
	case '"':
		return m.ID
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return m.ID
	}
	return nil
}
