package domain

import (
	"archive/zip"
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIDs(t *testing.T) {
	t.Parallel()
	a, b := NewID(PrefixFile), NewID(PrefixFile)
	require.True(t, ValidID(PrefixFile, a))
	require.Less(t, a, b, "ids made later sort later")
	for _, bad := range []string{"", "file_", "file_01ARZ3NDEKTSV4RRFFQ69G5FA", "file_01ARZ3NDEKTSV4RRFFQ69G5FAVX", "file_01ARZ3NDEKTSV4RRFFQ69G5FAI",
		"job_01ARZ3NDEKTSV4RRFFQ69G5FAV", "file_81ARZ3NDEKTSV4RRFFQ69G5FAV", "file_01arz3ndektsv4rrffq69g5fav"} {
		require.False(t, ValidID(PrefixFile, bad), bad)
	}
}

func TestKeySecrets(t *testing.T) {
	t.Parallel()
	live, test := newKeySecret(EnvLive), newKeySecret(EnvTest)
	require.True(t, strings.HasPrefix(live, "fm_live_"))
	require.True(t, strings.HasPrefix(test, "fm_test_"))
	require.True(t, wellFormedKey(live))
	require.False(t, wellFormedKey(live[:len(live)-1]))
	require.False(t, wellFormedKey("sk_live_"+live[8:]))
	require.NotEqual(t, HashKey(live), HashKey(test))
}

func TestIPAllowList(t *testing.T) {
	t.Parallel()
	list, err := normalizeCIDRs([]string{"10.0.0.0/8", "192.168.1.7", "2001:db8::/32"})
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.0/8", "192.168.1.7/32", "2001:db8::/32"}, list)
	require.True(t, ipAllowed(list, netip.MustParseAddr("10.1.2.3")))
	require.True(t, ipAllowed(list, netip.MustParseAddr("::ffff:10.1.2.3")), "IPv4-mapped addresses are unmapped")
	require.False(t, ipAllowed(list, netip.MustParseAddr("11.0.0.1")))
	require.True(t, ipAllowed(nil, netip.MustParseAddr("11.0.0.1")), "no list allows all")
	_, err = normalizeCIDRs([]string{"10.0.0.0/33"})
	require.Error(t, err)
}

func TestPartLayout(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		size      int64
		part      int64
		partCount int
	}{
		{1, MinPartSize, 1},
		{20_000_000, MinPartSize, 2},
		{64 * MinPartSize, MinPartSize, 64},
		{64*MinPartSize + 1, 17 << 20, 61},
		{5 << 30, 80 << 20, 64},
	} {
		part, n := PartLayout(c.size)
		require.Equal(t, c.part, part, c.size)
		require.Equal(t, c.partCount, n, c.size)
		require.LessOrEqual(t, n, MaxPartCount)
		require.GreaterOrEqual(t, part*int64(n), c.size)
	}
}

func zipWith(t *testing.T, names ...string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Store})
		require.NoError(t, err)
		if n == "mimetype" {
			_, _ = w.Write([]byte("application/vnd.oasis.opendocument.text"))
		} else {
			_, _ = w.Write([]byte("<x/>"))
		}
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestDetect(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		head []byte
		ext  string
		mime string
	}{
		{"PDF", []byte("%PDF-1.7\n..."), "pdf", "application/pdf"},
		{"PNG", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "png", "image/png"},
		{"Text", []byte("hello, world\nsecond line"), "txt", "text/plain"},
		{"UTF8Text", []byte("grüße, мир"), "txt", "text/plain"},
		{"Binary", []byte{0, 1, 2, 3, 0xff, 0xfe, 0}, "bin", "application/octet-stream"},
		{"DOCX", zipWith(t, "[Content_Types].xml", "_rels/.rels", "word/document.xml"), "docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
		{"XLSX", zipWith(t, "[Content_Types].xml", "xl/workbook.xml"), "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
		{"PPTX", zipWith(t, "[Content_Types].xml", "ppt/presentation.xml"), "pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
		{"ODT", zipWith(t, "mimetype", "content.xml"), "odt", "application/vnd.oasis.opendocument.text"},
		{"PlainZip", zipWith(t, "a.txt"), "zip", "application/zip"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Detect(c.head)
			require.Equal(t, c.ext, f.Extension)
			require.Equal(t, c.mime, f.MIMEType)
		})
	}
}

func TestFormatPolicy(t *testing.T) {
	t.Parallel()
	pdf := Format{"pdf", "application/pdf"}
	jpg := Format{"jpg", "image/jpeg"}
	require.True(t, FormatMatches(pdf, "pdf"))
	require.True(t, FormatMatches(pdf, ".PDF"))
	require.True(t, FormatMatches(pdf, "application/pdf"))
	require.False(t, FormatMatches(pdf, "image/*"))
	require.True(t, FormatMatches(jpg, "image/*"))
	require.True(t, FormatMatches(jpg, "jpeg"))
	require.False(t, FormatMatches(jpg, "png"))
	require.True(t, declaredMatches("application/octet-stream", pdf))
	require.True(t, declaredMatches("text/csv", Format{"txt", "text/plain"}))
	require.False(t, declaredMatches("application/pdf", Format{"png", "image/png"}))

	u := &Upload{ByteSize: 10, Validation: &Validation{Formats: []string{"pdf"}, MaxBytes: 5, MinBytes: 20}}
	findings := judge(u, &File{DeclaredMIMEType: "application/pdf"}, &measurement{size: 12, format: Format{"png", "image/png"}}, 100)
	var codes []string
	for _, f := range findings {
		codes = append(codes, f.Code)
	}
	require.ElementsMatch(t, []string{"size_mismatch", "mime_type_mismatch", "format_not_allowed", "too_large", "too_small"}, codes)
	require.Empty(t, judge(&Upload{ByteSize: 12}, &File{}, &measurement{size: 12, format: pdf}, 100))
	require.Equal(t, "file_too_large", judge(&Upload{}, &File{}, &measurement{size: 101, format: pdf}, 100)[0].Code)
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	require.False(t, Retryable(Errorf(CodeCorruptedFile, "x")))
	require.False(t, Retryable(Errorf(CodeMalwareDetected, "x")))
	require.False(t, Retryable(Errorf(CodeTimeout, "x")), "a deadline on a deterministic run is met again")
	require.True(t, Retryable(Errorf(CodeDependencyUnavailable, "x")))
	require.True(t, Retryable(strings.NewReader("").UnreadByte()), "an unexpected error may pass on retry")
}

func TestBatchView(t *testing.T) {
	t.Parallel()
	b := &Batch{ID: "bat_x", CreditsEstimated: 3}
	members := []*Job{ // newest first, as the store lists them
		{ID: "j3", FileID: "f3", State: JobQueued},
		{ID: "j2", FileID: "f2", State: JobFailed, ErrorCode: CodeCorruptedFile, ErrorMessage: "bad"},
		{ID: "j1", FileID: "f1", State: JobSucceeded, CreditsCharged: 1},
	}
	v := b.View(members)
	require.Equal(t, "processing", v.State)
	require.Equal(t, "f1", v.Items[0].FileID)
	require.Equal(t, CodeCorruptedFile, v.Items[1].Error.Code)
	require.EqualValues(t, 1, v.CreditsCharged)
	require.Equal(t, map[string]int{"queued": 1, "running": 0, "succeeded": 1, "failed": 1, "cancelled": 0}, v.Counts)
	members[0].State = JobCancelled
	require.Equal(t, "completed", b.View(members).State)
}
