/*
 * tensorio.c - safetensors and .npy files (see autotm/tensorio.h).
 *
 * Readers open only regular files (without blocking: a FIFO is refused,
 * not waited on), map them, and check everything the header claims
 * against the file before anything is read: a truncated or oversized
 * file, a header that is not one JSON object, a key given twice at any
 * level, a NUL in a name, a shape whose size overflows 64 bits, a tensor
 * whose byte range is outside the data or does not match its shape, data
 * that overlaps another tensor's or belongs to none, are all errors
 * naming the file and the tensor. The safetensors header is parsed with
 * cJSON. A .npy element type that is not read is named in words ('>f4'
 * is big-endian float32).
 *
 * The writer goes through base/outfile.h: a regular or new file is
 * replaced atomically, a device or FIFO written straight through.
 */
#include "autotm/tensorio.h"
#include "format.h"  /* base/ */
#include "outfile.h" /* base/ */

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_HEADER = 100 << 20 };

const char *tio_dtype_name(TioDtype d)
{
	switch (d) {
	case TIO_F32: return "F32";
	case TIO_F64: return "F64";
	case TIO_I32: return "I32";
	case TIO_I64: return "I64";
	}
	return "?";
}

int tio_dtype_size(TioDtype d)
{
	return d == TIO_F32 || d == TIO_I32 ? 4 : 8;
}

void tio_close(TioFile *f)
{
	if (!f)
		return;
	if (f->map && f->size)
		munmap(f->map, f->size);
	for (int i = 0; i < f->n; i++)
		free(f->t[i].name);
	free(f->t);
	for (int i = 0; i < f->nmeta; i++) {
		free(f->meta[i].key);
		free(f->meta[i].value);
	}
	free(f->meta);
	free(f->path);
	free(f);
}

/*
 * Map a whole file read-only. It is opened without blocking (a FIFO with
 * no writer would otherwise wait forever in open) and refused unless it
 * is a regular file.
 */
static TioFile *map_file(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		fmt_fail(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		fmt_fail(err, errlen, "cannot read '%s': %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		fmt_fail(err, errlen, "'%s' is not a regular file (it is %s)", path, fmt_file_kind(st.st_mode));
		close(fd);
		return NULL;
	}
	TioFile *f = calloc(1, sizeof *f);
	if (!f || !(f->path = strdup(path))) {
		free(f);
		close(fd);
		fmt_fail(err, errlen, "out of memory");
		return NULL;
	}
	f->size = (size_t)st.st_size;
	if (f->size) {
		f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (f->map == MAP_FAILED) {
			f->map = NULL;
			f->size = 0;
			fmt_fail(err, errlen, "cannot map '%s': %s", path, strerror(errno));
			close(fd);
			tio_close(f);
			return NULL;
		}
	}
	close(fd);
	return f;
}

static int add_tensor(TioFile *f, const char *name, char *err, size_t errlen)
{
	TioTensor *t = realloc(f->t, sizeof(TioTensor) * (size_t)(f->n + 1));
	if (!t)
		return fmt_fail(err, errlen, "out of memory");
	f->t = t;
	memset(&f->t[f->n], 0, sizeof(TioTensor));
	if (!(f->t[f->n].name = strdup(name)))
		return fmt_fail(err, errlen, "out of memory");
	f->n++;
	return 0;
}

/* Element count of a shape, or -1 if it overflows 64 bits. */
static int64_t count(const int64_t *shape, int ndim)
{
	int64_t n = 1;
	for (int i = 0; i < ndim; i++)
		if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i], &n))
			return -1;
	return n;
}

/* The bytes of n elements of type d; false when they do not fit 64 bits. */
static bool elem_bytes(int64_t n, TioDtype d, uint64_t *bytes)
{
	return n >= 0 && !__builtin_mul_overflow((uint64_t)n, (uint64_t)tio_dtype_size(d), bytes);
}

/* "(2, 3)", a shape as NumPy writes it, for messages. */
static const char *shape_tuple(const TioTensor *t, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "(");
	for (int i = 0; i < t->ndim && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%lld%s", i ? " " : "", (long long)t->shape[i],
		                      i + 1 < t->ndim || t->ndim == 1 ? "," : "");
	if (n < size)
		snprintf(buf + n, size - n, ")");
	return buf;
}

