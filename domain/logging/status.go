package logging

import (
	"bufio"
	"net"
	"net/http"
)

// StatusRecorder remembers the status and body size a handler wrote, for the access
// log both doors keep; a websocket upgrade can still take the connection (101).
type StatusRecorder struct {
	http.ResponseWriter
	Status int
	Bytes  int
}

func (rec *StatusRecorder) WriteHeader(code int) {
	if rec.Status == 0 {
		rec.Status = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *StatusRecorder) Write(b []byte) (int, error) {
	if rec.Status == 0 {
		rec.Status = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.Bytes += n
	return n, err
}

func (rec *StatusRecorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// Hijack hands the connection to a websocket upgrade, which answers 101.
func (rec *StatusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(rec.ResponseWriter).Hijack()
	if err == nil && rec.Status == 0 {
		rec.Status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}
