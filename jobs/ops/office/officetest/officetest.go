// Package officetest makes office documents for tests and benchmarks: OOXML written
// directly (docx, xlsx), a pptx made by LibreOffice from a flat ODF presentation, and
// damaged and password-protected documents. It is for tests only.
package officetest

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func zipParts(tb testing.TB, parts [][2]string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range parts {
		method := zip.Deflate
		if p[0] == "mimetype" || strings.HasPrefix(p[1], "\x00enc:") {
			method = zip.Store // ODF: the type first and stored; encrypted parts stored
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: p[0], Method: method})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write([]byte(strings.TrimPrefix(p[1], "\x00enc:"))); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// DOCX returns a Word document with one page per element of pages (each a list of
// paragraphs), separated by page breaks; docProps/app.xml records the page count.
func DOCX(tb testing.TB, pages [][]string) []byte {
	tb.Helper()
	return docx(tb, pages, "", "", false)
}

// WordDOCX is DOCX as Word saves it: each page after the first also begins with the
// rendered page break Word writes where a page began in its layout.
func WordDOCX(tb testing.TB, pages [][]string) []byte {
	tb.Helper()
	return docx(tb, pages, "", "", true)
}

// DOCXWithLinkedImage returns a one-paragraph Word document showing an image that is
// linked, not embedded: opening it would fetch url.
func DOCXWithLinkedImage(tb testing.TB, text, url string) []byte {
	tb.Helper()
	const emu = "952500"
	drawing := `<w:p><w:r><w:drawing><wp:inline><wp:extent cx="` + emu + `" cy="` + emu + `"/><wp:docPr id="1" name="Picture 1"/>` +
		`<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture">` +
		`<pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:nvPicPr><pic:cNvPr id="0" name="remote.png"/><pic:cNvPicPr/></pic:nvPicPr>` +
		`<pic:blipFill><a:blip r:link="rIdRemote"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill>` +
		`<pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="` + emu + `" cy="` + emu + `"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr></pic:pic>` +
		`</a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>`
	rels := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rIdRemote" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="` + html.EscapeString(url) + `" TargetMode="External"/></Relationships>`
	return docx(tb, [][]string{{text}}, drawing, rels, false)
}

func docx(tb testing.TB, pages [][]string, extraBody, docRels string, rendered bool) []byte {
	tb.Helper()
	var body strings.Builder
	for i, paras := range pages {
		for j, p := range paras {
			body.WriteString("<w:p>")
			if i > 0 && j == 0 {
				body.WriteString(`<w:r><w:br w:type="page"/></w:r>`)
				if rendered {
					body.WriteString(`<w:r><w:lastRenderedPageBreak/></w:r>`)
				}
			}
			fmt.Fprintf(&body, `<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, html.EscapeString(p))
		}
	}
	body.WriteString(extraBody)
	parts := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/docProps/app.xml" ContentType="application/vnd.openxmlformats-officedocument.extended-properties+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties" Target="docProps/app.xml"/></Relationships>`},
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body>` + body.String() +
			`<w:sectPr><w:pgSz w:w="12240" w:h="15840"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440"/></w:sectPr></w:body></w:document>`},
		{"docProps/app.xml", fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"><Application>filemill test</Application><Pages>%d</Pages></Properties>`, len(pages))},
	}
	if docRels != "" {
		parts = append(parts, [2]string{"word/_rels/document.xml.rels", docRels})
	}
	return zipParts(tb, parts)
}

// Words returns n distinct, dictionary-like words for page i, so text found in an
// output can be traced to its page.
func Words(i, n int) []string {
	base := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
		"kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"}
	out := make([]string, n)
	for j := range out {
		out[j] = fmt.Sprintf("%s%d", base[j%len(base)], i*1000+j)
	}
	return out
}

// TextPages returns pages of paragraphs filled with Words, paras paragraphs a page.
func TextPages(pages, paras int) [][]string {
	out := make([][]string, pages)
	for i := range out {
		for j := range paras {
			out[i] = append(out[i], strings.Join(Words(i*100+j, 12), " "))
		}
	}
	return out
}

// XLSX returns a one-sheet workbook with rows of inline strings.
func XLSX(tb testing.TB, rows [][]string) []byte {
	tb.Helper()
	var data strings.Builder
	for r, row := range rows {
		fmt.Fprintf(&data, `<row r="%d">`, r+1)
		for c, v := range row {
			fmt.Fprintf(&data, `<c r="%c%d" t="inlineStr"><is><t>%s</t></is></c>`, 'A'+c, r+1, html.EscapeString(v))
		}
		data.WriteString("</row>")
	}
	return zipParts(tb, [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`},
		{"xl/worksheets/sheet1.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>` + data.String() + `</sheetData></worksheet>`},
	})
}

// RepeatedCellsODS returns a spreadsheet of rows×cols cells holding 1, written as one
// cell repeated: a few hundred bytes that LibreOffice fills in cell by cell, its memory
// growing with each (a million rows of a thousand columns need gigabytes).
func RepeatedCellsODS(tb testing.TB, rows, cols int) []byte {
	tb.Helper()
	return odf(tb, "application/vnd.oasis.opendocument.spreadsheet", fmt.Sprintf(`<office:document-content `+
		`xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.2">`+
		`<office:body><office:spreadsheet><table:table table:name="Data"><table:table-row table:number-rows-repeated="%d">`+
		`<table:table-cell table:number-columns-repeated="%d" office:value-type="float" office:value="1"/>`+
		`</table:table-row></table:table></office:spreadsheet></office:body></office:document-content>`, rows, cols), nil)
}

// FlatODP returns a flat ODF presentation with one slide per title.
func FlatODP(titles []string) []byte {
	var pages strings.Builder
	for i, t := range titles {
		fmt.Fprintf(&pages, `<draw:page draw:name="s%d"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>%s</text:p></draw:text-box></draw:frame></draw:page>`, i+1, html.EscapeString(t))
	}
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.presentation"><office:body><office:presentation>` +
		pages.String() + `</office:presentation></office:body></office:document>`)
}

