/*
 * autotm/tensorio.h - reading and writing tensors: safetensors and .npy.
 *
 * safetensors (https://huggingface.co/docs/safetensors): 8 bytes of
 * little-endian header length N, N bytes of JSON mapping each tensor name
 * to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to
 * the end of the header), then the data, row-major, little-endian. We
 * write F32 and read F32 or F64. A new or regular file is written to a
 * temporary file in the same directory, synced, and renamed over the
 * destination (keeping its mode), so a failure never leaves a
 * half-written file; a link is followed, and a device or FIFO (such as
 * /dev/null) is written straight through.
 *
 * .npy (NumPy format 1.0-3.0): inputs and labels. Little-endian f4/f8
 * arrays in C order; labels may also be integer class indices (i4/i8).
 *
 * Every function returns 0 on success and -1 with a message in err.
 */
#ifndef AUTOTM_TENSORIO_H
#define AUTOTM_TENSORIO_H

#include <stddef.h>
#include <stdint.h>

enum { TIO_MAX_DIMS = 8 };

typedef enum TioDtype { TIO_F32, TIO_F64, TIO_I32, TIO_I64 } TioDtype;

typedef struct TioTensor {
	char *name;                    /* tensor name */
	TioDtype dtype;                /* element type in the file */
	int ndim;                      /* dimensions */
	int64_t shape[TIO_MAX_DIMS];   /* sizes */
	const unsigned char *data;     /* first byte, inside the mapped file */
	int64_t nelems;                /* number of elements */
} TioTensor;

/* A string of a safetensors header's __metadata__. */
typedef struct TioMeta {
	char *key, *value;
} TioMeta;

typedef struct TioFile {
	char *path;          /* as opened */
	unsigned char *map;  /* the whole file, mapped */
	size_t size;         /* its size */
	TioTensor *t;        /* tensors in file order */
	int n;               /* number of tensors */
	TioMeta *meta;       /* safetensors: the header's __metadata__ */
	int nmeta;           /* its entries */
} TioFile;

/* One tensor to write: ndim sizes in shape, data as float or double. */
typedef struct TioOut {
	const char *name;
	int ndim;
	const int64_t *shape;
	TioDtype src;        /* TIO_F32: data is float *, TIO_F64: double * */
	const void *data;
} TioOut;

int tio_safetensors_open(const char *path, TioFile **out, char *err, size_t errlen);
int tio_npy_open(const char *path, TioFile **out, char *err, size_t errlen);
void tio_close(TioFile *f);
const TioTensor *tio_find(const TioFile *f, const char *name);
const char *tio_dtype_name(TioDtype d);
/* Bytes of one element of type d. */
int tio_dtype_size(TioDtype d);

/* Convert the n elements of t into doubles. */
void tio_to_f64(const TioTensor *t, double *dst);
/* Element i of t as a double. */
double tio_f64_at(const TioTensor *t, int64_t i);
/* Element i of an integer tensor (I32 or I64), exactly. */
int64_t tio_int_at(const TioTensor *t, int64_t i);

/* The value of a safetensors file's __metadata__ key, or NULL. */
const char *tio_meta(const TioFile *f, const char *key);

/*
 * The header of a .npy file (format 1.0) of little-endian float32 in C
 * order with the given shape, padded so that the data starts at a
 * multiple of 64 bytes: written to buf, its length returned (at most
 * TIO_NPY_HEADER_MAX). The data follows it.
 */
enum { TIO_NPY_HEADER_MAX = 256 };
size_t tio_npy_header(char *buf, int ndim, const int64_t *shape);

/* Write n tensors as F32 safetensors, atomically. */
int tio_safetensors_write(const char *path, const TioOut *t, int n, char *err, size_t errlen);
/* The same with nmeta strings in the header's __metadata__. */
int tio_safetensors_write_meta(const char *path, const TioOut *t, int n, const TioMeta *meta, int nmeta, char *err,
                               size_t errlen);

#endif
