// Package testaddr hands tests loopback addresses for the processes they start.
package testaddr

import (
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
)

// Ports hands out addresses in turn from [Lo, Hi), below the kernel's ephemeral ports
// (32768 and up), starting at an offset of the process's own: an address the kernel
// handed out and closed again could be handed to another program before the process
// meant to listen on it did. Stride spaces the starts of test binaries running at once.
type Ports struct {
	Lo, Hi, Stride int

	mu   sync.Mutex
	next int
}

// Free returns a 127.0.0.1 address with nothing listening on it now.
func (p *Ports) Free(t testing.TB) string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == 0 {
		p.next = p.Lo + (os.Getpid()%((p.Hi-p.Lo)/p.Stride))*p.Stride
	}
	for range p.Hi - p.Lo {
		port := p.next
		if p.next++; p.next >= p.Hi {
			p.next = p.Lo
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatalf("no free port between %d and %d", p.Lo, p.Hi)
	return ""
}
