package domain

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"mime"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/filemill/filemill/domain/netguard"
	"github.com/filemill/filemill/internal/hostile"
)

// FuzzDetect: detection names every input, with a media type that parses and an
// extension, the same way every time, and what it names satisfies the policy entries
// and declarations that spell that format.
func FuzzDetect(f *testing.F) {
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "mimetype", Method: zip.Store})
	w.Write([]byte("application/vnd.oasis.opendocument.text"))
	zw.Create("content.xml")
	zw.Close()
	f.Add(z.Bytes(), "odt")
	z.Reset()
	zw = zip.NewWriter(&z)
	zw.Create("[Content_Types].xml")
	zw.Create("word/document.xml")
	zw.Close()
	f.Add(z.Bytes(), "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
	f.Add([]byte("%PDF-1.7\n"), "pdf")
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "image/*")
	f.Add([]byte("héllo wörld \xe2\x82"), "text/plain")
	f.Add([]byte("PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\x7f\x00\x00\x00\x00\x08\x00\x00\x00mimetype"), ".zip")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, head []byte, entry string) {
		var got Format
		alloc := hostile.Allocated(func() { got = Detect(head) })
		if limit := uint64(hostile.Slack + 16*len(head)); alloc > limit {
			t.Fatalf("detecting %d bytes allocated %d bytes", len(head), alloc)
		}
		if got.Extension == "" || got.MIMEType == "" {
			t.Fatalf("unnamed format %+v", got)
		}
		mt, params, err := mime.ParseMediaType(got.MIMEType)
		if err != nil || mt != got.MIMEType || len(params) > 0 {
			t.Fatalf("media type %q does not parse as itself: %q %v %v", got.MIMEType, mt, params, err)
		}
		if strings.ContainsAny(got.Extension, "./ ") {
			t.Fatalf("extension %q", got.Extension)
		}
		if again := Detect(bytes.Clone(head)); again != got {
			t.Fatalf("detected %+v, then %+v", got, again)
		}
		for _, e := range []string{got.Extension, "." + strings.ToUpper(got.Extension), got.MIMEType, got.MIMEType[:strings.Index(got.MIMEType, "/")+1] + "*"} {
			if !FormatMatches(got, e) {
				t.Fatalf("%+v does not match the entry %q", got, e)
			}
		}
		if !declaredMatches(got.MIMEType, got) || !declaredMatches("application/octet-stream", got) {
			t.Fatalf("%+v disagrees with its own declaration", got)
		}
		switch got.Extension {
		case "docx", "xlsx", "pptx", "odt", "ods", "odp", "odg":
			if !bytes.HasPrefix(head, []byte("PK\x03\x04")) {
				t.Fatalf("%s from bytes that are no zip", got.Extension)
			}
		case "txt":
			// Only UTF-16 and UTF-32 text, known by its byte order mark, holds NULs.
			bom := false
			for _, m := range []string{"\xff\xfe", "\xfe\xff", "\x00\x00\xfe\xff"} {
				bom = bom || bytes.HasPrefix(head, []byte(m))
			}
			if bytes.IndexByte(head, 0) >= 0 && !bom {
				t.Fatal("text with a NUL byte")
			}
		}
		// Any policy entry and any declaration is judged without failing.
		FormatMatches(got, entry)
		declaredMatches(entry, got)
	})
}

// fuzzResolver answers every name with one address (none: the name does not resolve)
// and remembers what it was asked.
type fuzzResolver struct {
	addr  netip.Addr
	asked []string
}

func (r *fuzzResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.asked = append(r.asked, host)
	if !r.addr.IsValid() {
		return nil, errors.New("no such host")
	}
	return []netip.Addr{r.addr}, nil
}

