package natstest

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from a loopback port to target, and can
// cut them: the way a test loses a connection at a chosen moment (an
// acknowledgement that never arrives) or severs a link (a partition).
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   []net.Conn
	cutOn   []byte // when armed: the client bytes after which to cut
	severed bool
	cuts    int
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port); it is closed at the end of the test.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.Sever() })
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// CutAfter arms the proxy: the next time a client sends bytes containing
// pattern, they are forwarded to the target and then every connection is
// closed before the target's answer can come back.
func (p *Proxy) CutAfter(pattern []byte) {
	p.mu.Lock()
	p.cutOn = bytes.Clone(pattern)
	p.mu.Unlock()
}

// Cuts is how many times an armed cut fired.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Sever closes every connection and refuses new ones until Heal.
func (p *Proxy) Sever() {
	p.mu.Lock()
	p.severed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Heal accepts connections again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.severed = false
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.severed {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.severed { // severed while dialling: no connection survives Sever
			p.mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c, true)
		go p.pipe(c, up, false)
	}
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// pipe copies from src to dst; fromClient chunks are checked against an
// armed cut.
func (p *Proxy) pipe(dst, src net.Conn, fromClient bool) {
	defer dst.Close()
	defer src.Close()
	if !fromClient {
		io.Copy(dst, src)
		return
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			p.mu.Lock()
			fire := p.cutOn != nil && bytes.Contains(buf[:n], p.cutOn)
			if fire {
				p.cutOn = nil
				p.cuts++
			}
			p.mu.Unlock()
			if fire {
				p.closeAll()
				return
			}
		}
		if err != nil {
			return
		}
	}
}
