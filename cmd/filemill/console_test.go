package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/jobs/redistest"
)

// TestConsoleInBrowser drives the web console in Debian's Chromium (playwright-core,
// web/e2e/console.mjs) against a real `filemill serve`, on PostgreSQL + Redis and on
// the embedded default: the owner signs in (through the first start's set-password link
// on the embedded default), a wrong password and a locked-out account, a project and a
// restricted key (its secret shown once), an invited viewer who finds every change
// refused in the browser and on the server, a cross-site POST with the cookie refused,
// usage after the jobs; a 30 MB upload in parallel parts with progress, image.convert
// run from the generated form and followed live to succeeded, the artifact preview,
// a webhook endpoint with a test event and a resend, the ai-ready viewer, and every
// screen photographed light and dark and checked by axe. The screenshots are the
// test's artifacts (go test -artifacts; the path is logged).
func TestConsoleInBrowser(t *testing.T) {
	node, chromium := consoleTools(t)
	for _, tc := range []struct {
		name     string
		embedded bool
	}{{"PostgresRedis", false}, {"EmbeddedDefault", true}} {
		t.Run(tc.name, func(t *testing.T) {
			recvURL, caFile := httpsReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"received":true}`))
			}))

			dir := t.TempDir()
			addr, storageAddr := freeAddr(t), freeAddr(t)
			env := cleanEnv("FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
				"FILEMILL_OUTBOUND_ALLOW_CIDRS=127.0.0.1", "SSL_CERT_FILE="+caFile)
			// The owner signs in: on the embedded default the first start made them and
			// printed the link to set their password; elsewhere an operator adds them.
			const ownerPassword = "the owner's password"
			var key, org, ownerEmail, setPasswordURL string
			if tc.embedded {
				start(t, dir, env, "serve")
				waitReady(t, "http://"+addr)
				raw, err := os.ReadFile(filepath.Join(dir, "bootstrap.json"))
				require.NoError(t, err)
				var boot map[string]string
				require.NoError(t, json.Unmarshal(raw, &boot))
				key, org, ownerEmail, setPasswordURL = boot["api_key"], "default", boot["owner_email"], boot["set_password_url"]
				require.NotEmpty(t, setPasswordURL)
			} else {
				secret := make([]byte, 32)
				_, _ = rand.Read(secret)
				env = append(env, "FILEMILL_DATABASE_URL="+dbtest.Postgres(t), "FILEMILL_REDIS_URL="+redistest.URL(t),
					"FILEMILL_STORAGE_SECRET="+hex.EncodeToString(secret))
				key = bootstrapKey(t, dir, env, "--org", "console", "--project", "web", "--credits", "500")
				org, ownerEmail = "console", "owner@example.com"
				adminUser(t, dir, env, org, ownerEmail, "owner", ownerPassword)
				start(t, dir, env, "serve")
				waitReady(t, "http://"+addr)
			}
			adminUser(t, dir, env, org, "locked@example.com", "developer", "a developer's password")

			fixtures := t.TempDir()
			writeFixtures(t, fixtures)
			out := t.ArtifactDir()
			cmd := exec.Command(node, "e2e/console.mjs")
			cmd.Dir = filepath.Join("..", "..", "web")
			cmd.Env = append(cleanEnv(), "CONSOLE_URL=http://"+addr, "API_KEY="+key, "OUT_DIR="+out,
				"OWNER_EMAIL="+ownerEmail, "OWNER_PASSWORD="+ownerPassword, "SET_PASSWORD_URL="+setPasswordURL,
				"LOCKED_EMAIL=locked@example.com",
				"HOOK_URL="+recvURL+"/hook", "FIXTURES="+fixtures, "CHROMIUM="+chromium)
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			err := cmd.Run()
			t.Logf("console.mjs:\n%s", buf.String())
			t.Logf("screenshots: %s", filepath.Join(out, "screens"))
			require.NoError(t, err, "the browser tests failed")
		})
	}
}

// adminUser adds a person with a password through `filemill admin users create`.
func adminUser(t *testing.T, dir string, env []string, org, email, role, password string) {
	t.Helper()
	cmd := exec.Command(binary, "admin", "users", "create", "--org", org, "--email", email, "--role", role, "--password-stdin")
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(password+"\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

// httpsReceiver starts an HTTPS server for webhook deliveries and writes its
// certificate to a CA file, for the server under test's SSL_CERT_FILE.
func httpsReceiver(t *testing.T, h http.Handler) (url, caFile string) {
	t.Helper()
	recv := httptest.NewUnstartedServer(h)
	recv.Config.ErrorLog = log.New(io.Discard, "", 0)
	recv.StartTLS()
	t.Cleanup(recv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: recv.Certificate().Raw}), 0o600))
	return recv.URL, caFile
}

// consoleTools finds node, the console's npm packages and Chromium. Missing ones fail
// the test in CI (where .ci/ensure-deps installs them) and skip it elsewhere.
func consoleTools(t *testing.T) (node, chromium string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: .ci/ensure-deps installs it", what)
		}
		t.Skipf("%s is missing (make deps installs it)", what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("chromium (" + chromium + ")")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "web", "node_modules", "playwright-core")); err != nil {
		missing("web/node_modules (bash .ci/npm-ci web)")
	}
	return node, chromium
}

// writeFixtures writes photo.png (320×200) and doc.pdf (two pages of text with
// headings) into dir.
func writeFixtures(t *testing.T, dir string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 320, 200))
	for y := range 200 {
		for x := range 320 {
			img.Set(x, y, color.RGBA{uint8(x * 255 / 320), uint8(y * 255 / 200), uint8(x ^ y), 255})
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "photo.png"), b.Bytes(), 0o600))

	type line struct {
		heading bool
		text    string
	}
	var p1, p2 []line
	p1 = append(p1, line{true, "Quarterly report"})
	for i := range 12 {
		p1 = append(p1, line{false, fmt.Sprintf("Revenue grew in every region this quarter; line %d of the summary.", i)})
	}
	p1 = append(p1, line{true, "Costs"})
	for i := range 10 {
		p1 = append(p1, line{false, fmt.Sprintf("Costs stayed flat while volumes rose; detail line %d.", i)})
	}
	p2 = append(p2, line{true, "Outlook"})
	for i := range 16 {
		p2 = append(p2, line{false, fmt.Sprintf("Next quarter we expect steady demand; forecast line %d.", i)})
	}
	pages := [][]line{p1, p2}
	// A PDF written by hand: catalog, pages, one content stream per page, two base fonts.
	var objs []string
	objs = append(objs, "<< /Type /Catalog /Pages 2 0 R >>")
	var kids []string
	for i := range pages {
		kids = append(kids, fmt.Sprintf("%d 0 R", 3+2*i))
	}
	objs = append(objs, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	font := 3 + 2*len(pages)
	for i, lines := range pages {
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R /F2 %d 0 R >> >> /Contents %d 0 R >>", font, font+1, 4+2*i))
		var ops []string
		y := 720
		for _, l := range lines {
			f, size, step := "F1", 11, 16
			if l.heading {
				f, size, step = "F2", 20, 34
			}
			ops = append(ops, fmt.Sprintf("BT /%s %d Tf 72 %d Td (%s) Tj ET", f, size, y, l.text))
			y -= step
		}
		s := strings.Join(ops, "\n")
		objs = append(objs, fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(s), s))
	}
	objs = append(objs, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>")
	var pdf bytes.Buffer
	pdf.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = pdf.Len()
		fmt.Fprintf(&pdf, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := pdf.Len()
	fmt.Fprintf(&pdf, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&pdf, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&pdf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "doc.pdf"), pdf.Bytes(), 0o600))
}