/* A JSON number that is a whole number, small enough for a size or an offset in a file. */
static bool whole(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 9.0e15 &&
	       v->valuedouble == (double)(int64_t)v->valuedouble;
}

static int parse_entry(TioFile *f, const cJSON *e, const unsigned char *data, uint64_t datalen, char *err,
                       size_t errlen)
{
	const char *p = f->path, *name = e->string;
	if (!cJSON_IsObject(e))
		return fmt_fail(err, errlen, "%s: header entry '%s' is not an object", p, name);
	const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
	const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
	if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
		return fmt_fail(err, errlen, "%s: tensor '%s' lacks dtype, shape or data_offsets", p, name);
	if (add_tensor(f, name, err, errlen))
		return -1;
	TioTensor *t = &f->t[f->n - 1];
	if (strcmp(dt->valuestring, "F32") == 0)
		t->dtype = TIO_F32;
	else if (strcmp(dt->valuestring, "F64") == 0)
		t->dtype = TIO_F64;
	else
		return fmt_fail(err, errlen, "%s: tensor '%s' has dtype %s; only F32 and F64 are supported", p, name,
		                dt->valuestring);
	t->ndim = cJSON_GetArraySize(sh);
	if (t->ndim > TIO_MAX_DIMS)
		return fmt_fail(err, errlen, "%s: tensor '%s' has %d dimensions (at most %d)", p, name, t->ndim,
		                TIO_MAX_DIMS);
	for (int i = 0; i < t->ndim; i++) {
		const cJSON *d = cJSON_GetArrayItem(sh, i);
		if (!whole(d))
			return fmt_fail(err, errlen, "%s: tensor '%s' has an invalid shape", p, name);
		t->shape[i] = (int64_t)d->valuedouble;
	}
	const cJSON *ob = cJSON_GetArrayItem(off, 0), *oe = cJSON_GetArrayItem(off, 1);
	if (!whole(ob) || !whole(oe) || oe->valuedouble < ob->valuedouble)
		return fmt_fail(err, errlen, "%s: tensor '%s' has invalid data offsets (two whole numbers, begin <= end)", p,
		                name);
	uint64_t b = (uint64_t)ob->valuedouble, en = (uint64_t)oe->valuedouble, bytes;
	if (en > datalen)
		return fmt_fail(err, errlen, "%s: tensor '%s' has data offsets [%" PRIu64 ", %" PRIu64 ") outside the %" PRIu64
		                " bytes of data (is the file truncated?)", p, name, b, en, datalen);
	t->nelems = count(t->shape, t->ndim);
	if (!elem_bytes(t->nelems, t->dtype, &bytes) || bytes != en - b) {
		char shape[TIO_MAX_DIMS * 24];
		return fmt_fail(err, errlen, "%s: tensor '%s' has %" PRIu64 " bytes of data, which does not match its shape %s",
		                p, name, en - b, shape_tuple(t, shape, sizeof shape));
	}
	t->data = data + b;
	return 0;
}

static int cmp_data(const void *a, const void *b)
{
	const TioTensor *x = *(const TioTensor *const *)a, *y = *(const TioTensor *const *)b;
	return (x->data > y->data) - (x->data < y->data);
}

/* The offset just past a tensor's bytes, relative to the data's first byte. */
static uint64_t data_end(const TioTensor *t, const unsigned char *data)
{
	return (uint64_t)(t->data - data) + (uint64_t)t->nelems * (uint64_t)tio_dtype_size(t->dtype);
}

/*
 * The tensors' bytes must tile the data, as the format's reference reader
 * requires: sorted by where they begin, each begins where the one before
 * ends (the first at 0), and the last ends at the end of the file. So no
 * byte belongs to two tensors, and none to no tensor. Empty tensors own no
 * bytes and take no part.
 */
