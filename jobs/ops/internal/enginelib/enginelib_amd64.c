// The engines' C libraries are loaded when an engine first needs them, not when the
// process starts (see doc.go). Each function filemill's C code calls is a stub here
// that jumps through a pointer; the pointer first leads to a slow path that loads the
// libraries, fills every pointer, and jumps on.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enginelib.h"

// Every function of the engines' libraries that filemill's C code calls: X(library,
// function). One missing here links its library at start again, which
// TestEngineLibrariesAreNotLinked catches.
#define ENGINE_FUNCTIONS(X) \
	X(TESS, TessBaseAPIClear) \
	X(TESS, TessBaseAPICreate) \
	X(TESS, TessBaseAPIDelete) \
	X(TESS, TessBaseAPIEnd) \
	X(TESS, TessBaseAPIGetIterator) \
	X(TESS, TessBaseAPIGetSourceYResolution) \
	X(TESS, TessBaseAPIGetUTF8Text) \
	X(TESS, TessBaseAPIInit3) \
	X(TESS, TessBaseAPIRecognize) \
	X(TESS, TessBaseAPISetImage2) \
	X(TESS, TessBaseAPISetPageSegMode) \
	X(TESS, TessBaseAPISetSourceResolution) \
	X(TESS, TessBaseAPISetVariable) \
	X(TESS, TessDeleteText) \
	X(TESS, TessMonitorCreate) \
	X(TESS, TessMonitorDelete) \
	X(TESS, TessMonitorSetCancelFunc) \
	X(TESS, TessMonitorSetCancelThis) \
	X(TESS, TessPageIteratorBaseline) \
	X(TESS, TessPageIteratorBoundingBox) \
	X(TESS, TessPageIteratorIsAtBeginningOf) \
	X(TESS, TessPageIteratorIsAtFinalElement) \
	X(TESS, TessPageIteratorOrientation) \
	X(TESS, TessResultIteratorConfidence) \
	X(TESS, TessResultIteratorDelete) \
	X(TESS, TessResultIteratorGetPageIterator) \
	X(TESS, TessResultIteratorGetUTF8Text) \
	X(TESS, TessResultIteratorNext) \
	X(TESS, TessResultIteratorWordFontAttributes) \
	X(TESS, TessVersion) \
	X(WEBP, WebPDecode) \
	X(WEBP, WebPFreeDecBuffer) \
	X(WEBP, WebPGetFeaturesInternal) \
	X(WEBP, WebPInitDecoderConfigInternal) \
	X(GLIB, g_free) \
	X(GLIB, g_log) \
	X(GLIB, g_log_set_handler) \
	X(GLIB, g_malloc) \
	X(GLIB, g_malloc0) \
	X(GOBJECT, g_object_ref) \
	X(GOBJECT, g_object_unref) \
	X(GOBJECT, g_signal_connect_data) \
	X(GOBJECT, g_signal_handlers_disconnect_matched) \
	X(GLIB, g_strfreev) \
	X(GLIB, g_strlcpy) \
	X(LEPT, l_CIDataDestroy) \
	X(LEPT, numaDestroy) \
	X(LEPT, numaGetIValue) \
	X(GOMP, omp_get_thread_limit) \
	X(GOMP, omp_set_max_active_levels) \
	X(LEPT, pixClone) \
	X(LEPT, pixConvertTo8) \
	X(LEPT, pixCreate) \
	X(LEPT, pixDestroy) \
	X(LEPT, pixEndianByteSwap) \
	X(LEPT, pixGenerateCIData) \
	X(LEPT, pixGetColormap) \
	X(LEPT, pixGetData) \
	X(LEPT, pixGetDepth) \
	X(LEPT, pixGetGrayHistogram) \
	X(LEPT, pixGetHeight) \
	X(LEPT, pixGetWidth) \
	X(LEPT, pixGetWpl) \
	X(LEPT, pixRead) \
	X(LEPT, pixReadMem) \
	X(LEPT, pixRemoveColormap) \
	X(LEPT, pixSetSpp) \
	X(LEPT, pixThresholdToBinary) \
	X(LEPT, setMsgSeverity) \
	X(VIPS, vips_addalpha) \
	X(VIPS, vips_area_unref) \
	X(VIPS, vips_array_double_new) \
	X(VIPS, vips_arrayjoin) \
	X(VIPS, vips_autorot) \
	X(VIPS, vips_avg) \
	X(VIPS, vips_bandjoin_const1) \
	X(VIPS, vips_cache_set_max) \
	X(VIPS, vips_cache_set_max_files) \
	X(VIPS, vips_cache_set_max_mem) \
	X(VIPS, vips_cast_uchar) \
	X(VIPS, vips_colourspace) \
	X(VIPS, vips_concurrency_set) \
	X(VIPS, vips_copy) \
	X(VIPS, vips_embed) \
	X(VIPS, vips_error) \
	X(VIPS, vips_error_buffer) \
	X(VIPS, vips_error_buffer_copy) \
	X(VIPS, vips_error_clear) \
	X(VIPS, vips_extract_area) \
	X(VIPS, vips_extract_band) \
	X(VIPS, vips_flatten) \
	X(VIPS, vips_foreign_find_load) \
	X(VIPS, vips_format_sizeof_unsafe) \
	X(VIPS, vips_gifload) \
	X(VIPS, vips_gifsave) \
	X(VIPS, vips_heifsave) \
	X(VIPS, vips_image_copy_memory) \
	X(VIPS, vips_image_get_fields) \
	X(VIPS, vips_image_get_int) \
	X(VIPS, vips_image_get_n_pages) \
	X(VIPS, vips_image_get_orientation) \
	X(VIPS, vips_image_get_orientation_swap) \
	X(VIPS, vips_image_get_page_height) \
	X(VIPS, vips_image_get_string) \
	X(VIPS, vips_image_get_typeof) \
	X(VIPS, vips_image_guess_interpretation) \
	X(VIPS, vips_image_hasalpha) \
	X(VIPS, vips_image_new_from_file) \
	X(VIPS, vips_image_new_from_memory) \
	X(VIPS, vips_image_new_from_memory_copy) \
	X(VIPS, vips_image_remove) \
	X(VIPS, vips_image_set_int) \
	X(VIPS, vips_image_set_kill) \
	X(VIPS, vips_image_set_progress) \
	X(VIPS, vips_image_write_to_memory) \
	X(VIPS, vips_init) \
	X(VIPS, vips_isprefix) \
	X(VIPS, vips_jpegload) \
	X(VIPS, vips_jpegload_buffer) \
	X(VIPS, vips_jpegsave) \
	X(VIPS, vips_jpegsave_buffer) \
	X(VIPS, vips_operation_block_set) \
	X(VIPS, vips_pngload) \
	X(VIPS, vips_pngsave) \
	X(VIPS, vips_pngsave_buffer) \
	X(VIPS, vips_resize) \
	X(VIPS, vips_rot) \
	X(VIPS, vips_smartcrop) \
	X(VIPS, vips_thread_shutdown) \
	X(VIPS, vips_thumbnail) \
	X(VIPS, vips_thumbnail_image) \
	X(VIPS, vips_tiffload) \
	X(VIPS, vips_tiffsave) \
	X(VIPS, vips_tracked_get_mem) \
	X(VIPS, vips_version) \
	X(VIPS, vips_webpload) \
	X(VIPS, vips_webpsave) \
	X(VIPS, vips_webpsave_buffer)

