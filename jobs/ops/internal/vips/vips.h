#ifndef FILEMILL_IMAGE_VIPS_H
#define FILEMILL_IMAGE_VIPS_H

#include <stdlib.h>
#include <vips/vips.h>

/* What a header read tells before any pixel is decoded. */
typedef struct {
	int width;
	int page_height;  /* height of one page or frame */
	int height;       /* height of everything loaded (all frames) */
	int n_pages;      /* pages or frames the file holds */
	int orientation;  /* EXIF orientation, 1 when absent */
	int swap;         /* orientation swaps width and height */
	int bands;
	int has_alpha;
	int has_icc;
	int cmyk;
	int interpretation;
	char loader[64];
} FmHeader;

/* Encoder settings of one save; -1 leaves an encoder default. */
typedef struct {
	int format; /* FM_JPEG ... */
	int quality;
	int lossless;
	int effort;
	int strip;
	int palette;
} FmSave;

enum { FM_JPEG = 1, FM_PNG, FM_WEBP, FM_AVIF, FM_GIF, FM_TIFF };

int fm_init(void);
void fm_configure(int threads, int cache_ops, size_t cache_mem, int cache_files);
int fm_loader_allowed(const char *path);

int fm_header_file(const char *path_opts, FmHeader *h);

int fm_thumbnail_file(const char *path_opts, VipsImage **out, int width, int height, const char *export_profile);
int fm_thumbnail_image(VipsImage *in, VipsImage **out, int width, int height);
int fm_from_memory(const void *pixels, size_t len, int width, int height, int bands, VipsImage **out);

int fm_copy_memory(VipsImage *in, VipsImage **out);
int fm_rot(VipsImage *in, VipsImage **out, int angle);
int fm_extract(VipsImage *in, VipsImage **out, int left, int top, int width, int height);
int fm_smartcrop(VipsImage *in, VipsImage **out, int width, int height, int interesting);
int fm_embed(VipsImage *in, VipsImage **out, int x, int y, int width, int height, const double *bg, int n);
int fm_flatten(VipsImage *in, VipsImage **out, const double *bg, int n);
int fm_addalpha(VipsImage *in, VipsImage **out);
int fm_to_srgb(VipsImage *in, VipsImage **out);
int fm_arrayjoin(VipsImage **in, int n, VipsImage **out);
int fm_finish_meta(VipsImage *in, VipsImage **out, int strip, double res, int page_height);
int fm_save(VipsImage *in, const char *path, const FmSave *o);
int fm_verify(const char *path_opts, FmHeader *h);
int fm_verify_webp(const void *data, size_t len, int *width, int *height);

/* A conversion's stop flag and memory bound, read on libvips' threads (fm_watch_budget).
 * mem_max bounds the growth of libvips' tracked memory (every pixel buffer, cache and
 * memory image) over mem_base, its size when the conversion started; 0 sets no bound. */
typedef struct {
	int kill;
	int over;
	size_t mem_base;
	size_t mem_max;
} FmBudget;

FmBudget *fm_budget_new(size_t mem_max);
void fm_budget_kill(FmBudget *b);
int fm_budget_over(FmBudget *b);
int fm_budget_admit(FmBudget *b, VipsImage *im);
void fm_budget_free(FmBudget *b);
void fm_watch_budget(VipsImage *im, FmBudget *b);
void fm_unwatch_budget(VipsImage *im, FmBudget *b);

void fm_set_kill(VipsImage *im);
void fm_flag_set(int *flag);
void fm_watch(VipsImage *im, int *flag);
void fm_unwatch(VipsImage *im, int *flag);
char *fm_error(void);
void fm_thread_done(void);
int fm_get_int(VipsImage *im, const char *name, int *out);
int fm_has_field(VipsImage *im, const char *name);

#endif