static int check_layout(const TioFile *f, const unsigned char *data, uint64_t datalen, char *err, size_t errlen)
{
	const TioTensor **by_start = malloc(sizeof *by_start * (size_t)(f->n ? f->n : 1));
	if (!by_start)
		return fmt_fail(err, errlen, "out of memory");
	int n = 0;
	for (int i = 0; i < f->n; i++)
		if (f->t[i].nelems > 0) /* an empty tensor has no bytes to place */
			by_start[n++] = &f->t[i];
	qsort(by_start, (size_t)n, sizeof *by_start, cmp_data);
	const TioTensor *prev = NULL; /* the tensor whose data ends where the next must begin */
	uint64_t at = 0;
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		const TioTensor *t = by_start[i];
		uint64_t begin = (uint64_t)(t->data - data);
		if (begin < at)
			rc = fmt_fail(err, errlen, "%s: the data of tensor '%s' (bytes [%" PRIu64 ", %" PRIu64
			              ")) overlaps that of tensor '%s' (bytes [%" PRIu64 ", %" PRIu64 "))", f->path, t->name,
			              begin, data_end(t, data), prev->name, (uint64_t)(prev->data - data), data_end(prev, data));
		else if (begin > at)
			rc = fmt_fail(err, errlen, "%s: bytes [%" PRIu64 ", %" PRIu64 ") of the data belong to no tensor (%s%s%s"
			              "tensor '%s' begins at %" PRIu64 ")", f->path, at, begin, prev ? "'" : "",
			              prev ? prev->name : "", prev ? "' ends there, " : "", t->name, begin);
		prev = t;
		at = data_end(t, data);
	}
	if (!rc && at != datalen)
		rc = fmt_fail(err, errlen, "%s: the last %" PRIu64 " bytes of the file belong to no tensor (the data of the "
		              "tensors ends at byte %" PRIu64 " of %" PRIu64 ")", f->path, datalen - at, at, datalen);
	free(by_start);
	return rc;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/*
 * Refuse a JSON object that names a key twice (cJSON keeps both; which
 * one a reader takes is anyone's guess). `what` names the object.
 */
static int check_unique(const TioFile *f, const cJSON *obj, const char *what, char *err, size_t errlen)
{
	int n = cJSON_GetArraySize(obj);
	if (n < 2)
		return 0;
	const cJSON **keys = malloc(sizeof *keys * (size_t)n);
	if (!keys)
		return fmt_fail(err, errlen, "out of memory");
	int k = 0;
	for (const cJSON *e = obj->child; e && k < n; e = e->next)
		keys[k++] = e;
	qsort(keys, (size_t)k, sizeof *keys, cmp_key);
	int rc = 0;
	for (int i = 1; i < k && !rc; i++)
		if (strcmp(keys[i - 1]->string, keys[i]->string) == 0)
			rc = fmt_fail(err, errlen, "%s: '%s' appears twice in %s", f->path, keys[i]->string, what);
	free(keys);
	return rc;
}

/* The header's __metadata__: an object of strings (the format allows nothing else). */
static int parse_metadata(TioFile *f, const cJSON *m, char *err, size_t errlen)
{
	if (!cJSON_IsObject(m))
		return fmt_fail(err, errlen, "%s: __metadata__ is not an object of strings", f->path);
	if (check_unique(f, m, "the header's __metadata__", err, errlen))
		return -1;
	int n = cJSON_GetArraySize(m);
	f->meta = calloc((size_t)n + 1, sizeof *f->meta);
	if (!f->meta)
		return fmt_fail(err, errlen, "out of memory");
	for (const cJSON *e = m->child; e; e = e->next) {
		if (!cJSON_IsString(e))
			return fmt_fail(err, errlen, "%s: __metadata__ entry '%s' is not a string", f->path, e->string);
		char *k = strdup(e->string), *v = strdup(e->valuestring);
		if (!k || !v) {
			free(k);
			free(v);
			return fmt_fail(err, errlen, "out of memory");
		}
		f->meta[f->nmeta].key = k;
		f->meta[f->nmeta++].value = v;
	}
	return 0;
}

const char *tio_meta(const TioFile *f, const char *key)
{
	for (int i = 0; i < f->nmeta; i++)
		if (strcmp(f->meta[i].key, key) == 0)
			return f->meta[i].value;
	return NULL;
}

