// Package faultproxy is a TCP proxy for tests that injects network faults
// between a client and a real server on loopback: it drops a reply and
// resets the connection (the client saw its request go out but never got the
// answer, so it retries), cuts a reply off part way (a truncated reply, then
// a reset), resets every connection, adds latency (both ways, or to replies
// alone), or stops forwarding altogether (a black hole, as when the server
// is paused).
//
// It listens on 127.0.0.1 only and forwards to the target it is given.
package faultproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections from Addr to a target.
type Proxy struct {
	// Addr is the loopback address clients dial instead of the target.
	Addr string

	target string
	ln     net.Listener // nil while refusing (Refuse)

	mu       sync.Mutex
	conns    map[*pair]struct{}
	drops    []dropRule
	holes    [][]byte // BlackholeAt matches
	closed   bool
	latency  atomic.Int64 // ns added before each chunk is forwarded
	replyLag atomic.Int64 // ns added before each server -> client chunk
	hole     atomic.Bool  // forward nothing while set

	dropped atomic.Int64
	resets  atomic.Int64
	wg      sync.WaitGroup
}

// dropRule drops the reply to the next request containing match, and
// with refuse closes the listening port as it does.
type dropRule struct {
	match    []byte
	refuse   bool
	truncate bool // forward the reply's first half, then reset
}

type pair struct {
	client, server net.Conn
	dropReply      atomic.Bool // the server's next chunk is dropped, then both sides reset
	refuseOnDrop   atomic.Bool // and the proxy then refuses new connections
	truncate       atomic.Bool // the dropped chunk's first half is forwarded first
	stranded       atomic.Bool // forwards nothing more, never closes (Strand)
}

// Start listens on a free loopback port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: make(map[*pair]struct{})}
	p.wg.Add(1)
	go p.accept(ln)
	return p, nil
}

// SetTarget changes where new connections go (a restarted server on another
// port). Existing connections keep their server.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		s, err := net.DialTimeout("tcp", target, 2*time.Second)
		if err != nil {
			reset(c)
			continue
		}
		pr := &pair{client: c, server: s}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			reset(c)
			reset(s)
			return
		}
		p.conns[pr] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pump(pr, c, s, true)
		go p.pump(pr, s, c, false)
	}
}

// chunk is what one read from a connection returned, and when.
type chunk struct {
	b  []byte
	at time.Time
}

