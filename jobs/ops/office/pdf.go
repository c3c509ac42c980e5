package office

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"
	_ "image/gif"  // image → PDF inputs re-encoded as PNG
	_ "image/jpeg" // and output verification

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/imagepdf"
	"github.com/filemill/filemill/jobs/ops/internal/pdfpages"
	"github.com/filemill/filemill/jobs/ops/internal/vips"
)

func init() { api.DisableConfigDir() }

// countPDF counts a PDF's pages (the platform's counter, or pdfcpu), failing with the
// contract code of what is wrong with it.
func (e *Engine) countPDF(ctx context.Context, path string) (int, error) {
	return pdfpages.Count(ctx, e.cfg.CountPDFPages, path)
}

// checkPDF refuses a PDF input that cannot be read or needs a password.
func (e *Engine) checkPDF(ctx context.Context, path string) error {
	_, err := e.countPDF(ctx, path)
	return err
}

// pdfcpuImage lists the image types pdfcpu embeds as they are; others are re-encoded
// as PNG first.
var pdfcpuImage = map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/tiff": ".tif", "image/webp": ".webp"}

// imageToPDF puts the image on one page of its displayed size (a pixel a point): its
// EXIF orientation applied, as viewers and image.convert show it. A JPEG is embedded
// as it is, the orientation becoming its placement on the page; another oriented
// image is decoded upright by libvips first.
func (c *conversion) imageToPDF(ctx context.Context) (*domain.EngineOutput, error) {
	f, err := os.Open(c.in.Path)
	if err != nil {
		return nil, err
	}
	cfg, _, err := image.DecodeConfig(f)
	f.Close()
	if err != nil {
		return nil, domain.Errorf(domain.CodeUnsupportedInput, "convert cannot read this image type")
	}
	if int64(cfg.Width)*int64(cfg.Height) > c.e.cfg.MaxPixels {
		return nil, domain.Errorf(domain.CodeUnsupportedInput, "the image is larger than %d pixels", c.e.cfg.MaxPixels)
	}
	mime := c.in.Format.MIMEType
	orientation := 1
	loader, viaVips := vips.LoaderFor(mime)
	if viaVips {
		h, err := vips.ReadHeader(c.in.Path, loader)
		if err != nil {
			return nil, domain.Errorf(domain.CodeCorruptedFile, "the image cannot be read")
		}
		orientation = h.Orientation
	}
	out := filepath.Join(c.in.WorkDir, c.base+".pdf")
	switch {
	case mime == "image/jpeg":
		if err := jpegToPDF(c.in.Path, orientation, out); err != nil {
			return nil, err
		}
	default:
		// pdfcpu picks the decoder by the file's extension.
		ext, ok := pdfcpuImage[mime]
		src, err := c.scratch("image" + ext)
		if err != nil {
			return nil, err
		}
		switch {
		case orientation != 1:
			up, err := vips.LoadUpright(ctx, c.in.Path, loader)
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				return nil, domain.Errorf(domain.CodeCorruptedFile, "the image cannot be read")
			}
			src += ".png"
			if err := vips.EncodeFile(ctx, src, up.Pixels, vips.PNG, 0); err != nil {
				return nil, err
			}
		case ok:
			if err := os.Symlink(c.in.Path, src); err != nil {
				return nil, err
			}
		default:
			if err := reencodePNG(c.in.Path, src+".png"); err != nil {
				return nil, err
			}
			src += ".png"
		}
		imp := pdfcpu.DefaultImportConfig()
		imp.Pos = types.Full // the page takes the image's size
		if err := importImage(src, out, imp); err != nil {
			return nil, domain.Errorf(domain.CodeCorruptedFile, "the image cannot be read")
		}
	}
	if n, err := c.e.countPDF(ctx, out); err != nil || n != 1 {
		return nil, domain.Errorf(domain.CodeOutputValidationFailed, "the PDF made from the image does not verify")
	}
	return single(c.base+".pdf", "application/pdf", out), nil
}

// jpegToPDF embeds the JPEG byte for byte on a page of its displayed size.
func jpegToPDF(in string, orientation int, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	img, err := imagepdf.JPEG(data)
	if err != nil {
		return domain.Errorf(domain.CodeCorruptedFile, "the image cannot be read")
	}
	pc, err := imagepdf.New()
	if err != nil {
		return err
	}
	if _, _, err := imagepdf.AddPage(pc, img, orientation, 72); err != nil {
		return err
	}
	return imagepdf.Write(pc, out)
}

func importImage(src, out string, imp *pdfcpu.Import) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("pdfcpu: %v", p)
		}
	}()
	return api.ImportImagesFile([]string{src}, out, imp, model.NewDefaultConfiguration())
}

func reencodePNG(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return domain.Errorf(domain.CodeCorruptedFile, "the image cannot be read")
	}
	w, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := png.Encode(w, img); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
