// The few libvips calls the image engine needs. Variadic libvips functions cannot be
// called from Go, so each is wrapped here with fixed arguments.

#include <malloc.h>
#include <string.h>
#include <webp/decode.h>
#include "vips.h"

// Loaders an input may reach. Everything else (ImageMagick, Matlab, FITS, OpenSlide,
// raw, vips' own formats) is blocked: hostile files must not pick their parser.
static const char *allowed_loaders[] = {
	"VipsForeignLoadJpeg", "VipsForeignLoadPng", "VipsForeignLoadWebp",
	"VipsForeignLoadHeif", "VipsForeignLoadNsgif", "VipsForeignLoadTiff",
	"VipsForeignLoadSvg", "VipsForeignLoadPdf", NULL,
};

// libvips reports every error it returns also as a warning on stderr; the engine
// logs the returned error itself.
static void quiet(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
}

int fm_init(void) {
	if (VIPS_INIT("filemill"))
		return -1;
	// Every conversion allocates and frees the same few megabytes of line buffers and
	// encoder state. glibc's defaults hand large blocks back to the kernel on free and
	// map them again, zero-filled, on the next conversion: 3–5 % of a conversion's CPU
	// in page faults. Keeping blocks up to 32 MiB in the heap, and up to 256 MiB of
	// free heap before trimming, bounds what is kept and ends the churn.
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG,
		quiet, NULL);
	vips_operation_block_set("VipsForeignLoad", TRUE);
	for (int i = 0; allowed_loaders[i]; i++)
		vips_operation_block_set(allowed_loaders[i], FALSE);
	return 0;
}

void fm_configure(int threads, int cache_ops, size_t cache_mem, int cache_files) {
	vips_concurrency_set(threads);
	vips_cache_set_max(cache_ops);
	vips_cache_set_max_mem(cache_mem);
	vips_cache_set_max_files(cache_files);
}

// fm_loader_allowed reports whether the loader libvips would pick for path is one of
// the allowed ones.
int fm_loader_allowed(const char *path) {
	const char *name = vips_foreign_find_load(path);
	if (!name)
		return 0;
	for (int i = 0; allowed_loaders[i]; i++)
		if (vips_isprefix(allowed_loaders[i], name))
			return 1;
	return 0;
}

static void fill_header(VipsImage *im, FmHeader *h) {
	const char *loader = NULL;
	h->width = im->Xsize;
	h->height = im->Ysize;
	h->page_height = vips_image_get_page_height(im);
	h->n_pages = vips_image_get_n_pages(im);
	h->orientation = vips_image_get_orientation(im);
	h->swap = vips_image_get_orientation_swap(im);
	h->bands = im->Bands;
	h->has_alpha = vips_image_hasalpha(im);
	h->has_icc = vips_image_get_typeof(im, VIPS_META_ICC_NAME) != 0;
	h->interpretation = vips_image_guess_interpretation(im);
	h->cmyk = h->interpretation == VIPS_INTERPRETATION_CMYK;
	h->loader[0] = 0;
	if (vips_image_get_typeof(im, VIPS_META_LOADER) && !vips_image_get_string(im, VIPS_META_LOADER, &loader))
		g_strlcpy(h->loader, loader, sizeof(h->loader));
}

// Header reads open the file lazily: nothing is decoded until pixels are asked for.
int fm_header_file(const char *path_opts, FmHeader *h) {
	VipsImage *im = vips_image_new_from_file(path_opts, "access", VIPS_ACCESS_SEQUENTIAL, NULL);
	if (!im)
		return -1;
	fill_header(im, h);
	g_object_unref(im);
	return 0;
}

