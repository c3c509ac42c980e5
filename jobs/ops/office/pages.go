package office

import (
	"context"
	"strings"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/officeprops"
)

// MaxCountPages is the largest page count CountPages reports, as for a PDF.
const MaxCountPages = 100_000

// pageCountLimits bound what counting pages reads (zip-bomb safety): the entry count
// is read from the end record before archive/zip allocates one per entry.
var pageCountLimits = officeprops.Limits{MaxEntries: 100_000, MaxPartBytes: 4 << 20}

// CountPages returns an office document's page count where it is cheap to know
// without rendering: docx and odt from the page count the authoring application
// recorded (docProps/app.xml Pages, meta.xml meta:page-count), pptx and odp from the
// slide count. ok is false for other formats, a missing or unreadable count, a count
// past MaxCountPages (a file states what it likes: prices and the files table take
// only a count a real document may have), or a damaged container; the count of a
// word-processing document is the author's application's, which LibreOffice's layout
// may differ from by a page or two. It is the inspect engine's reading (package
// officeprops), so the count a job is priced by is the one inspect reports.
func CountPages(path string, f domain.Format) (pages int, ok bool) {
	ext := strings.ToLower(f.Extension)
	switch ext {
	case "docx", "pptx", "odt", "odp":
	default:
		return 0, false
	}
	n, ok := officeprops.CountPages(context.Background(), path, ext, pageCountLimits)
	if !ok || n < 1 || n > MaxCountPages {
		return 0, false
	}
	return n, true
}
