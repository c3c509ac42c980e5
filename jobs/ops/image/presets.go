package image

import (
	"encoding/json"
	"fmt"

	"github.com/filemill/filemill/domain"
)

// The image and avatar presets are pipelines of image.convert steps with fixed
// options; each step reads the previous step's output. These are their steps.

// ImagePresetSteps: a web-ready WebP no larger than 2048×2048 (never enlarged),
// upright, metadata stripped, then a 256 px thumbnail of it.
func ImagePresetSteps() []Options {
	return []Options{
		{Format: "webp", Quality: ptr(80), Width: ptr(2048), Height: ptr(2048), Fit: "inside", Enlarge: ptr(false), StripMetadata: ptr(true)},
		{Format: "webp", Quality: ptr(80), Width: ptr(256), Height: ptr(256), Fit: "inside", Enlarge: ptr(false), StripMetadata: ptr(true)},
	}
}

// AvatarPresetSteps: a square cropped where a person looks first, as WebP at 512 px,
// then at 128 px from it (a smaller image is enlarged: avatars have fixed sizes).
func AvatarPresetSteps() []Options {
	return []Options{
		{Format: "webp", Quality: ptr(80), Width: ptr(512), Height: ptr(512), Fit: "cover", Gravity: "attention", StripMetadata: ptr(true)},
		{Format: "webp", Quality: ptr(80), Width: ptr(128), Height: ptr(128), Fit: "cover", Gravity: "attention", StripMetadata: ptr(true)},
	}
}

// Presets declares the image and avatar presets for the registry.
func Presets() []domain.PresetSpec {
	step := func(name string, o Options) domain.StepSpec {
		raw, err := json.Marshal(o)
		if err != nil {
			panic(err) // options of plain fields always marshal
		}
		// Both steps make a WebP of the same name: the size tells them apart
		// (photo-2048.webp, photo-256.webp).
		return domain.StepSpec{Name: name, Operation: OperationConvert, Options: string(raw), OutputSuffix: fmt.Sprintf("-%d", *o.Width)}
	}
	img, av := ImagePresetSteps(), AvatarPresetSteps()
	inputs := Specs()[0].InputFormats
	return []domain.PresetSpec{
		{Name: "image", InputFormats: inputs,
			Description: "A web-ready WebP of any image, upright, metadata stripped, at most 2048×2048 (never enlarged), quality 80; and a 256 px WebP thumbnail of it.",
			Steps:       []domain.StepSpec{step("image", img[0]), step("thumbnail", img[1])}},
		{Name: "avatar", InputFormats: inputs,
			Description: "A square avatar cropped where a person looks first (attention), as WebP at 512×512 and 128×128, metadata stripped.",
			Steps:       []domain.StepSpec{step("large", av[0]), step("small", av[1])}},
	}
}