// internal says whether a is an address no webhook may reach, by the standard
// library's own classification (not netguard's): loopback, private, link-local,
// unspecified, multicast, broadcast, this-network, shared, reserved, and the IPv6
// forms that carry such an IPv4 address or are not global unicast.
func internal(a netip.Addr) bool {
	a = a.Unmap()
	if a.Zone() != "" || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	b := a.As16()
	if a.Is4() {
		v4 := a.As4()
		return v4[0] == 0 || v4[0] >= 240 || (v4[0] == 100 && v4[1]&0xc0 == 64)
	}
	switch {
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && [8]byte(b[4:12]) == [8]byte{}: // NAT64
		return internal(netip.AddrFrom4([4]byte(b[12:16])))
	case b[0] == 0x20 && b[1] == 0x02: // 6to4
		return internal(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return b[0]&0xe0 != 0x20 // outside 2000::/3
}

// FuzzWebhookURL: an endpoint URL is refused with invalid_request naming url, or it
// is an https URL without credentials whose host, written as an address or resolved,
// reaches no internal network; a name is resolved and its answer vetted, never
// trusted.
func FuzzWebhookURL(f *testing.F) {
	for _, s := range []struct {
		raw  string
		addr string
	}{
		{"https://hooks.example.com/in", "93.184.215.14"},
		{"https://hooks.example.com/in", "127.0.0.1"},
		{"https://hooks.example.com:8443/in?x=1", "::ffff:10.0.0.1"},
		{"https://127.1/", ""},
		{"https://0x7f.0.0.1./", ""},
		{"https://2130706433/h", ""},
		{"https://[::ffff:169.254.169.254]/latest", ""},
		{"https://[64:ff9b::a00:1]/", ""},
		{"https://[2002:c0a8:101::1]/", ""},
		{"https://[fe80::1%25eth0]/", ""},
		{"https://user:pw@hooks.example.com/", "93.184.215.14"},
		{"http://hooks.example.com/", "93.184.215.14"},
		{"https://hooks.example.com:0/", "93.184.215.14"},
		{"https://xn--bcher-kva.example/", "2606:4700::1111"},
		{"https://[::1]:443/", ""},
		{"HTTPS://93.184.215.14/", ""},
		{"https://017700000001/", ""},
		{"https://hooks.example.com\t/", "93.184.215.14"},
	} {
		var b []byte
		if s.addr != "" {
			b = netip.MustParseAddr(s.addr).AsSlice()
		}
		f.Add(s.raw, b)
	}
	f.Fuzz(func(t *testing.T, raw string, answer []byte) {
		res := &fuzzResolver{}
		res.addr, _ = netip.AddrFromSlice(answer)
		w := &Webhooks{Guard: &netguard.Guard{Resolver: res}}
		var err error
		alloc := hostile.Allocated(func() { err = w.vetURL(context.Background(), raw) })
		if limit := uint64(hostile.Slack + 64*len(raw)); alloc > limit {
			t.Fatalf("vetting %d bytes allocated %d bytes", len(raw), alloc)
		}
		if err != nil {
			de := AsError(err)
			if de == nil || de.Code != CodeInvalidRequest || de.Param != "url" || de.Message == "" {
				t.Fatalf("refusal %#v is not invalid_request naming url", err)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || u.Scheme != "https" || u.User != nil || u.Hostname() == "" || len(raw) > 2048 {
			t.Fatalf("accepted %q: %v", raw, perr)
		}
		host := u.Hostname()
		if strings.Contains(host, "%") {
			t.Fatalf("accepted a zone in %q", raw)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				t.Fatalf("accepted port %q", p)
			}
		}
		if a, err := netip.ParseAddr(host); err == nil {
			if internal(a) {
				t.Fatalf("accepted %q, which reaches %s", raw, a)
			}
			return
		}
		if a, isIP, _ := netguard.ParseHostIP(host); isIP {
			if internal(a) {
				t.Fatalf("accepted %q, which the resolver reads as %s", raw, a)
			}
			return
		}
		if len(res.asked) != 1 || res.asked[0] != host {
			t.Fatalf("accepted %q without resolving %q (asked %q)", raw, host, res.asked)
		}
		if internal(res.addr) {
			t.Fatalf("accepted %q, which resolves to %s", raw, res.addr)
		}
	})
}
