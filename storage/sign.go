package storage

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"mime"
	"net/url"
	"strconv"
	"strings"
)

// Operations a local URL can grant.
const (
	opPut  = "put"  // single PUT of exactly size bytes
	opPart = "part" // PUT of one multipart part of exactly size bytes
	opGet  = "get"  // GET or HEAD of the object
)

// signVersion is the first signed field, so a future scheme never verifies an old string.
// v2 added the upload of single PUTs, the served content type and the nonce.
const signVersion = "filemill-storage-v2"

// grant is what a local URL allows: one operation on one key until exp.
type grant struct {
	op     string
	key    string
	size   int64  // put, part
	upload string // put, part
	part   int    // part
	off    int64  // part: where its bytes go in the object
	name   string // get: download file name, "" for none
	ctype  string // get: Content-Type served, "" for application/octet-stream
	exp    int64  // Unix seconds
	nonce  string // makes every minted URL distinct, even within one second
}

// newNonce returns 64 random bits, base64url.
func newNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// signature is base64url(HMAC-SHA256) over every field, each length-prefixed so no
// field can bleed into its neighbour.
func (g grant) signature(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	fields := []string{signVersion, g.op, g.key, strconv.FormatInt(g.size, 10), g.upload,
		strconv.Itoa(g.part), g.name, g.ctype, strconv.FormatInt(g.exp, 10), g.nonce}
	if g.op == opPart {
		// Only parts carry an offset: the strings of put and get URLs, and so the URLs
		// already handed out, stay as they were.
		fields = append(fields, strconv.FormatInt(g.off, 10))
	}
	for _, f := range fields {
		writeField(m, f)
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func writeField(h hash.Hash, f string) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
	h.Write([]byte(f))
}

// path is the URL path of the grant's object below the host's base path.
func (g grant) path() string { return "/o/" + escapeKey(g.key) }

// query is the canonical query string, sig last. Verification rebuilds it and compares
// byte for byte, so the URL has exactly one spelling.
func (g grant) query(sig string) string {
	var b strings.Builder
	add := func(k, v string) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(v))
	}
	add("op", g.op)
	if g.op == opPut || g.op == opPart {
		add("upload", g.upload)
	}
	if g.op == opPart {
		add("part", strconv.Itoa(g.part))
		add("off", strconv.FormatInt(g.off, 10))
	}
	if g.op == opPut || g.op == opPart {
		add("size", strconv.FormatInt(g.size, 10))
	}
	if g.op == opGet && g.name != "" {
		add("name", g.name)
	}
	if g.op == opGet && g.ctype != "" {
		add("type", g.ctype)
	}
	add("exp", strconv.FormatInt(g.exp, 10))
	add("n", g.nonce)
	add("sig", sig)
	return b.String()
}

var errBadURL = errors.New("the URL is malformed or was altered")

// parseGrant reads a grant from a key and a raw query. It checks shape only; the
// caller verifies the signature, the canonical spelling and the expiry.
func parseGrant(key, rawQuery string) (grant, string, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return grant{}, "", errBadURL
	}
	for k, v := range q {
		switch k {
		case "op", "upload", "part", "off", "size", "name", "type", "exp", "n", "sig":
		default:
			return grant{}, "", errBadURL
		}
		if len(v) != 1 {
			return grant{}, "", errBadURL
		}
	}
	g := grant{op: q.Get("op"), key: key, upload: q.Get("upload"), name: q.Get("name"), ctype: q.Get("type"), nonce: q.Get("n")}
	if g.exp, err = strconv.ParseInt(q.Get("exp"), 10, 64); err != nil {
		return grant{}, "", errBadURL
	}
	switch g.op {
	case opPut, opPart:
		if g.size, err = strconv.ParseInt(q.Get("size"), 10, 64); err != nil || g.size < 0 {
			return grant{}, "", errBadURL
		}
		if checkUploadID(g.upload) != nil {
			return grant{}, "", errBadURL
		}
		if g.op == opPart {
			if g.part, err = strconv.Atoi(q.Get("part")); err != nil {
				return grant{}, "", errBadURL
			}
			if g.off, err = strconv.ParseInt(q.Get("off"), 10, 64); err != nil || g.off < 0 {
				return grant{}, "", errBadURL
			}
		}
	case opGet:
	default:
		return grant{}, "", errBadURL
	}
	return g, q.Get("sig"), nil
}

// cleanMediaType returns a media type in canonical form, parameters included, when s is
// one; a served Content-Type is never a string a client could smuggle headers through.
func cleanMediaType(s string) (string, bool) {
	mt, params, err := mime.ParseMediaType(s)
	if err != nil || !strings.Contains(mt, "/") {
		return "", false
	}
	out := mime.FormatMediaType(mt, params)
	return out, out != ""
}
