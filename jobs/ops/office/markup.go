package office

import (
	"bytes"
	"errors"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxMarkupBytes bounds the HTML and Markdown read into memory.
const maxMarkupBytes = 32 << 20

var errTooLarge = errors.New("office: input too large")

// markdownToHTML renders Markdown (with tables) as a sanitised HTML page. Raw HTML in
// the Markdown is dropped (goldmark's default), so only sanitised markup remains.
func markdownToHTML(md []byte) ([]byte, error) {
	if len(md) > maxMarkupBytes {
		return nil, errTooLarge
	}
	var buf bytes.Buffer
	buf.WriteString("<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>\n")
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert(md, &buf); err != nil {
		return nil, err
	}
	buf.WriteString("</body></html>\n")
	return sanitizeHTML(buf.Bytes())
}

// sanitizeHTML removes what would make LibreOffice reach outside the document: every
// URL that is not inline data (img src, link href, frames, objects, backgrounds, CSS
// url()), scripts, and meta refreshes. Links (<a href>) stay: they are not fetched.
func sanitizeHTML(in []byte) ([]byte, error) {
	if len(in) > maxMarkupBytes {
		return nil, errTooLarge
	}
	doc, err := html.Parse(bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			if c.Type == html.ElementNode {
				switch c.DataAtom {
				case atom.Script, atom.Iframe, atom.Frame, atom.Frameset, atom.Object, atom.Embed,
					atom.Applet, atom.Link, atom.Base, atom.Meta, atom.Audio, atom.Video, atom.Source, atom.Track:
					if !(c.DataAtom == atom.Meta && isCharsetMeta(c)) {
						n.RemoveChild(c)
						c = next
						continue
					}
				case atom.Style:
					if strings.Contains(strings.ToLower(textOf(c)), "url(") || strings.Contains(strings.ToLower(textOf(c)), "@import") {
						n.RemoveChild(c)
						c = next
						continue
					}
				}
				kept := c.Attr[:0]
				for _, a := range c.Attr {
					key := strings.ToLower(a.Key)
					val := strings.ToLower(strings.TrimSpace(a.Val))
					switch {
					case strings.HasPrefix(key, "on"):
						continue
					case key == "style" && strings.Contains(val, "url("):
						continue
					case key == "href" && c.DataAtom == atom.A:
					case key == "src" || key == "href" || key == "background" || key == "srcset" ||
						key == "data" || key == "poster" || key == "lowsrc" || key == "dynsrc" || key == "xlink:href":
						if !strings.HasPrefix(val, "data:") || key == "srcset" {
							continue
						}
					}
					kept = append(kept, a)
				}
				c.Attr = kept
			}
			walk(c)
			c = next
		}
	}
	walk(doc)
	var buf bytes.Buffer
	if err := html.Render(&buf, doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func isCharsetMeta(n *html.Node) bool {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, "charset") {
			return true
		}
	}
	return false
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

// htmlToMarkdown turns HTML (LibreOffice's export) into Markdown with pipe tables.
func htmlToMarkdown(h []byte) ([]byte, error) {
	if len(h) > maxMarkupBytes {
		return nil, errTooLarge
	}
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(), table.NewTablePlugin(),
	))
	md, err := conv.ConvertReader(bytes.NewReader(h))
	if err != nil {
		return nil, err
	}
	return append(bytes.TrimSpace(md), '\n'), nil
}
