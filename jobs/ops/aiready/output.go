package aiready

import (
	"github.com/filemill/filemill/jobs/ops/internal/docstruct"
)

// structure is the document read from a PDF's layout as a docstruct document, with
// each block's lines (and each table row) where the page draws them.
func (d *document) structure(pages int) *docstruct.Document {
	out := &docstruct.Document{Pages: pages, PageSource: docstruct.PageSourceLayout, Blocks: make([]*docstruct.Block, 0, len(d.blocks))}
	for _, b := range d.blocks {
		sb := &docstruct.Block{Text: b.text, Level: b.level, Boxes: docstruct.MergeBoxes(b.boxes)}
		switch b.kind {
		case kindHeading:
			sb.Kind = docstruct.Heading
		case kindItem:
			sb.Kind = docstruct.ListItem
			// A number, letter or roman numeral is the item's marker as written.
			sb.Ordered = b.marker != "-"
			if sb.Ordered {
				sb.Marker = b.marker
			}
		case kindTable:
			sb.Kind = docstruct.Table
			sb.Rows = b.rows
			sb.RowBoxes = b.rowBoxes
			sb.Boxes = nil
			for _, r := range b.rowBoxes {
				sb.Boxes = append(sb.Boxes, r...)
			}
			sb.Boxes = docstruct.MergeBoxes(sb.Boxes)
		default:
			sb.Kind = docstruct.Paragraph
		}
		out.Blocks = append(out.Blocks, sb)
	}
	return out
}