// The thumbnail operation does shrink-on-load (JPEG DCT scaling, WebP, PDF and SVG
// loaded at size), auto-orientation and colour management. The size is forced: the
// caller computed the exact output size for its fit mode.
int fm_thumbnail_file(const char *path_opts, VipsImage **out, int width, int height, const char *export_profile) {
	if (export_profile && *export_profile)
		return vips_thumbnail(path_opts, out, width, "height", height, "size", VIPS_SIZE_FORCE,
			"fail_on", VIPS_FAIL_ON_ERROR, "export_profile", export_profile, NULL);
	return vips_thumbnail(path_opts, out, width, "height", height, "size", VIPS_SIZE_FORCE,
		"fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

int fm_thumbnail_image(VipsImage *in, VipsImage **out, int width, int height) {
	return vips_thumbnail_image(in, out, width, "height", height, "size", VIPS_SIZE_FORCE, NULL);
}

int fm_from_memory(const void *pixels, size_t len, int width, int height, int bands, VipsImage **out) {
	VipsImage *im = vips_image_new_from_memory_copy(pixels, len, width, height, bands, VIPS_FORMAT_UCHAR);
	if (!im)
		return -1;
	im->Type = VIPS_INTERPRETATION_sRGB;
	*out = im;
	return 0;
}

int fm_copy_memory(VipsImage *in, VipsImage **out) {
	VipsImage *im = vips_image_copy_memory(in);
	if (!im)
		return -1;
	*out = im;
	return 0;
}

int fm_rot(VipsImage *in, VipsImage **out, int angle) {
	VipsAngle a = angle == 90 ? VIPS_ANGLE_D90 : angle == 180 ? VIPS_ANGLE_D180 : VIPS_ANGLE_D270;
	return vips_rot(in, out, a, NULL);
}

int fm_extract(VipsImage *in, VipsImage **out, int left, int top, int width, int height) {
	return vips_extract_area(in, out, left, top, width, height, NULL);
}

int fm_smartcrop(VipsImage *in, VipsImage **out, int width, int height, int interesting) {
	return vips_smartcrop(in, out, width, height, "interesting", interesting, NULL);
}

int fm_embed(VipsImage *in, VipsImage **out, int x, int y, int width, int height, const double *bg, int n) {
	VipsArrayDouble *background = vips_array_double_new(bg, n);
	int r = vips_embed(in, out, x, y, width, height, "extend", VIPS_EXTEND_BACKGROUND,
		"background", background, NULL);
	vips_area_unref(VIPS_AREA(background));
	return r;
}

int fm_flatten(VipsImage *in, VipsImage **out, const double *bg, int n) {
	VipsArrayDouble *background = vips_array_double_new(bg, n);
	int r = vips_flatten(in, out, "background", background, NULL);
	vips_area_unref(VIPS_AREA(background));
	return r;
}

int fm_addalpha(VipsImage *in, VipsImage **out) {
	return vips_addalpha(in, out, NULL);
}

int fm_to_srgb(VipsImage *in, VipsImage **out) {
	return vips_colourspace(in, out, VIPS_INTERPRETATION_sRGB, NULL);
}

int fm_arrayjoin(VipsImage **in, int n, VipsImage **out) {
	return vips_arrayjoin(in, out, n, "across", 1, NULL);
}

// Metadata that is structure, not information about the picture: kept when stripping.
static const char *structural_fields[] = {
	VIPS_META_PAGE_HEIGHT, VIPS_META_N_PAGES, "loop", "delay", "gif-loop", "gif-delay", NULL,
};

static int is_structural(const char *name, int keep_icc) {
	if (keep_icc && strcmp(name, VIPS_META_ICC_NAME) == 0)
		return 1;
	for (int i = 0; structural_fields[i]; i++)
		if (strcmp(name, structural_fields[i]) == 0)
			return 1;
	return 0;
}

// fm_finish_meta copies in and sets what the saver writes besides pixels: with strip,
// only the ICC profile (already converted to sRGB) and the animation structure stay;
// without, everything stays but the orientation, which the pixels now carry out. res
// (pixels per millimetre) > 0 sets the density; page_height > 0 the frame height.
int fm_finish_meta(VipsImage *in, VipsImage **out, int strip, double res, int page_height) {
	int r = res > 0 ? vips_copy(in, out, "xres", res, "yres", res, NULL) : vips_copy(in, out, NULL);
	if (r)
		return r;
	if (strip) {
		gchar **fields = vips_image_get_fields(*out);
		for (int i = 0; fields[i]; i++) {
			// Header fields (width, bands, ...) are not metadata; removing them is a no-op.
			if (!is_structural(fields[i], 1))
				vips_image_remove(*out, fields[i]);
		}
		g_strfreev(fields);
	}
	else {
		vips_image_set_int(*out, VIPS_META_ORIENTATION, 1);
	}
	if (page_height > 0)
		vips_image_set_int(*out, VIPS_META_PAGE_HEIGHT, page_height);
	else
		vips_image_remove(*out, VIPS_META_PAGE_HEIGHT);
	return 0;
}

int fm_save(VipsImage *in, const char *path, const FmSave *o) {
	int q = o->quality;
	int effort = o->effort;
	switch (o->format) {
	case FM_JPEG:
		return vips_jpegsave(in, path, "Q", q > 0 ? q : 80, "optimize_coding", effort >= 5,
			"strip", o->strip, NULL);
	case FM_PNG:
		if (o->palette)
			return vips_pngsave(in, path, "compression", effort >= 0 ? effort : 6, "palette", TRUE,
				"Q", q > 0 ? q : 80, "strip", o->strip, NULL);
		return vips_pngsave(in, path, "compression", effort >= 0 ? effort : 6, "strip", o->strip, NULL);
	case FM_WEBP:
		return vips_webpsave(in, path, "Q", q > 0 ? q : 80, "lossless", o->lossless,
			"effort", effort >= 0 ? (effort * 6 + 4) / 9 : 4, "strip", o->strip, NULL);
	case FM_AVIF:
		return vips_heifsave(in, path, "Q", q > 0 ? q : 60, "lossless", o->lossless,
			"compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1, "bitdepth", 8,
			"effort", effort >= 0 ? effort : 4, "strip", o->strip, NULL);
	case FM_GIF:
		return vips_gifsave(in, path, "effort", effort >= 0 ? effort + 1 : 7, "strip", o->strip, NULL);
	case FM_TIFF:
		if (q > 0)
			return vips_tiffsave(in, path, "compression", VIPS_FOREIGN_TIFF_COMPRESSION_JPEG, "Q", q,
				"strip", o->strip, NULL);
		return vips_tiffsave(in, path, "compression", VIPS_FOREIGN_TIFF_COMPRESSION_DEFLATE,
			"predictor", VIPS_FOREIGN_TIFF_PREDICTOR_HORIZONTAL, "strip", o->strip, NULL);
	}
	vips_error("filemill", "unknown output format %d", o->format);
	return -1;
}

// fm_verify reads an output back: its header, then every pixel (the average forces a
// full decode), failing on any decoder error.
int fm_verify(const char *path_opts, FmHeader *h) {
	VipsImage *im = vips_image_new_from_file(path_opts, "access", VIPS_ACCESS_SEQUENTIAL,
		"fail_on", VIPS_FAIL_ON_ERROR, NULL);
	double avg;
	if (!im)
		return -1;
	fill_header(im, h);
	int r = vips_avg(im, &avg, NULL);
	g_object_unref(im);
	return r;
}

// fm_verify_webp decodes a still WebP in full with libwebp, the decoder libvips uses,
// but not through libvips' loader, which paints the frame onto an RGBA canvas and
// hands it on a line at a time: four times the cost of the decode itself. Returns 1,
// decoding nothing, for an animation; 0 when every pixel decoded; -1 on failure.
int fm_verify_webp(const void *data, size_t len, int *width, int *height) {
	WebPDecoderConfig config;
	VP8StatusCode status;
	if (!WebPInitDecoderConfig(&config)) {
		vips_error("filemill", "libwebp: version mismatch");
		return -1;
	}
	if ((status = WebPGetFeatures(data, len, &config.input)) != VP8_STATUS_OK) {
		vips_error("filemill", "libwebp: unreadable header (status %d)", status);
		return -1;
	}
	if (config.input.has_animation)
		return 1;
	*width = config.input.width;
	*height = config.input.height;
	// A lossy stream holds Y'CbCr: asking for it skips only the conversion to RGB.
	config.output.colorspace = config.input.format == 2 ? MODE_RGBA : config.input.has_alpha ? MODE_YUVA : MODE_YUV;
	status = WebPDecode(data, len, &config);
	WebPFreeDecBuffer(&config.output);
	if (status != VP8_STATUS_OK) {
		vips_error("filemill", "libwebp: decoding failed (status %d)", status);
		return -1;
	}
	return 0;
}

void fm_set_kill(VipsImage *im) {
	vips_image_set_kill(im, TRUE);
}

// A stop flag, set from Go when the job's context ends and read on libvips' threads.
void fm_flag_set(int *flag) {
	__atomic_store_n(flag, 1, __ATOMIC_RELEASE);
}

// libvips emits "eval" on an image watched for progress as each tile of a pipeline
// reading it is computed, on the computing thread: the kill flag set here is seen by
// the next tile's region request, and the evaluation ends with an error. It is set
// again at every tile, since libvips clears it once it has been seen.
static void fm_eval(VipsImage *im, VipsProgress *progress, int *flag) {
	if (__atomic_load_n(flag, __ATOMIC_ACQUIRE))
		vips_image_set_kill(im, TRUE);
}

// fm_watch has every evaluation that reads im (saving it, or anything downstream)
// stop once *flag is set.
void fm_watch(VipsImage *im, int *flag) {
	vips_image_set_progress(im, TRUE);
	g_signal_connect(im, "eval", G_CALLBACK(fm_eval), flag);
}

// fm_unwatch removes fm_watch's handler: the flag is freed with the pipeline, while
// the image may live on (libvips' operation cache).
void fm_unwatch(VipsImage *im, int *flag) {
	g_signal_handlers_disconnect_matched(im, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL, flag);
}

// A budget's memory is libvips' tracked memory, process-wide: with several conversions
// at once, one sees the others' growth too, and the bound is on them together.
static int fm_budget_exceeded(FmBudget *b, size_t more) {
	if (!b->mem_max)
		return 0;
	size_t mem = vips_tracked_get_mem();
	if (mem + more <= b->mem_base || mem + more - b->mem_base <= b->mem_max)
		return 0;
	__atomic_store_n(&b->over, 1, __ATOMIC_RELEASE);
	return 1;
}

FmBudget *fm_budget_new(size_t mem_max) {
	FmBudget *b = g_new0(FmBudget, 1);
	b->mem_max = mem_max;
	b->mem_base = vips_tracked_get_mem();
	return b;
}

void fm_budget_kill(FmBudget *b) {
	__atomic_store_n(&b->kill, 1, __ATOMIC_RELEASE);
}

int fm_budget_over(FmBudget *b) {
	return __atomic_load_n(&b->over, __ATOMIC_ACQUIRE);
}

// fm_budget_admit checks, before im is made in memory whole, that its pixels fit the
// budget: 0 when they do; -1, with the budget marked over, when they do not.
int fm_budget_admit(FmBudget *b, VipsImage *im) {
	if (fm_budget_exceeded(b, VIPS_IMAGE_SIZEOF_IMAGE(im))) {
		vips_error("filemill", "the image needs more memory than the job may use");
		return -1;
	}
	return 0;
}

void fm_budget_free(FmBudget *b) {
	g_free(b);
}

// As fm_eval, for a budget: the evaluation stops once the budget is killed or
// libvips' memory grew past its bound.
static void fm_eval_budget(VipsImage *im, VipsProgress *progress, FmBudget *b) {
	if (__atomic_load_n(&b->kill, __ATOMIC_ACQUIRE) || fm_budget_exceeded(b, 0))
		vips_image_set_kill(im, TRUE);
}

void fm_watch_budget(VipsImage *im, FmBudget *b) {
	vips_image_set_progress(im, TRUE);
	g_signal_connect(im, "eval", G_CALLBACK(fm_eval_budget), b);
}

void fm_unwatch_budget(VipsImage *im, FmBudget *b) {
	g_signal_handlers_disconnect_matched(im, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL, b);
}

// fm_error returns and clears libvips' error buffer; the caller frees it.
char *fm_error(void) {
	char *s = vips_error_buffer_copy();
	return s;
}

// fm_thread_done frees what libvips keeps per calling thread.
void fm_thread_done(void) {
	vips_thread_shutdown();
}

int fm_get_int(VipsImage *im, const char *name, int *out) {
	return vips_image_get_int(im, name, out);
}

int fm_has_field(VipsImage *im, const char *name) {
	return vips_image_get_typeof(im, name) != 0;
}
