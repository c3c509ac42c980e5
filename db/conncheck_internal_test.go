//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package db

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
)

// connCheck tells a live idle connection from one its server ended, without waiting,
// whatever deadline the driver's last read left on it.
func TestConnCheck(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer client.Close()
	server, err := ln.Accept()
	require.NoError(t, err)

	require.NoError(t, connCheck(client), "idle and alive")
	require.NoError(t, client.SetReadDeadline(time.Now().Add(-time.Second)))
	require.NoError(t, connCheck(client), "alive, with the deadline of a past read")

	// The server ends the session: its last message, then the end of the stream.
	_, err = server.Write([]byte("E"))
	require.NoError(t, err)
	require.NoError(t, server.Close())
	eventually.True(t, "the condition to hold", func() bool { return connCheck(client) != nil })
	require.ErrorIs(t, connCheck(client), io.EOF, "after the message, the end")
}