/*
 * Whether the JSON text holds a string with the escape \u0000: a NUL
 * inside a name would cut it short in C (the format's reference reader
 * refuses such a name too).
 */
static bool has_nul_escape(const char *s, size_t n)
{
	bool in_string = false;
	for (size_t i = 0; i < n; i++) {
		if (!in_string) {
			in_string = s[i] == '"';
		} else if (s[i] == '"') {
			in_string = false;
		} else if (s[i] == '\\' && i + 1 < n) {
			if (s[i + 1] == 'u' && i + 5 < n && memcmp(s + i + 2, "0000", 4) == 0)
				return true;
			i++; /* the escaped character */
		}
	}
	return false;
}

/*
 * The header's JSON: one object and, after it, nothing but the spaces
 * that pad it; no NUL byte, raw or escaped. NULL with a message otherwise.
 */
static cJSON *parse_header(const TioFile *f, uint64_t hlen, char *err, size_t errlen)
{
	const char *text = (const char *)f->map + 8, *end = NULL;
	if (memchr(text, '\0', (size_t)hlen) || has_nul_escape(text, (size_t)hlen)) {
		fmt_fail(err, errlen, "%s: the header holds a NUL character (in a name or a value); not a safetensors file",
		         f->path);
		return NULL;
	}
	cJSON *h = cJSON_ParseWithLengthOpts(text, (size_t)hlen, &end, false);
	if (!h || !cJSON_IsObject(h)) {
		cJSON_Delete(h);
		fmt_fail(err, errlen, "%s: the header is not a JSON object; not a safetensors file", f->path);
		return NULL;
	}
	size_t used = (size_t)(end - text);
	while (used < hlen && strchr(" \t\r\n", text[used]))
		used++;
	if (used < hlen) {
		cJSON_Delete(h);
		fmt_fail(err, errlen, "%s: %" PRIu64 " bytes follow the header's JSON object inside the header; not a "
		         "safetensors file, or a damaged one", f->path, hlen - (uint64_t)used);
		return NULL;
	}
	return h;
}

/* The header's entries: the tensors, and the metadata. */
static int parse_entries(TioFile *f, const cJSON *h, const unsigned char *data, uint64_t datalen, char *err,
                         size_t errlen)
{
	if (check_unique(f, h, "the header", err, errlen))
		return -1;
	for (const cJSON *e = h->child; e; e = e->next) {
		if (strcmp(e->string, "__metadata__") == 0) {
			if (parse_metadata(f, e, err, errlen))
				return -1;
			continue;
		}
		char what[300];
		snprintf(what, sizeof what, "the header's entry for tensor '%.200s'", e->string);
		if ((cJSON_IsObject(e) && check_unique(f, e, what, err, errlen)) ||
		    parse_entry(f, e, data, datalen, err, errlen))
			return -1;
	}
	return 0;
}

int tio_safetensors_open(const char *path, TioFile **out, char *err, size_t errlen)
{
	*out = NULL;
	TioFile *f = map_file(path, err, errlen);
	if (!f)
		return -1;
	if (f->size < 8) {
		size_t size = f->size;
		tio_close(f);
		return fmt_fail(err, errlen, "%s: truncated: %zu bytes, too short for a safetensors header", path, size);
	}
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | f->map[i];
	if (hlen > MAX_HEADER || hlen > f->size - 8) {
		uint64_t size = f->size;
		tio_close(f);
		return fmt_fail(err, errlen, "%s: header length %" PRIu64 " exceeds the file's %" PRIu64
		                " bytes (truncated, or not a safetensors file)", path, hlen, size);
	}
	cJSON *h = parse_header(f, hlen, err, errlen);
	const unsigned char *data = f->map + 8 + hlen;
	uint64_t datalen = f->size - 8 - hlen;
	int rc = !h || parse_entries(f, h, data, datalen, err, errlen) || check_layout(f, data, datalen, err, errlen);
	cJSON_Delete(h);
	if (rc) {
		tio_close(f);
		return -1;
	}
	*out = f;
	return 0;
}

