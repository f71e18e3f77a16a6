/* oiio_module.h: the C entry point of pixflow_io_oiio.so, the io plugin's OpenImageIO codec as a
 * module of its own (issue 18).
 *
 * Why a module: OpenImageIO pulls about 261 shared libraries into a process (OpenCV, FFmpeg...),
 * and the dynamic linker's work on them was most of a PPM batch's start (docs/performance.md,
 * "Batches against the codec limit"). pixflow_io.so and the `pixflow` executable link none of
 * them; the io plugin dlopens this module on the first file that needs it (kernels/oiio_lazy.cpp),
 * `pixflow --version` for its format list (framework/cli/build_info.cpp).
 *
 * Where it is: <folder of pixflow_io.so>/io/pixflow_io_oiio.so (a sub-folder, so that the plugin
 * scan, which loads every .so of a plugin folder, never loads it), or the file named by the
 * environment variable PIXFLOW_IO_OIIO_MODULE.
 *
 * Conventions, as abi.h's: plain C, no exception crosses (each function catches its own and
 * returns PF_IO_OIIO_FAILED after passing the error's kind, status and message to `err`), strings
 * are the caller's for the call. The entry point returns a static table; a loader checks
 * abi_version == PIXFLOW_IO_OIIO_ABI_VERSION and struct_size >= the size it knows.
 */
#ifndef PIXFLOW_IO_OIIO_MODULE_H
#define PIXFLOW_IO_OIIO_MODULE_H

#include <pixflow/abi.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PIXFLOW_IO_OIIO_ABI_VERSION 1u
#define PIXFLOW_IO_OIIO_ENTRY "pixflow_io_oiio_entry"
#define PIXFLOW_IO_OIIO_FILE "pixflow_io_oiio.so"
#define PIXFLOW_IO_OIIO_SUBDIR "io"
#define PIXFLOW_IO_OIIO_ENV "PIXFLOW_IO_OIIO_MODULE"

enum { PF_IO_OIIO_OK = 0, PF_IO_OIIO_FAILED = 1 };

/* What an error was on the module's side, so that the plugin throws the same again. */
enum {
    PF_IO_OIIO_ERROR = 0,    /* pixflow::Error with `status` */
    PF_IO_OIIO_USER = 1,     /* pixflow::UserError with `status` */
    PF_IO_OIIO_INTERNAL = 2, /* pixflow::InternalError (the message names the place) */
    PF_IO_OIIO_OTHER = 3     /* any other std::exception */
};

/* Receives a string: an error (with its kind and status), a warning line or a reason. */
typedef struct pf_io_oiio_sink {
    void* ctx;
    void (*put)(void* ctx, int kind, int status, const char* text);
} pf_io_oiio_sink;

/* ReadOptions (kernels/codecs.hpp) in C: fail_on is 0 warning, 1 error, 2 none; warn may be null. */
typedef struct pf_io_oiio_options {
    int64_t max_pixels;
    int32_t fail_on;
    const pf_io_oiio_sink* warn;
} pf_io_oiio_options;

/* Header (kernels/codecs.hpp) in C; dtype is a pf_dtype. */
typedef struct pf_io_oiio_header {
    int32_t width, height, channels, dtype;
} pf_io_oiio_header;

/* The codec row of kernels/codec.hpp, as functions of C types. Each returns PF_IO_OIIO_OK or
 * PF_IO_OIIO_FAILED (after err->put); `yes` receives a predicate's answer (0 or 1). */
typedef struct pf_io_oiio_module {
    uint32_t abi_version; /* PIXFLOW_IO_OIIO_ABI_VERSION */
    uint32_t struct_size; /* sizeof(pf_io_oiio_module) as the module knew it */
    /* "on (2.4.x); load/save formats: .pgm .ppm .pfm .npy built in, and .tif ...": the
     * OpenImageIO line of `pixflow --version`, static storage. */
    const char* (*version_text)(void);
    int (*read_header)(const char* path, const pf_io_oiio_options* options, pf_io_oiio_header* out,
                       const pf_io_oiio_sink* err);
    int (*read)(const char* path, const pf_io_oiio_header* want, const pf_image* dst, const pf_io_oiio_options* options,
                const pf_io_oiio_sink* err);
    int (*write)(const char* path, const pf_image* src, const pf_io_oiio_sink* err);
    int (*writes)(const char* path, int* yes, const pf_io_oiio_sink* err);
    int (*read_rows)(const char* path, const pf_io_oiio_header* want, int row0, const pf_image* dst,
                     const pf_io_oiio_options* options, const pf_io_oiio_sink* err);
    int (*write_rows)(const char* path, int height, int row0, const pf_image* src, const pf_io_oiio_sink* err);
    int (*reads_rows)(const char* path, int* yes, const pf_io_oiio_sink* err);
    int (*writes_rows)(const char* path, int* yes, const pf_io_oiio_sink* err);
    /* The format's own reason to read `path` whole, through why->put (nothing when it has none). */
    int (*whole_why)(const char* path, const pf_io_oiio_sink* why, const pf_io_oiio_sink* err);
} pf_io_oiio_module;

typedef const pf_io_oiio_module* (*pf_io_oiio_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* PIXFLOW_IO_OIIO_MODULE_H */
