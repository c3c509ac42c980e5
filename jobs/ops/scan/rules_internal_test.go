package scan

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExecutableKind(t *testing.T) {
	pe := make([]byte, 256)
	copy(pe, "MZ")
	pe[0x3c] = 0x80
	copy(pe[0x80:], "PE\x00\x00")
	dosOnly := make([]byte, 256)
	copy(dosOnly, "MZ this is just text starting with MZ")
	elf := append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 60)...)
	macho := append([]byte("\xcf\xfa\xed\xfe\x07\x00\x00\x01"), make([]byte, 24)...)
	fat := []byte("\xca\xfe\xba\xbe\x00\x00\x00\x02\x00\x00\x00\x07")
	javaClass := []byte("\xca\xfe\xba\xbe\x00\x00\x00\x34\x00\x1d")
	lnk := append([]byte("\x4c\x00\x00\x00\x01\x14\x02\x00\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x46"), make([]byte, 60)...)
	cases := map[string]struct {
		data []byte
		want string
	}{
		"PE":        {pe, "Windows (PE)"},
		"DOSText":   {dosOnly, ""},
		"ELF":       {elf, "ELF"},
		"MachO":     {macho, "Mach-O"},
		"Universal": {fat, "Mach-O (universal)"},
		"JavaClass": {javaClass, ""},
		"LNK":       {lnk, "Windows shortcut (LNK)"},
		"Text":      {[]byte("hello world, nothing to run here"), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { require.Equal(t, tc.want, executableKind(tc.data)) })
	}
}

func TestIsEICAR(t *testing.T) {
	require.True(t, isEICAR([]byte(eicar)))
	require.True(t, isEICAR([]byte(eicar+"\r\n  \t")))
	require.False(t, isEICAR([]byte(eicar+" and more text")), "only whitespace may follow")
	require.False(t, isEICAR([]byte("x"+eicar)), "it starts the file")
	require.False(t, isEICAR(append([]byte(eicar), make([]byte, 100)...)), "at most 128 bytes")
}

func TestParseClamdAddress(t *testing.T) {
	cases := []struct{ in, network, addr string }{
		{"unix:/run/clamav/clamd.ctl", "unix", "/run/clamav/clamd.ctl"},
		{"unix:///run/clamav/clamd.ctl", "unix", "/run/clamav/clamd.ctl"},
		{"/var/run/clamd.sock", "unix", "/var/run/clamd.sock"},
		{"tcp://clamav:3310", "tcp", "clamav:3310"},
		{"127.0.0.1:3310", "tcp", "127.0.0.1:3310"},
		{"tcp://[::1]:3310", "tcp", "[::1]:3310"},
	}
	for _, tc := range cases {
		n, a, err := parseClamdAddress(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.network, n, tc.in)
		require.Equal(t, tc.addr, a, tc.in)
	}
	for _, bad := range []string{"unix:clamd.sock", "tcp://clamav", "clamav"} {
		_, _, err := parseClamdAddress(bad)
		require.Error(t, err, bad)
	}
}

func TestParseScanReply(t *testing.T) {
	found, err := parseScanReply("stream: OK")
	require.NoError(t, err)
	require.Empty(t, found)
	found, err = parseScanReply("stream: Win.Test.EICAR_HDB-1 FOUND")
	require.NoError(t, err)
	require.Equal(t, []string{"Win.Test.EICAR_HDB-1"}, found)
	found, err = parseScanReply("fd[12]: Eicar-Test-Signature.UNOFFICIAL FOUND")
	require.NoError(t, err)
	require.Equal(t, []string{"Eicar-Test-Signature.UNOFFICIAL"}, found)
	_, err = parseScanReply("fd[12]: Heuristics.Limits.Exceeded.MaxFileSize FOUND")
	var limit *limitError
	require.True(t, errors.As(err, &limit))
	require.Equal(t, "MaxFileSize", limit.limit)
	_, err = parseScanReply("stream: Heuristics.Limits.Exceeded.MaxRecursion FOUND")
	require.True(t, errors.As(err, &limit))
	require.Equal(t, "MaxRecursion", limit.limit)
	_, err = parseScanReply("INSTREAM size limit exceeded. ERROR")
	require.True(t, errors.Is(err, errStreamTooLong))
	_, err = parseScanReply("stream: Can't allocate memory ERROR")
	require.Error(t, err)
}

func TestAgrees(t *testing.T) {
	require.True(t, agrees("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/zip"))
	require.True(t, agrees("text/csv", "text/plain"))
	require.True(t, agrees("application/json", "text/plain"))
	require.True(t, agrees("application/msword", "application/x-ole-storage"))
	require.True(t, agrees("image/jpeg", "image/jpg"))
	require.False(t, agrees("text/html", "text/plain"), "markup that runs code is not plain text")
	require.False(t, agrees("image/png", "image/jpeg"))
	require.False(t, agrees("application/pdf", "application/zip"))
}