const TioTensor *tio_find(const TioFile *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

double tio_f64_at(const TioTensor *t, int64_t i)
{
	const unsigned char *p = t->data + (size_t)i * (size_t)tio_dtype_size(t->dtype);
	switch (t->dtype) {
	case TIO_F32: { float v; memcpy(&v, p, 4); return v; }
	case TIO_F64: { double v; memcpy(&v, p, 8); return v; }
	case TIO_I32: { int32_t v; memcpy(&v, p, 4); return v; }
	case TIO_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
	}
	return 0;
}

int64_t tio_int_at(const TioTensor *t, int64_t i)
{
	const unsigned char *p = t->data + (size_t)i * (size_t)tio_dtype_size(t->dtype);
	if (t->dtype == TIO_I32) {
		int32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	int64_t v;
	memcpy(&v, p, 8);
	return v;
}

void tio_to_f64(const TioTensor *t, double *dst)
{
	for (int64_t i = 0; i < t->nelems; i++)
		dst[i] = tio_f64_at(t, i);
}

/* ---- .npy ---------------------------------------------------------- */

/* Find 'key': in a NumPy header dict and return the text after the colon. */
static const char *npy_field(const char *h, const char *key)
{
	char pat[32];
	snprintf(pat, sizeof pat, "'%s'", key);
	const char *p = strstr(h, pat);
	if (!p)
		return NULL;
	p = strchr(p + strlen(pat), ':');
	if (!p)
		return NULL;
	p++;
	while (*p == ' ')
		p++;
	return p;
}

/* What .npy element types are read, for messages. */
static const char NPY_TYPES[] = "use little-endian float32, float64, int32 or int64";

/*
 * The type string of a header's 'descr' (the text after its colon), such
 * as <f4, into code; false when it is not a quoted string (a structured
 * type is a list) or too long.
 */
static bool npy_type_code(const char *descr, char *code, size_t size)
{
	char quote = descr[0];
	if (quote != '\'' && quote != '"')
		return false;
	const char *end = strchr(descr + 1, quote);
	if (!end || (size_t)(end - descr - 1) >= size)
		return false;
	memcpy(code, descr + 1, (size_t)(end - descr - 1));
	code[end - descr - 1] = '\0';
	return true;
}

/*
 * A NumPy type string in words: '>f4' is "big-endian float32", '|u1'
 * "uint8", '<c16' "little-endian complex128", '<U8' "Unicode strings".
 */
static const char *npy_type_words(const char *code, char *buf, size_t size)
{
	const char *order = code[0] == '<' ? "little-endian " : code[0] == '>' ? "big-endian " : "";
	const char *p = code[0] && strchr("<>|=", code[0]) ? code + 1 : code;
	long bytes = p[0] ? strtol(p + 1, NULL, 10) : 0;
	if (bytes > 64)
		bytes = 0; /* no element type is larger: not a size */
	const char *kind = NULL;
	switch (p[0]) {
	case 'f': kind = "float"; break;
	case 'i': kind = "int"; break;
	case 'u': kind = "uint"; break;
	case 'c': kind = "complex"; break;
	case 'b': snprintf(buf, size, "bool"); return buf;
	case 'U': snprintf(buf, size, "Unicode strings"); return buf;
	case 'S': snprintf(buf, size, "byte strings"); return buf;
	case 'O': snprintf(buf, size, "Python objects"); return buf;
	case 'M': snprintf(buf, size, "dates and times"); return buf;
	case 'm': snprintf(buf, size, "time differences"); return buf;
	case 'V': snprintf(buf, size, "raw bytes"); return buf;
	default: break;
	}
	if (kind && bytes > 0)
		snprintf(buf, size, "%s%s%ld", bytes > 1 ? order : "", kind, 8 * bytes);
	else
		snprintf(buf, size, "an unknown type");
	return buf;
}

int tio_npy_open(const char *path, TioFile **out, char *err, size_t errlen)
{
	*out = NULL;
	TioFile *f = map_file(path, err, errlen);
	if (!f)
		return -1;
	const unsigned char *m = f->map;
	if (f->size < 10 || memcmp(m, "\x93NUMPY", 6) != 0 || m[6] < 1 || m[6] > 3) {
		tio_close(f);
		return fmt_fail(err, errlen, "%s: not a .npy file (bad magic)", path);
	}
	size_t hlen, hstart;
	if (m[6] == 1) {
		hlen = (size_t)m[8] | (size_t)m[9] << 8;
		hstart = 10;
	} else {
		if (f->size < 12) {
			tio_close(f);
			return fmt_fail(err, errlen, "%s: truncated .npy header", path);
		}
		hlen = (size_t)m[8] | (size_t)m[9] << 8 | (size_t)m[10] << 16 | (size_t)m[11] << 24;
		hstart = 12;
	}
	if (hlen > f->size - hstart || hlen > 65536) {
		tio_close(f);
		return fmt_fail(err, errlen, "%s: truncated .npy header", path);
	}
	char *h = strndup((const char *)m + hstart, hlen);
	if (!h) {
		tio_close(f);
		return fmt_fail(err, errlen, "out of memory");
	}
	int rc = -1;
	const char *descr = npy_field(h, "descr"), *fo = npy_field(h, "fortran_order"), *sh = npy_field(h, "shape");
	TioDtype dt = TIO_F32;
	if (!descr || !fo || !sh) {
		fmt_fail(err, errlen, "%s: .npy header lacks descr, fortran_order or shape", path);
		goto out;
	}
	if (descr[0] == '[') {
		int len = 0; /* the list, up to its closing bracket */
		for (int depth = 0; descr[len] && (len == 0 || depth > 0); len++)
			depth += (descr[len] == '[' || descr[len] == '(') - (descr[len] == ']' || descr[len] == ')');
		fmt_fail(err, errlen, "%s: element type %.*s%s is a structured type, which is not supported; %s", path,
		         len > 60 ? 60 : len, descr, len > 60 ? "..." : "", NPY_TYPES);
		goto out;
	}
	char code[32];
	if (!npy_type_code(descr, code, sizeof code)) {
		fmt_fail(err, errlen, "%s: cannot read the element type (descr) of the .npy header", path);
		goto out;
	}
	if (strcmp(code, "<f4") == 0)
		dt = TIO_F32;
	else if (strcmp(code, "<f8") == 0)
		dt = TIO_F64;
	else if (strcmp(code, "<i4") == 0)
		dt = TIO_I32;
	else if (strcmp(code, "<i8") == 0)
		dt = TIO_I64;
	else {
		char words[64];
		fmt_fail(err, errlen, "%s: element type '%s' (%s) is not supported; %s", path, code,
		         npy_type_words(code, words, sizeof words), NPY_TYPES);
		goto out;
	}
	if (strncmp(fo, "False", 5) != 0) {
		fmt_fail(err, errlen, "%s: Fortran-ordered arrays are not supported (save a C-contiguous array)", path);
		goto out;
	}
	if (add_tensor(f, "", err, errlen))
		goto out;
	TioTensor *t = &f->t[0];
	t->dtype = dt;
	const char *p = sh;
	if (*p++ != '(') {
		fmt_fail(err, errlen, "%s: cannot read the shape", path);
		goto out;
	}
	for (;;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ')')
			break;
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || v < 0 || errno || t->ndim == TIO_MAX_DIMS) {
			fmt_fail(err, errlen, "%s: cannot read the shape", path);
			goto out;
		}
		t->shape[t->ndim++] = v;
		p = end;
	}
	t->nelems = count(t->shape, t->ndim);
	uint64_t need, have = f->size - hstart - hlen;
	if (!elem_bytes(t->nelems, dt, &need)) {
		char shape[TIO_MAX_DIMS * 24];
		double approx = (double)tio_dtype_size(dt);
		for (int i = 0; i < t->ndim; i++)
			approx *= (double)t->shape[i];
		fmt_fail(err, errlen, "%s: the data is %" PRIu64 " bytes but its shape %s needs %.3g, more than a 64-bit "
		         "size holds (corrupt)", path, have, shape_tuple(t, shape, sizeof shape), approx);
		goto out;
	}
	if (need != have) {
		fmt_fail(err, errlen, "%s: the data is %" PRIu64 " bytes but its shape needs %" PRIu64 " (truncated or corrupt)",
		         path, have, need);
		goto out;
	}
	t->data = m + hstart + hlen;
	rc = 0;
out:
	free(h);
	if (rc)
		tio_close(f);
	else
		*out = f;
	return rc;
}

