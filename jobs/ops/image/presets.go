package image

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
