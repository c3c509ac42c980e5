package docstruct

import (
	"encoding/xml"
	"io"
	"path"
	"strings"

	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

// rels reads the relationships of part: id → target part name (external targets are
// left out).
func rels(c *zipparts.Container, part string) (map[string]string, error) {
	dir, file := path.Split(part)
	name := dir + "_rels/" + file + ".rels"
	out := map[string]string{}
	if !c.Has(name) {
		return out, nil
	}
	rc, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "Relationship" || anyAttr(se, "TargetMode") == "External" {
			continue
		}
		target := anyAttr(se, "Target")
		if strings.HasPrefix(target, "/") {
			target = strings.TrimPrefix(target, "/")
		} else {
			target = path.Join(dir, target)
		}
		out[anyAttr(se, "Id")] = target
	}
}

// relAttr is an r:id-style attribute (any namespace, local name id/embed).
func relAttr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local && a.Name.Space != "" {
			return a.Value
		}
	}
	return ""
}