/* ---- writing ------------------------------------------------------- */

size_t tio_npy_header(char *buf, int ndim, const int64_t *shape)
{
	char dict[TIO_NPY_HEADER_MAX];
	size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
	for (int i = 0; i < ndim; i++)
		n += (size_t)snprintf(dict + n, sizeof dict - n, "%lld,%s", (long long)shape[i], i + 1 < ndim ? " " : "");
	n += (size_t)snprintf(dict + n, sizeof dict - n, "), }");
	size_t total = (10 + n + 1 + 63) / 64 * 64; /* magic, version, length, dict, newline: padded */
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (char)((total - 10) & 0xff);
	buf[9] = (char)((total - 10) >> 8);
	memcpy(buf + 10, dict, n);
	memset(buf + 10 + n, ' ', total - 10 - n - 1);
	buf[total - 1] = '\n';
	return total;
}

int tio_safetensors_write(const char *path, const TioOut *t, int n, char *err, size_t errlen)
{
	return tio_safetensors_write_meta(path, t, n, NULL, 0, err, errlen);
}

int tio_safetensors_write_meta(const char *path, const TioOut *t, int n, const TioMeta *meta, int nmeta, char *err,
                               size_t errlen)
{
	cJSON *h = cJSON_CreateObject();
	if (h && nmeta > 0) {
		cJSON *m = cJSON_AddObjectToObject(h, "__metadata__");
		for (int i = 0; m && i < nmeta; i++)
			if (!cJSON_AddStringToObject(m, meta[i].key, meta[i].value))
				m = NULL;
		if (!m) {
			cJSON_Delete(h);
			return fmt_fail(err, errlen, "out of memory");
		}
	}
	uint64_t off = 0;
	for (int i = 0; h && i < n; i++) {
		cJSON *e = cJSON_AddObjectToObject(h, t[i].name);
		cJSON *shape = e ? cJSON_AddArrayToObject(e, "shape") : NULL;
		cJSON *offs = e ? cJSON_AddArrayToObject(e, "data_offsets") : NULL;
		if (!cJSON_AddStringToObject(e, "dtype", "F32") || !shape || !offs) {
			cJSON_Delete(h);
			return fmt_fail(err, errlen, "out of memory");
		}
		int64_t nel = count(t[i].shape, t[i].ndim);
		for (int d = 0; d < t[i].ndim; d++)
			cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
		cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
		off += (uint64_t)nel * 4;
		cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
	}
	char *js = h ? cJSON_PrintUnformatted(h) : NULL;
	cJSON_Delete(h);
	if (!js)
		return fmt_fail(err, errlen, "out of memory");
	/* Pad the header with spaces to 8 bytes, as the reference writer does. */
	size_t hl = strlen(js), pad = (8 - hl % 8) % 8;

	OutFile o;
	if (!outfile_open(&o, path, err, errlen)) {
		free(js);
		return -1;
	}
	unsigned char len8[8];
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)((uint64_t)(hl + pad) >> (8 * i));
	bool ok = fwrite(len8, 1, 8, o.f) == 8 && fwrite(js, 1, hl, o.f) == hl;
	for (size_t i = 0; ok && i < pad; i++)
		ok = fputc(' ', o.f) != EOF;
	for (int i = 0; ok && i < n; i++) {
		int64_t nel = count(t[i].shape, t[i].ndim);
		float buf[1024];
		for (int64_t k = 0; ok && k < nel; k += 1024) {
			int64_t m = nel - k < 1024 ? nel - k : 1024;
			for (int64_t j = 0; j < m; j++)
				buf[j] = t[i].src == TIO_F64 ? (float)((const double *)t[i].data)[k + j]
				                             : ((const float *)t[i].data)[k + j];
			ok = fwrite(buf, 4, (size_t)m, o.f) == (size_t)m;
		}
	}
	free(js);
	if (!ok) {
		fmt_fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
		outfile_abort(&o);
		return -1;
	}
	return outfile_commit(&o, err, errlen) ? 0 : -1;
}