// PPTX has LibreOffice (a one-off soffice --convert-to with its own profile) turn a
// flat ODF presentation with these slide titles into a pptx.
func PPTX(tb testing.TB, titles []string) []byte {
	tb.Helper()
	if _, err := exec.LookPath("soffice"); err != nil {
		tb.Fatal("soffice is missing: apt-get install -y --no-install-recommends libreoffice-core-nogui libreoffice-impress-nogui")
	}
	dir := tb.TempDir()
	src := filepath.Join(dir, "deck.fodp")
	if err := os.WriteFile(src, FlatODP(titles), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("soffice", "-env:UserInstallation=file://"+filepath.Join(dir, "profile"),
		"--headless", "--convert-to", "pptx:Impress MS PowerPoint 2007 XML", "--outdir", dir, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("soffice --convert-to pptx: %v: %s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "deck.pptx"))
	if err != nil {
		tb.Fatalf("soffice made no pptx: %v", err)
	}
	return b
}

// EncryptedODT returns a text document protected by a password, as LibreOffice sees
// one: the manifest declares content.xml encrypted (AES-256-CBC, PBKDF2), and the
// part holds ciphertext. Opening it needs the password.
func EncryptedODT(tb testing.TB) []byte {
	tb.Helper()
	b64 := func(n int) string {
		b := make([]byte, n)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	cipher := make([]byte, 4096)
	rand.Read(cipher)
	return zipParts(tb, [][2]string{
		{"mimetype", "application/vnd.oasis.opendocument.text"},
		{"content.xml", "\x00enc:" + string(cipher)},
		{"META-INF/manifest.xml", `<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">
 <manifest:file-entry manifest:full-path="/" manifest:version="1.2" manifest:media-type="application/vnd.oasis.opendocument.text"/>
 <manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml" manifest:size="2000">
  <manifest:encryption-data manifest:checksum-type="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256-1k" manifest:checksum="` + b64(32) + `">
   <manifest:algorithm manifest:algorithm-name="http://www.w3.org/2001/04/xmlenc#aes256-cbc" manifest:initialisation-vector="` + b64(16) + `"/>
   <manifest:start-key-generation manifest:start-key-generation-name="http://www.w3.org/2000/09/xmldsig#sha256" manifest:key-size="32"/>
   <manifest:key-derivation manifest:key-derivation-name="PBKDF2" manifest:key-size="32" manifest:iteration-count="100000" manifest:salt="` + b64(16) + `"/>
  </manifest:encryption-data>
 </manifest:file-entry>
</manifest:manifest>`},
	})
}

// odfNS declares the namespaces the ODF content below uses; event and script
// language names are QNames, so dom: and ooo: must be declared for the events to load.
const odfNS = `xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" ` +
	`xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" ` +
	`xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:script="urn:oasis:names:tc:opendocument:xmlns:script:1.0" ` +
	`xmlns:ooo="http://openoffice.org/2004/office" xmlns:dom="http://www.w3.org/2001/xml-events" office:version="1.2"`

func odf(tb testing.TB, mime, content string, extra [][2]string) []byte {
	tb.Helper()
	manifest := `<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">
 <manifest:file-entry manifest:full-path="/" manifest:media-type="` + mime + `"/>
 <manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>`
	for _, p := range extra {
		manifest += "\n <manifest:file-entry manifest:full-path=\"" + p[0] + "\" manifest:media-type=\"text/xml\"/>"
	}
	manifest += "\n</manifest:manifest>"
	parts := [][2]string{{"mimetype", mime}, {"content.xml", `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + content}}
	parts = append(parts, extra...)
	return zipParts(tb, append(parts, [2]string{"META-INF/manifest.xml", manifest}))
}

// Kinds of ODF document OpenMacroDocument makes.
const (
	MacroText         = "odt"
	MacroPresentation = "odp"
)

// OpenMacroDocument returns an ODF document of kind (MacroText or MacroPresentation) showing text, whose Basic macro, bound to the document's open
// event, writes "ran" to marker, reads url (an HTTP GET through the office) and then
// ends the office, so that a run that allows macros (see OpenAllowingMacros) finishes
// by itself.
func OpenMacroDocument(tb testing.TB, kind, text, marker, url string) []byte {
	tb.Helper()
	basic := "Sub Main\n" +
		"  n = FreeFile\n" +
		"  Open \"" + marker + "\" For Output As #n\n" +
		"  Print #n, \"ran\"\n" +
		"  Close #n\n" +
		"  On Error Resume Next\n" +
		"  CreateUnoService(\"com.sun.star.ucb.SimpleFileAccess\").openFileRead(\"" + url + "\")\n" +
		"  StarDesktop.terminate()\n" +
		"End Sub\n"
	t := html.EscapeString(text)
	var mime, body string
	switch kind {
	case MacroText:
		mime, body = "application/vnd.oasis.opendocument.text", `<office:text><text:p>`+t+`</text:p></office:text>`
	case MacroPresentation:
		mime, body = "application/vnd.oasis.opendocument.presentation", `<office:presentation><draw:page draw:name="s1">`+
			`<draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>`+t+
			`</text:p></draw:text-box></draw:frame></draw:page></office:presentation>`
	default:
		tb.Fatalf("OpenMacroDocument: unknown kind %q", kind)
	}
	content := `<office:document-content ` + odfNS + `><office:scripts><office:event-listeners>` +
		`<script:event-listener script:language="ooo:script" script:event-name="dom:load" xlink:type="simple" ` +
		`xlink:href="vnd.sun.star.script:Standard.Module1.Main?language=Basic&amp;location=document"/>` +
		`</office:event-listeners></office:scripts><office:body>` + body + `</office:body></office:document-content>`
	return odf(tb, mime, content, [][2]string{
		{"Basic/script-lc.xml", `<?xml version="1.0" encoding="UTF-8"?>
<library:libraries xmlns:library="http://openoffice.org/2000/library" xmlns:xlink="http://www.w3.org/1999/xlink"><library:library library:name="Standard" library:link="false"/></library:libraries>`},
		{"Basic/Standard/script-lb.xml", `<?xml version="1.0" encoding="UTF-8"?>
<library:library xmlns:library="http://openoffice.org/2000/library" library:name="Standard" library:readonly="false" library:passwordprotected="false"><library:element library:name="Module1"/></library:library>`},
		{"Basic/Standard/Module1.xml", `<?xml version="1.0" encoding="UTF-8"?>
<script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1" script:language="StarBasic">` + html.EscapeString(basic) + `</script:module>`},
	})
}

func linkedImage(url string) string {
	return `<draw:frame draw:name="linked" text:anchor-type="as-char" svg:x="2cm" svg:y="6cm" svg:width="3cm" svg:height="3cm">` +
		`<draw:image xlink:href="` + html.EscapeString(url) + `" xlink:type="simple" xlink:show="embed" xlink:actuate="onLoad"/></draw:frame>`
}

// ODTWithLinkedImage returns a one-paragraph text document showing an image that is
// linked by url (http:, file: or relative), not embedded.
func ODTWithLinkedImage(tb testing.TB, text, url string) []byte {
	tb.Helper()
	return odf(tb, "application/vnd.oasis.opendocument.text", `<office:document-content `+odfNS+`><office:body><office:text>`+
		`<text:p>`+html.EscapeString(text)+`</text:p><text:p>`+linkedImage(url)+`</text:p></office:text></office:body></office:document-content>`, nil)
}

// ODPWithLinkedImage returns a one-slide presentation with a title and an image
// linked by url, not embedded.
func ODPWithLinkedImage(tb testing.TB, title, url string) []byte {
	tb.Helper()
	return odf(tb, "application/vnd.oasis.opendocument.presentation", `<office:document-content `+odfNS+`><office:body><office:presentation>`+
		`<draw:page draw:name="s1"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>`+html.EscapeString(title)+
		`</text:p></draw:text-box></draw:frame>`+linkedImage(url)+`</draw:page></office:presentation></office:body></office:document-content>`, nil)
}

// OpenAllowingMacros opens the document at path in a throwaway LibreOffice (own
// profile, macro security low, so document macros run without asking) and returns
// when that office exits. It is the control for OpenMacroDocument: the document's
// macro ends the office; ctx bounds a run whose macro does not.
func OpenAllowingMacros(ctx context.Context, tb testing.TB, path string) {
	tb.Helper()
	if _, err := exec.LookPath("soffice"); err != nil {
		tb.Fatal("soffice is missing: apt-get install -y --no-install-recommends libreoffice-core-nogui libreoffice-writer-nogui")
	}
	prof := filepath.Join(tb.TempDir(), "profile")
	if err := os.MkdirAll(filepath.Join(prof, "user"), 0o700); err != nil {
		tb.Fatal(err)
	}
	low := `<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>0</value></prop></item>
</oor:items>`
	if err := os.WriteFile(filepath.Join(prof, "user", "registrymodifications.xcu"), []byte(low), 0o600); err != nil {
		tb.Fatal(err)
	}
	// Not --convert-to: a conversion loads the document hidden, and hidden documents
	// do not get their open event.
	cmd := exec.CommandContext(ctx, "soffice", "-env:UserInstallation=file://"+prof, "--headless", "--norestore", path)
	cmd.Env = append(os.Environ(), "SAL_USE_VCLPLUGIN=svp")
	// The exit status is not read: an office ended from inside a macro reports an error.
	_ = cmd.Run()
	if ctx.Err() != nil {
		tb.Fatalf("LibreOffice with macros allowed did not end: the document's macro did not run (%v)", ctx.Err())
	}
}
