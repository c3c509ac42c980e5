package domain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func requireInvalid(t *testing.T, err error, param string) {
	t.Helper()
	require.Error(t, err)
	de := AsError(err)
	require.NotNil(t, de, "%v", err)
	require.Equal(t, CodeInvalidRequest, de.Code, de.Message)
	require.Equal(t, param, de.Param, de.Message)
}

func TestCheckFilename(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a.pdf", "../../x", `C:\temp\évil.exe`, strings.Repeat("é", 1024), ".bashrc", "日本語.txt", "a\u00a0b"} {
		require.NoError(t, CheckFilename(ok), "%q", ok)
	}
	for _, bad := range map[string]string{
		"NUL": "a\x00b", "Newline": "a\nb", "Tab": "a\tb", "DEL": "a\x7fb", "C1": "a\u0085b",
		"InvalidUTF8": "a\xffb", "Dot": ".", "DotDot": "..", "Blank": "   ", "Empty": "",
		"TooManyCharacters": strings.Repeat("é", 1025),
	} {
		requireInvalid(t, CheckFilename(bad), "filename")
	}
}

func TestCheckMediaType(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"application/pdf", "text/plain; charset=utf-8", `text/plain; name="a b"`} {
		require.NoError(t, CheckMediaType("mime_type", ok), ok)
	}
	for _, bad := range []string{"pdf", "text/plain; name=\"a\x00b\"", "text/plain\x00", "text/plain; name*=utf-8''a%00b",
		"text/plain; name*=utf-8''a%0Ab", "image/\xff", "a/b; c"} {
		requireInvalid(t, CheckMediaType("mime_type", bad), "mime_type")
	}
}

func TestCheckJSONText(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{`{}`, `{"a":"x\\u0000"}`, `{"a":"\u00e9"}`, `{"a":"\\\\u0000"}`, `["\n"]`} {
		require.NoError(t, CheckJSONText("options", json.RawMessage(ok)), ok)
	}
	for _, bad := range []string{`{"a":"x\u0000"}`, `{"\u0000":1}`, "{\"a\":\"\xff\"}", `["a\\\u0000"]`} {
		requireInvalid(t, CheckJSONText("options", json.RawMessage(bad)), "options")
	}
}

func TestSafeName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"report.pdf": "report.pdf", "../../x": "x", `C:\temp\evil.exe`: "evil.exe", "a\x00b\nc.txt": "abc.txt",
		"dir/": "dir", "..": "file", "/": "file", "  ": "file", "\xff.bin": "_.bin", "日本語 ファイル.txt": "日本語 ファイル.txt",
	} {
		require.Equal(t, want, SafeName(in), "%q", in)
	}
}

func TestKnownFormat(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"pdf", ".PDF", "png", "jpg", "jpeg", "tif", "tiff", "docx", "txt", "bin", "application/pdf",
		"IMAGE/PNG", "image/*", "text/*", "application/x-pdf", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"} {
		require.True(t, KnownFormat(ok), ok)
	}
	for _, bad := range []string{"", "pdff", "exe2", "image/nope", "nope/*", "*", "image/", "/"} {
		require.False(t, KnownFormat(bad), bad)
	}
	requireInvalid(t, checkFormats([]string{"pdf", "nonsense"}), "validation.formats[1]")
	requireInvalid(t, checkFormats([]string{"pd\x00f"}), "validation.formats[0]")
	require.NoError(t, checkFormats([]string{"pdf", "image/*", "image/jpeg"}))
}

func TestValidateNewUpload(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	base := func() NewUpload { return NewUpload{Filename: "a.pdf", ByteSize: 10} }
	require.NoError(t, validateNewUpload(&NewUpload{Filename: "../../x", ByteSize: 1}, cfg))
	for param, mut := range map[string]func(*NewUpload){
		"filename":              func(u *NewUpload) { u.Filename = "a\x00b" },
		"mime_type":             func(u *NewUpload) { u.MIMEType = "text/plain; name=\"a\x00b\"" },
		"validation.formats[0]": func(u *NewUpload) { u.Validation = &Validation{Formats: []string{"nope"}} },
		"from_url":              func(u *NewUpload) { u.Filename, u.ByteSize, u.FromURL = "", 0, "https://example.com/\xff" },
	} {
		u := base()
		mut(&u)
		requireInvalid(t, validateNewUpload(&u, cfg), param)
	}
}

// TestDetectableTypesAreTheDetectors keeps the table of known formats in step with the
// detector library: every type listed is one it knows.
func TestDetectableTypesAreTheDetectors(t *testing.T) {
	t.Parallel()
	for _, mt := range detectableTypes {
		require.True(t, KnownFormat(mt), mt)
	}
	require.Greater(t, len(knownExtensions), 150)
}
