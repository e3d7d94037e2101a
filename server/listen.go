package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/memor-db/memor"
)

// DefaultAddr is where ListenAndServe listens when Addr is empty: loopback
// only.
const DefaultAddr = "127.0.0.1:7420"

// Timeouts of ListenAndServe when ServeOptions leaves them zero.
const (
	DefaultReadTimeout     = 30 * time.Second
	DefaultWriteTimeout    = 60 * time.Second
	DefaultIdleTimeout     = 2 * time.Minute
	DefaultShutdownTimeout = 30 * time.Second
)

// ServeOptions configures ListenAndServe.
type ServeOptions struct {
	Options
	// Addr is host:port (default DefaultAddr). A host that is not a
	// loopback address (including "" and 0.0.0.0, meaning every
	// interface) requires Options.Token.
	Addr string
	// ReadTimeout, WriteTimeout and IdleTimeout bound a connection
	// (defaults above).
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownTimeout bounds the graceful shutdown: finishing requests in
	// flight, then applying queued episodes.
	ShutdownTimeout time.Duration
	// OnListen, if set, is called with the bound address once the server
	// accepts connections (useful with port 0).
	OnListen func(net.Addr)
	// ExposeMetrics serves Options.Metrics on a listener beyond loopback
	// too. Without it /metrics is served on loopback only: what a store
	// holds shows in its counts, so exposing them is a choice.
	ExposeMetrics bool
	// Leave, if set, runs at shutdown once the server has stopped
	// accepting, finished the requests in flight and applied every queued
	// episode: a cluster node hands its shards over there (Node.Drain).
	Leave func(context.Context) error
}

// Loopback reports whether addr's host only accepts local connections:
// "localhost" or a loopback IP. An empty host means every interface.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckOptions reports what ListenAndServe and Serve refuse in o before
// they listen: a token shorter than MinTokenBytes (ErrWeakToken) and an
// allowed origin that is not scheme://host[:port] (ErrInvalidOrigin).
func CheckOptions(o Options) error {
	if o.Token != "" && len(o.Token) < MinTokenBytes {
		return fmt.Errorf("%w: MEMOR_TOKEN is %d bytes; use at least %d random bytes, e.g. MEMOR_TOKEN=$(openssl rand -hex 16)", ErrWeakToken, len(o.Token), MinTokenBytes)
	}
	for _, s := range o.AllowOrigins {
		if _, err := NormalizeOrigin(s); err != nil {
			return err
		}
	}
	return nil
}

// ListenAndServe serves the API over e until ctx is done, then shuts down
// gracefully: it stops accepting, lets requests in flight finish, and
// waits for every queued episode to be applied (all within
// ShutdownTimeout). It does not close e.
func ListenAndServe(ctx context.Context, e *memor.Engine, o ServeOptions) error {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if err := CheckOptions(o.Options); err != nil {
		return err
	}
	if !Loopback(o.Addr) && o.Token == "" {
		return fmt.Errorf("%w: %s", ErrUnsafeBind, o.Addr)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("server: listen: %w", err)
	}
	return Serve(ctx, e, ln, o)
}

// Serve is ListenAndServe on a listener the caller opened (and that Serve
// closes). It applies the same safety check to the listener's address.
func Serve(ctx context.Context, e *memor.Engine, ln net.Listener, o ServeOptions) error {
	if err := CheckOptions(o.Options); err != nil {
		ln.Close()
		return err
	}
	if !Loopback(ln.Addr().String()) {
		if o.Token == "" {
			ln.Close()
			return fmt.Errorf("%w: %s", ErrUnsafeBind, ln.Addr())
		}
		// Clients name such a server as they please; the token guards it.
		o.AnyHost = true
		if !o.ExposeMetrics {
			o.Metrics = nil
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadTimeout, DefaultReadTimeout)
	def(&o.WriteTimeout, DefaultWriteTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	def(&o.ShutdownTimeout, DefaultShutdownTimeout)
	h := New(e, o.Options)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(o.ReadTimeout, 10*time.Second),
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if o.OnListen != nil {
		o.OnListen(ln.Addr())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if derr := Drain(sctx, e); derr != nil {
		err = errors.Join(err, derr)
	}
	if o.Leave != nil {
		if lerr := o.Leave(sctx); lerr != nil {
			err = errors.Join(err, lerr)
		}
	}
	if err != nil {
		return fmt.Errorf("server: shutdown: %w", err)
	}
	return nil
}

// Drain waits until every episode committed so far, of every user, is
// applied, or ctx is done.
func Drain(ctx context.Context, e *memor.Engine) error {
	users, err := e.Users(ctx)
	if err != nil {
		return err
	}
	for _, u := range users {
		if err := e.Flush(ctx, u); err != nil && !errors.Is(err, memor.ErrNotFound) {
			return fmt.Errorf("server: drain %q: %w", u, err)
		}
	}
	return nil
}