enum { VIPS, GOBJECT, GLIB, WEBP, GOMP, TESS, LEPT, NLIBS };

// Sonames, in order of preference: ABI versions, stable for years (Debian 12 ships the
// first of each; leptonica renamed its library with 1.83).
static const char *const library_names[NLIBS][3] = {
	[VIPS] = {"libvips.so.42"},
	[GOBJECT] = {"libgobject-2.0.so.0"},
	[GLIB] = {"libglib-2.0.so.0"},
	[WEBP] = {"libwebp.so.7"},
	[GOMP] = {"libgomp.so.1"},
	[TESS] = {"libtesseract.so.5"},
	[LEPT] = {"liblept.so.5", "libleptonica.so.6"},
};

// The stub of name jumps through fm_engine_<name>, which first holds the address of
// the stub's slow path: it saves the argument registers (r11 carries the pointer's
// address), loads, restores them and jumps through the pointer, now the library's.
// The stubs are hidden: the libraries, once loaded, call their own functions.
#define STUB(lib, name) \
	__asm__(".text\n.globl " #name "\n.hidden " #name "\n.type " #name ", @function\n.p2align 4\n" \
		#name ":\n\tjmp *fm_engine_" #name "(%rip)\n" \
		"fm_slow_" #name ":\n\tlea fm_engine_" #name "(%rip), %r11\n\tjmp fm_engine_slow\n" \
		".size " #name ", .-" #name "\n" \
		".data\n.p2align 3\n.globl fm_engine_" #name "\n.hidden fm_engine_" #name "\n" \
		"fm_engine_" #name ":\n\t.quad fm_slow_" #name "\n.text\n");
ENGINE_FUNCTIONS(STUB)

// At entry the stack is 8 past a 16-byte boundary (the caller's return address); eight
// pushes keep it so, and 136 bytes (eight XMM registers and 8 of padding) align it for
// the call. rax holds a variadic call's count of vector registers.
__asm__(".text\n.p2align 4\n.hidden fm_engine_slow\nfm_engine_slow:\n"
	"\tpush %r11\n\tpush %rdi\n\tpush %rsi\n\tpush %rdx\n\tpush %rcx\n\tpush %r8\n\tpush %r9\n\tpush %rax\n"
	"\tsub $136, %rsp\n"
	"\tmovdqu %xmm0, 0(%rsp)\n\tmovdqu %xmm1, 16(%rsp)\n\tmovdqu %xmm2, 32(%rsp)\n\tmovdqu %xmm3, 48(%rsp)\n"
	"\tmovdqu %xmm4, 64(%rsp)\n\tmovdqu %xmm5, 80(%rsp)\n\tmovdqu %xmm6, 96(%rsp)\n\tmovdqu %xmm7, 112(%rsp)\n"
	"\tcall fm_engine_load_or_die\n"
	"\tmovdqu 0(%rsp), %xmm0\n\tmovdqu 16(%rsp), %xmm1\n\tmovdqu 32(%rsp), %xmm2\n\tmovdqu 48(%rsp), %xmm3\n"
	"\tmovdqu 64(%rsp), %xmm4\n\tmovdqu 80(%rsp), %xmm5\n\tmovdqu 96(%rsp), %xmm6\n\tmovdqu 112(%rsp), %xmm7\n"
	"\tadd $136, %rsp\n"
	"\tpop %rax\n\tpop %r9\n\tpop %r8\n\tpop %rcx\n\tpop %rdx\n\tpop %rsi\n\tpop %rdi\n\tpop %r11\n"
	"\tjmp *(%r11)\n");

#define DECLARE(lib, name) extern void *fm_engine_##name __attribute__((visibility("hidden")));
ENGINE_FUNCTIONS(DECLARE)

struct engine_function {
	int lib;
	const char *name;
	void **ptr;
};

#define ENTRY(lib, name) {lib, #name, &fm_engine_##name},
static const struct engine_function engine_functions[] = {ENGINE_FUNCTIONS(ENTRY)};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[512];

static void load(void) {
	void *handles[NLIBS] = {0};
	for (int i = 0; i < NLIBS; i++) {
		for (int k = 0; k < 3 && library_names[i][k] && !handles[i]; k++) {
			handles[i] = dlopen(library_names[i][k], RTLD_NOW | RTLD_GLOBAL);
		}
		if (!handles[i]) {
			snprintf(load_error, sizeof load_error, "%s", dlerror());
			return;
		}
	}
	void *found[sizeof engine_functions / sizeof engine_functions[0]];
	for (size_t i = 0; i < sizeof engine_functions / sizeof engine_functions[0]; i++) {
		found[i] = dlsym(handles[engine_functions[i].lib], engine_functions[i].name);
		if (!found[i]) {
			snprintf(load_error, sizeof load_error, "%s: %s not found", library_names[engine_functions[i].lib][0],
				engine_functions[i].name);
			return;
		}
	}
	// Only once all are found: a stub either leads to its function or to the slow path,
	// which reports the failure.
	for (size_t i = 0; i < sizeof engine_functions / sizeof engine_functions[0]; i++) {
		__atomic_store_n(engine_functions[i].ptr, found[i], __ATOMIC_RELEASE);
	}
}

const char *fm_engine_load(void) {
	pthread_once(&load_once, load);
	return load_error[0] ? load_error : NULL;
}

// Reached only through a stub called before fm_engine_load succeeded.
__attribute__((visibility("hidden"))) void fm_engine_load_or_die(void) {
	const char *err = fm_engine_load();
	if (err) {
		fprintf(stderr, "filemill: the engines' libraries cannot be loaded: %s\n", err);
		abort();
	}
}