// pump copies one direction. toServer is true for client -> server. A
// goroutine of its own reads, so that each chunk is stamped when it
// arrived (SetReplyLatency counts from then).
func (p *Proxy) pump(pr *pair, from, to net.Conn, toServer bool) {
	defer p.wg.Done()
	chunks := make(chan chunk, 256)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(chunks)
		buf := make([]byte, 64<<10)
		for {
			n, err := from.Read(buf)
			if n > 0 {
				chunks <- chunk{b: append([]byte(nil), buf[:n]...), at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		p.drop(pr) // ends the read above
		for range chunks {
		}
	}()
	for c := range chunks {
		chunk := c.b
		if toServer {
			p.armHole(chunk)
		}
		for p.hole.Load() || pr.stranded.Load() {
			time.Sleep(5 * time.Millisecond)
			if p.isClosed() {
				return
			}
		}
		if d := time.Duration(p.latency.Load()); d > 0 {
			time.Sleep(d)
		}
		if d := time.Duration(p.replyLag.Load()); d > 0 && !toServer {
			time.Sleep(time.Until(c.at.Add(d)))
		}
		if toServer {
			p.armDrop(pr, chunk)
		} else if pr.dropReply.Load() {
			// The request reached the server and ran; its answer is
			// lost and the connection dies, as on a network fault
			// (or, with refuseOnDrop, as when the server crashes
			// right after running it).
			p.dropped.Add(1)
			if pr.truncate.Load() {
				// Part of the answer arrives: a client reading a reply
				// of several parts (a pipeline's, a script's array)
				// gets some of them whole and then the reset.
				_, _ = to.Write(chunk[:max(len(chunk)/2, 1)])
			}
			if pr.refuseOnDrop.Load() {
				p.Refuse()
			}
			return
		}
		if _, werr := to.Write(chunk); werr != nil {
			return
		}
	}
}

func (p *Proxy) armDrop(pr *pair, chunk []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.drops {
		if bytes.Contains(bytes.ToLower(chunk), r.match) {
			p.drops = append(p.drops[:i], p.drops[i+1:]...)
			pr.dropReply.Store(true)
			pr.refuseOnDrop.Store(r.refuse)
			pr.truncate.Store(r.truncate)
			return
		}
	}
}

// armHole turns the blackhole on when chunk holds the match of a
// BlackholeAt rule (the chunk itself is held too).
func (p *Proxy) armHole(chunk []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, m := range p.holes {
		if bytes.Contains(bytes.ToLower(chunk), m) {
			p.holes = append(p.holes[:i], p.holes[i+1:]...)
			p.hole.Store(true)
			return
		}
	}
}

// BlackholeAt arms the proxy to stop forwarding, in both directions and on
// every connection, when the next request whose bytes contain match
// (case-insensitive, e.g. "sadd") is sent: that request never reaches the
// server and nothing answers, as in a partition that starts at that
// moment. SetBlackhole(false) ends it.
func (p *Proxy) BlackholeAt(match string) {
	p.mu.Lock()
	p.holes = append(p.holes, bytes.ToLower([]byte(match)))
	p.mu.Unlock()
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// drop resets both sides of pr and forgets it.
func (p *Proxy) drop(pr *pair) {
	p.mu.Lock()
	_, ok := p.conns[pr]
	delete(p.conns, pr)
	p.mu.Unlock()
	if ok {
		reset(pr.client)
		reset(pr.server)
	}
}

// reset closes c with an RST rather than a FIN, as a crashed peer or a
// middlebox would.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// DropReplyTo arms the proxy to lose the reply to the next request whose
// bytes contain match (case-insensitive, e.g. "evalsha"): the request is
// forwarded and runs, its reply is discarded and the connection is reset.
func (p *Proxy) DropReplyTo(match string) {
	p.mu.Lock()
	p.drops = append(p.drops, dropRule{match: bytes.ToLower([]byte(match))})
	p.mu.Unlock()
}

// DropReplyAndRefuse is DropReplyTo, and when the reply is lost the proxy
// also closes its listening port, as when the server crashes right after
// running the request: the client's reconnects are refused ("connection
// refused") until Listen.
func (p *Proxy) DropReplyAndRefuse(match string) {
	p.mu.Lock()
	p.drops = append(p.drops, dropRule{match: bytes.ToLower([]byte(match)), refuse: true})
	p.mu.Unlock()
}

// TruncateReplyTo arms the proxy to cut off the reply to the next request
// whose bytes contain match (case-insensitive): the request is forwarded
// and runs, the first half of the first chunk of its reply is forwarded
// (for a pipeline or a script's array reply, some parts arrive whole), then
// the connection is reset. Dropped counts it.
func (p *Proxy) TruncateReplyTo(match string) {
	p.mu.Lock()
	p.drops = append(p.drops, dropRule{match: bytes.ToLower([]byte(match)), truncate: true})
	p.mu.Unlock()
}

// Refuse closes the listening port: new connections are refused until
// Listen; open ones stay.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
}

// Listen opens the port again after Refuse (same address).
func (p *Proxy) Listen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return fmt.Errorf("faultproxy: listen again on %s: %w", p.Addr, err)
	}
	p.ln = ln
	p.wg.Add(1)
	go p.accept(ln)
	return nil
}

// Dropped is how many replies were lost so far.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

// Resets is how many times ResetAll was called.
func (p *Proxy) Resets() int64 { return p.resets.Load() }

// ResetAll resets every open connection (clients see "connection reset").
func (p *Proxy) ResetAll() {
	p.resets.Add(1)
	p.mu.Lock()
	prs := make([]*pair, 0, len(p.conns))
	for pr := range p.conns {
		prs = append(prs, pr)
	}
	p.mu.Unlock()
	for _, pr := range prs {
		p.drop(pr)
	}
}

// Strand makes every connection open now half-open for good: it stays
// open on both sides and carries nothing more, in either direction, as when
// a firewall or NAT on the path forgets the connection (or the server's
// host vanishes from the network) without a reset reaching anyone. New
// connections work. A client learns of it only from a timeout of its own.
func (p *Proxy) Strand() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pr := range p.conns {
		pr.stranded.Store(true)
	}
}

// SetLatency delays every forwarded chunk by d (0 = none).
func (p *Proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// SetReplyLatency delays every chunk going from the server to the client
// by d from when it arrived (0 = none), on top of SetLatency: requests
// reach the server at once and run, their answers come d late, however
// many chunks they span (a slow return path; SetLatency instead delays
// each chunk by d in turn).
func (p *Proxy) SetReplyLatency(d time.Duration) { p.replyLag.Store(int64(d)) }

// SetBlackhole stops (true) or resumes (false) forwarding in both
// directions; connections stay open, as with a paused server.
func (p *Proxy) SetBlackhole(on bool) { p.hole.Store(on) }

// Blackholed reports whether the proxy forwards nothing now (SetBlackhole,
// or a BlackholeAt rule met): a test waits for it to know that the request
// it armed the rule for is held.
func (p *Proxy) Blackholed() bool { return p.hole.Load() }

// Close stops listening, resets every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	ln := p.ln
	p.ln = nil
	p.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	p.ResetAll()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}
