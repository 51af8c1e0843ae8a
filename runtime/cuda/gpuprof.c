/*
 * cuda/gpuprof.c - autotm-gpu-profile: time the kernels of a training
 * step, and the link between host and device, on the GPU the program
 * will train on, and write a profile that autotmc reads.
 *
 *   autotm-gpu-profile KERNELS.tsv -o PROFILE.tsv [--runs N] [--warmup N] [--tf32] [--quiet]
 *
 * The input is what `autotmc profile FILE --backend gpu --export` writes:
 *
 *   # autotm gpu kernels 1
 *   <signature> TAB <d0>,<d1>,...,<d(RT_DESC_LEN-1)>
 *
 * one line per distinct kernel, its signature (compiler/cost/kdesc.h) and its
 * description (autotm/rt.h's layout); `#` lines are comments, empty lines
 * are ignored. The whole file is read and checked before CUDA is touched,
 * so that a bad file is reported at its line on any machine.
 *
 * The tool is linked with libautotmrt-cuda.a and the CUDA libraries only:
 * it runs where the training programs run. Each kernel is made by the
 * GPU backend itself (rt_cuda_backend: the same cuDNN algorithm, the same
 * CUDA kernel as in training), its arguments in device memory filled with
 * finite values, and timed on the compute stream:
 *
 *   a measurement  `warmup` untimed launches, then `runs` launches each
 *                  between two events recorded on the stream; the median
 *                  of the event times is the time, max - min the spread.
 *   convolutions   also every other algorithm cuDNN's heuristics report,
 *                  and the backend's own where they apply (gpu_conv_algos,
 *                  cuda/conv_gemm.h), each timed the same way with a
 *                  workspace of its own, so that autotmc sees what a
 *                  different choice would cost.
 *   moves          pinned host memory (the slow pool's kind) to device
 *                  memory and back, at sizes from 4 KiB to 1 GiB: blocking
 *                  (cudaMemcpy, timed on the host), asynchronous
 *                  (cudaMemcpyAsync on a stream of its own, timed with
 *                  events), and both directions at once on two streams.
 *
 * The output (one record a line, tab-separated; written to PROFILE.tsv.tmp,
 * each line flushed so that progress shows, renamed at the end):
 *
 *   # autotm gpu profile 1
 *   machine GPU-NAME CC TOTAL-BYTES DRIVER RUNTIME CUDNN tf32 on|off
 *   kernel  SIGNATURE MEDIAN-S SPREAD-S RUNS IMPLEMENTATION WORKSPACE-BYTES
 *   algo    SIGNATURE fwd|bwd_data|bwd_filter ALGORITHM MEDIAN-S WORKSPACE-BYTES NUMBER
 *           (NUMBER: the cudnnConvolution*Algo_t, or the backend's own RT_CONV_*
 *           of cuda/conv_gemm.h; what RT_D_ALGO takes, minus one)
 *   move    fast_to_slow|slow_to_fast|both sync|async BYTES MEDIAN-S
 *   # SIGNATURE ALGORITHM: why it could not run
 *
 * A convolution's algo lines follow its kernel line. Failures of the
 * system (no device, an allocation, a CUDA call) are fatal (rt_fatal):
 * the output file is then left as it was, and PROFILE.tsv.tmp holds the
 * lines measured so far.
 */
#include "gpu.h"
#include "elementwise.h"

#include <cudnn.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	MAX_RUNS = 1000000,
	ARG_ALIGN = 256,        /* each argument starts on cudaMalloc's alignment */
	FILL_FLOATS = 1 << 20,  /* the random block arguments are tiled with (4 MiB) */
};

static const char KERNELS_HEADER[] = "# autotm gpu kernels 1";
static const char PROFILE_HEADER[] = "# autotm gpu profile 1";

/* The sizes moves are timed at; the last only if the device has room for it. */
static const int64_t move_sizes[] = {INT64_C(4) << 10, INT64_C(64) << 10, INT64_C(1) << 20,
                                     INT64_C(16) << 20, INT64_C(256) << 20, INT64_C(1) << 30};
enum { NMOVE_SIZES = sizeof move_sizes / sizeof *move_sizes };

/* The command line. */
typedef struct Options {
	const char *kernels; /* KERNELS.tsv */
	const char *output;  /* -o PROFILE.tsv */
	int runs;            /* --runs: timed launches */
	int warmup;          /* --warmup: untimed launches before them */
	bool tf32;           /* --tf32: AUTOTM_TF32=1 for the backend */
	bool quiet;          /* --quiet: no progress on stderr */
} Options;

/* A kernel of the input. */
typedef struct Kernel {
	char *sig;                  /* its signature */
	int64_t desc[RT_DESC_LEN];  /* its description */
} Kernel;

/* A measurement: the median and the spread of `runs` times. */
typedef struct Timing {
	double median; /* seconds */
	double spread; /* max - min, seconds */
	int runs;      /* timed runs */
} Timing;

/* The profiler's state, once the device is open. */
typedef struct Prof {
	Options o;            /* the command line */
	void *state;          /* rt_cuda_backend's handles */
	cudaStream_t stream;  /* the compute stream (gpu_stream) */
	cudaEvent_t *start;   /* o.runs events recorded before each timed launch */
	cudaEvent_t *stop;    /* ... and after it */
	double *times;        /* o.runs times, seconds */
	float *block;         /* FILL_FLOATS random values in [-1, 1), device memory */
	FILE *out;            /* PROFILE.tsv.tmp */
	char *tmp;            /* its name */
} Prof;

/* ---- the command line ------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: %s KERNELS.tsv -o PROFILE.tsv [OPTIONS]\n"
	        "\n"
	        "Time the kernels of a training step exported by\n"
	        "`autotmc profile FILE --backend gpu --export KERNELS.tsv` on this GPU, every\n"
	        "cuDNN algorithm of its convolutions, and copies between pinned host memory and\n"
	        "device memory; write the profile to PROFILE.tsv for autotmc.\n"
	        "\n"
	        "options:\n"
	        "  -o, --output FILE    the profile to write (replaced at the end)\n"
	        "  --runs N             timed launches of each kernel and copy (default 10)\n"
	        "  --warmup N           untimed launches before them (default 3)\n"
	        "  --tf32               allow TF32 tensor cores in cuBLAS and cuDNN\n"
	        "  -q, --quiet          no progress on stderr\n"
	        "  -h, --help           show this help\n"
	        "\n"
	        "The device is the current one: choose it with CUDA_VISIBLE_DEVICES.\n"
	        "Documentation: docs/gpu.md.\n",
	        rt_prog_name());
}

static int parse_count(const char *opt, const char *s, int min, int max)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < min || v > max)
		rt_usage_error("%s expects a whole number from %d to %d, got '%s'", opt, min, max, s);
	return (int)v;
}

static void parse_options(int argc, char **argv, Options *o)
{
	enum { O_RUNS = 256, O_WARMUP, O_TF32 };
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"runs", required_argument, NULL, O_RUNS},
		{"warmup", required_argument, NULL, O_WARMUP},
		{"tf32", no_argument, NULL, O_TF32},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	*o = (Options){.runs = 10, .warmup = 3};
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
		switch (ch) {
		case 'o': o->output = optarg; break;
		case O_RUNS: o->runs = parse_count("--runs", optarg, 1, MAX_RUNS); break;
		case O_WARMUP: o->warmup = parse_count("--warmup", optarg, 0, MAX_RUNS); break;
		case O_TF32: o->tf32 = true; break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout); exit(0);
		case ':': rt_usage_error("option '%s' needs an argument", argv[optind - 1]);
		default: rt_usage_error("unrecognised option '%s'", argv[optind - 1]);
		}
	}
	if (optind == argc)
		rt_usage_error("no kernel file given");
	if (argc - optind > 1)
		rt_usage_error("one kernel file expected, got '%s' and '%s'", argv[optind], argv[optind + 1]);
	o->kernels = argv[optind];
	if (!o->output)
		rt_usage_error("no output file given (-o PROFILE.tsv)");
}

/* ---- reading the kernels ----------------------------------------------------- */

static noreturn void input_error(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static noreturn void input_error(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "%s:%d: error: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* "2 to 3 inputs and 1 output", as ops.def has them. */
static const char *arity_text(int64_t op, char *buf, size_t size)
{
	int lo, hi, nout;
	rt_op_arity(op, &lo, &hi, &nout);
	char in[48];
	if (hi < 0)
		snprintf(in, sizeof in, "at least %d inputs", lo);
	else if (lo == hi)
		snprintf(in, sizeof in, "%d input%s", lo, lo == 1 ? "" : "s");
	else
		snprintf(in, sizeof in, "%d to %d inputs", lo, hi);
	snprintf(buf, size, "%s and %d output%s", in, nout, nout == 1 ? "" : "s");
	return buf;
}

/* Check a description against ops.def, as rt_kernel does, but as an error in the file. */
static void check_desc(const char *file, int line, const int64_t *d)
{
	int64_t op = d[RT_D_OP], nin = d[RT_D_NIN], nout = d[RT_D_NOUT];
	if (op < 0 || op >= RT_NUM_OPS)
		input_error(file, line, "op %lld is not an op of ops.def (0 to %d)", (long long)op, RT_NUM_OPS - 1);
	const char *name = op_name(op);
	char b[96];
	int lo, hi, nout_def;
	rt_op_arity(op, &lo, &hi, &nout_def);
	if (nin < lo || (hi >= 0 && nin > hi) || nout != nout_def)
		input_error(file, line, "%s with %lld input%s and %lld output%s: ops.def gives it %s", name, (long long)nin,
		            nin == 1 ? "" : "s", (long long)nout, nout == 1 ? "" : "s", arity_text(op, b, sizeof b));
	if (nin + nout > RT_MAX_ARGS)
		input_error(file, line, "%s with %lld arguments: at most %d", name, (long long)(nin + nout), RT_MAX_ARGS);
	for (int i = 0; i < nin + nout; i++) {
		int64_t nd = RT_ARG_NDIM(d, i);
		if (nd < 1 || nd > RT_MAX_DIMS)
			input_error(file, line, "%s: argument %d has %lld dimensions (1 to %d)", name, i, (long long)nd,
			            RT_MAX_DIMS);
		for (int k = 0; k < nd; k++)
			if (RT_ARG_DIM(d, i, k) < 1)
				input_error(file, line, "%s: argument %d has size %lld in dimension %d", name, i,
				            (long long)RT_ARG_DIM(d, i, k), k);
	}
}

/* kernel := signature TAB number { "," number }   (RT_DESC_LEN numbers) */
static void parse_kernel(const char *file, int line, char *text, Kernel *k)
{
	char *tab = strchr(text, '\t');
	if (!tab)
		input_error(file, line, "expected a kernel signature, a tab and its description");
	if (tab == text)
		input_error(file, line, "empty kernel signature");
	*tab = '\0';
	char *s = tab + 1;
	int n = 1;
	for (const char *c = s; *c; c++)
		n += *c == ',';
	if (n != RT_DESC_LEN)
		input_error(file, line, "the description has %d numbers, not %d (RT_DESC_LEN of autotm/rt.h)", n,
		            RT_DESC_LEN);
	for (int i = 0; i < RT_DESC_LEN; i++) {
		char *comma = strchr(s, ',');
		if (comma)
			*comma = '\0';
		char *end;
		errno = 0;
		long long v = strtoll(s, &end, 10);
		if (!*s || *end || errno || !(*s == '-' || (*s >= '0' && *s <= '9')))
			input_error(file, line, "number %d of the description, '%s', is not a 64-bit integer", i + 1, s);
		k->desc[i] = v;
		s = comma ? comma + 1 : s + strlen(s);
	}
	check_desc(file, line, k->desc);
	k->sig = rt_xstrdup(text);
}

/* Read and check every kernel of the file; an error in it ends the program with status 1. */
static Kernel *read_kernels(const char *file, int *nkernels)
{
	FILE *f = fopen(file, "r");
	if (!f)
		rt_fatal("cannot open %s: %s", file, strerror(errno));
	Kernel *ks = NULL;
	int n = 0, cap = 0, line = 0;
	char *text = NULL;
	size_t size = 0;
	ssize_t len;
	while ((len = getline(&text, &size, f)) != -1) {
		line++;
		if (len > 0 && text[len - 1] == '\n')
			text[--len] = '\0';
		if (len > 0 && text[len - 1] == '\r')
			text[--len] = '\0';
		if ((size_t)len != strlen(text))
			input_error(file, line, "a NUL byte in the line");
		if (line == 1) {
			if (strcmp(text, KERNELS_HEADER) != 0)
				input_error(file, line, "expected the header '%s'", KERNELS_HEADER);
			continue;
		}
		if (text[0] == '\0' || text[0] == '#')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			Kernel *grown = rt_xmalloc(sizeof *grown * (size_t)cap);
			if (n)
				memcpy(grown, ks, sizeof *ks * (size_t)n);
			free(ks);
			ks = grown;
		}
		parse_kernel(file, line, text, &ks[n++]);
	}
	if (ferror(f))
		rt_fatal("cannot read %s: %s", file, strerror(errno));
	if (line == 0)
		input_error(file, 1, "expected the header '%s'", KERNELS_HEADER);
	free(text);
	fclose(f);
	*nkernels = n;
	return ks;
}

/* ---- the output ------------------------------------------------------------------ */

/* A line of the profile, flushed at once. */
static void emit(Prof *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(Prof *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vfprintf(p->out, fmt, ap);
	va_end(ap);
	if (r < 0 || fputc('\n', p->out) == EOF || fflush(p->out) != 0)
		rt_fatal("cannot write %s: %s", p->tmp, strerror(errno));
}

/* Progress on stderr, unless --quiet. */
static void progress(const Prof *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(const Prof *p, const char *fmt, ...)
{
	if (p->o.quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- the device ----------------------------------------------------------------- */

/* Open the device and the backend; fatal, as `no CUDA device: reason`, where there is none. */
static void open_device(Prof *p)
{
	int n = 0;
	cudaError_t err = cudaGetDeviceCount(&n);
	if (err != cudaSuccess)
		rt_fatal("no CUDA device: %s", cudaGetErrorString(err));
	if (n == 0)
		rt_fatal("no CUDA device: none found");
	/* The backend reads AUTOTM_TF32 when it opens: --tf32 decides, whatever the environment says. */
	if (setenv("AUTOTM_TF32", p->o.tf32 ? "1" : "0", 1) != 0)
		rt_fatal("cannot set AUTOTM_TF32: %s", strerror(errno));
	p->state = rt_cuda_backend.kernels.open(0, -1);
	p->stream = gpu_stream();
	p->start = rt_xmalloc(sizeof *p->start * (size_t)p->o.runs);
	p->stop = rt_xmalloc(sizeof *p->stop * (size_t)p->o.runs);
	for (int r = 0; r < p->o.runs; r++) {
		CUDA_CHECK(cudaEventCreate(&p->start[r]));
		CUDA_CHECK(cudaEventCreate(&p->stop[r]));
	}
	p->times = rt_xmalloc(sizeof *p->times * (size_t)p->o.runs);
	float *host = rt_xmalloc(sizeof *host * FILL_FLOATS);
	uint64_t x = 0x9e3779b97f4a7c15ULL; /* xorshift64*: any finite values will do */
	for (int i = 0; i < FILL_FLOATS; i++) {
		x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
		host[i] = -1.0f + 2.0f * (float)((x * 0x2545f4914f6cdd1dULL) >> 40) / (float)(1 << 24);
	}
	CUDA_CHECK(cudaMalloc((void **)&p->block, sizeof *host * FILL_FLOATS));
	CUDA_CHECK(cudaMemcpy(p->block, host, sizeof *host * FILL_FLOATS, cudaMemcpyHostToDevice));
	free(host);
}

static void close_device(Prof *p)
{
	CUDA_CHECK(cudaStreamSynchronize(p->stream));
	for (int r = 0; r < p->o.runs; r++) {
		CUDA_CHECK(cudaEventDestroy(p->start[r]));
		CUDA_CHECK(cudaEventDestroy(p->stop[r]));
	}
	CUDA_CHECK(cudaFree(p->block));
	rt_cuda_backend.kernels.close(p->state);
	free(p->start);
	free(p->stop);
	free(p->times);
}

/* machine NAME CC TOTAL-BYTES DRIVER RUNTIME CUDNN tf32 on|off */
static void emit_machine(Prof *p)
{
	int dev, driver = 0, runtime = 0;
	struct cudaDeviceProp prop;
	CUDA_CHECK(cudaGetDevice(&dev));
	CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
	CUDA_CHECK(cudaDriverGetVersion(&driver));
	CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
	for (char *c = prop.name; *c; c++)
		if (*c == '\t' || *c == '\n')
			*c = ' ';
	emit(p, "machine\t%s\t%d.%d\t%zu\t%d\t%d\t%zu\ttf32 %s", prop.name, prop.major, prop.minor, prop.totalGlobalMem,
	     driver, runtime, cudnnGetVersion(), p->o.tf32 ? "on" : "off");
	char b[32];
	progress(p, "%s: %s, compute capability %d.%d, %s; CUDA driver %d, runtime %d, cuDNN %zu; TF32 %s",
	         rt_prog_name(), prop.name, prop.major, prop.minor, fmt_bytes((int64_t)prop.totalGlobalMem, b, sizeof b),
	         driver, runtime, cudnnGetVersion(), p->o.tf32 ? "on" : "off");
}

/* ---- timing ------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median and range of the n times in t (sorted in place). */
static Timing summarise(double *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	return (Timing){.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), .spread = t[n - 1] - t[0], .runs = n};
}

/* What a timed launch runs: a kernel as the backend made it, or with another convolution algorithm. */
typedef struct Launch {
	void *kernel;             /* the backend's kernel */
	void *const *args;        /* its arguments, device memory */
	const GpuConvAlgo *algo;  /* NULL: the kernel's own algorithm */
	void *ws;                 /* algo's workspace, algo->workspace bytes */
} Launch;

/* One launch; NULL, or why another algorithm failed (the kernel's own never fails). */
static const char *launch(Prof *p, const Launch *l)
{
	if (!l->algo) {
		rt_cuda_backend.kernels.launch(p->state, l->kernel, l->args, 0);
		return NULL;
	}
	return gpu_conv_launch_algo(p->state, l->kernel, l->algo, l->ws, l->args);
}

/* Warm up, then time o.runs launches each between two events on the compute stream. */
static const char *time_launches(Prof *p, const Launch *l, Timing *t)
{
	const char *err = NULL;
	for (int w = 0; w < p->o.warmup && !err; w++)
		err = launch(p, l);
	for (int r = 0; r < p->o.runs && !err; r++) {
		CUDA_CHECK(cudaEventRecord(p->start[r], p->stream));
		err = launch(p, l);
		CUDA_CHECK(cudaEventRecord(p->stop[r], p->stream));
	}
	CUDA_CHECK(cudaStreamSynchronize(p->stream));
	if (err)
		return err;
	for (int r = 0; r < p->o.runs; r++) {
		float ms;
		CUDA_CHECK(cudaEventElapsedTime(&ms, p->start[r], p->stop[r]));
		p->times[r] = 1e-3 * ms;
	}
	*t = summarise(p->times, p->o.runs);
	return NULL;
}

/* ---- kernels ------------------------------------------------------------------------- */

static int64_t round_up(int64_t n, int64_t a)
{
	return (n + a - 1) / a * a;
}

/* Tile n floats at dst with the random block. */
static void fill_random(Prof *p, float *dst, int64_t n)
{
	for (int64_t at = 0; at < n; at += FILL_FLOATS) {
		int64_t len = n - at < FILL_FLOATS ? n - at : FILL_FLOATS;
		CUDA_CHECK(cudaMemcpyAsync(dst + at, p->block, sizeof(float) * (size_t)len, cudaMemcpyDeviceToDevice,
		                           p->stream));
	}
}

/* Tile n bf16 elements at dst with the random block, rounded (on the device: elementwise.h's gpu_cast). */
static void fill_random_bf16(Prof *p, uint16_t *dst, int64_t n)
{
	for (int64_t at = 0; at < n; at += FILL_FLOATS) {
		int64_t len = n - at < FILL_FLOATS ? n - at : FILL_FLOATS;
		cudaError_t err = gpu_cast(p->block, dst + at, len, 2u, p->stream);
		if (err != cudaSuccess)
			rt_fatal("filling a bf16 argument: %s", cudaGetErrorString(err));
	}
}

/* n floats at dst from the host. */
static void fill_from(Prof *p, float *dst, const float *src, int64_t n)
{
	CUDA_CHECK(cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)n, cudaMemcpyHostToDevice, p->stream));
	CUDA_CHECK(cudaStreamSynchronize(p->stream));
}

/*
 * Every argument, outputs included, holds finite values: random ones in
 * [-1, 1), but the labels of the loss are one-hot rows and batchnorm's
 * variance is positive, as in training.
 */
static void fill_args(Prof *p, const int64_t *d, void *const *args)
{
	int64_t op = d[RT_D_OP], nargs = d[RT_D_NIN] + d[RT_D_NOUT], range;
	int ids = rt_ids_arg(d, &range);
	for (int i = 0; i < nargs; i++) {
		int64_t n = rt_elems(RT_ARG_NDIM(d, i), &RT_ARG_DIM(d, i, 0));
		if (i == ids) { /* valid ids, as int32 */
			int32_t *h = rt_xmalloc(sizeof *h * (size_t)n);
			for (int64_t j = 0; j < n; j++)
				h[j] = (int32_t)((j * 7919) % range);
			fill_from(p, args[i], (const float *)(const void *)h, n);
			free(h);
		} else if ((op == RT_OP_SOFTMAX_XENT || op == RT_OP_SOFTMAX_XENT_BWD) && i == 1) {
			int64_t cols = RT_ARG_NDIM(d, i) > 1 ? n / RT_ARG_DIM(d, i, 0) : n;
			float *h = rt_xcalloc(sizeof *h * (size_t)n);
			for (int64_t r = 0; r < n / cols; r++)
				h[r * cols + (r * 7) % cols] = 1;
			fill_from(p, args[i], h, n);
			free(h);
		} else if ((op == RT_OP_BATCHNORM_BWD && i == 3) || (op == RT_OP_BATCHNORM_EVAL && i == 4)) {
			float *h = rt_xmalloc(sizeof *h * (size_t)n);
			for (int64_t k = 0; k < n; k++)
				h[k] = 0.5f + (float)(k % 97) / 97.0f;
			fill_from(p, args[i], h, n);
			free(h);
		} else if (rt_arg_bf16(d, i)) {
			fill_random_bf16(p, args[i], n);
		} else {
			fill_random(p, args[i], n);
		}
	}
	CUDA_CHECK(cudaStreamSynchronize(p->stream));
}

/* The other algorithms of a convolution kernel: an algo line each, or a comment why it cannot run. */
static void profile_algos(Prof *p, const Kernel *k, void *kernel, void *const *args)
{
	const int64_t *d = k->desc;
	GpuConvAlgo algos[GPU_MAX_CONV_ALGOS];
	int n = gpu_conv_algos(p->state, kernel, algos);
	const char *dir = gpu_conv_direction(kernel);
	for (int i = 0; i < n; i++) {
		const GpuConvAlgo *a = &algos[i];
		char name[64];
		snprintf(name, sizeof name, "%s%s", a->name, !a->tensor_op ? "" : d[RT_D_BF16] ? "_bf16" : "_tf32");
		if (a->status) {
			emit(p, "# %s %s: %s", k->sig, name, a->status);
			continue;
		}
		/* a nondeterministic algorithm is timed too: autotmc offers it to a placement only with
		   --nondeterministic (it knows them by their numbers) */
		void *ws = NULL;
		if (a->workspace > 0) {
			cudaError_t err = cudaMalloc(&ws, a->workspace);
			if (err != cudaSuccess) {
				char b[32];
				cudaGetLastError(); /* not a sticky error: clear it */
				emit(p, "# %s %s: cannot allocate its workspace (%s): %s", k->sig, name,
				     fmt_bytes((int64_t)a->workspace, b, sizeof b), cudaGetErrorString(err));
				continue;
			}
		}
		Timing t;
		const char *err = time_launches(p, &(Launch){kernel, args, a, ws}, &t);
		CUDA_CHECK(cudaFree(ws));
		if (err) {
			emit(p, "# %s %s: %s", k->sig, name, err);
			continue;
		}
		emit(p, "algo\t%s\t%s\t%s\t%.9g\t%zu\t%d", k->sig, dir, name, t.median, a->workspace, a->algo);
	}
}

/* kernel SIGNATURE MEDIAN SPREAD RUNS IMPLEMENTATION WORKSPACE, then its algo lines. */
static void profile_kernel(Prof *p, const Kernel *k, int index, int nkernels)
{
	const int64_t *d = k->desc;
	int nargs = (int)(d[RT_D_NIN] + d[RT_D_NOUT]);
	int64_t off[RT_MAX_ARGS], total = 0;
	for (int i = 0; i < nargs; i++) {
		off[i] = total;
		total = round_up(total + rt_arg_bytes(d, i), ARG_ALIGN);
	}
	void *kernel = rt_cuda_backend.kernels.create(p->state, index, d);
	char *base;
	cudaError_t err = cudaMalloc((void **)&base, (size_t)total);
	if (err != cudaSuccess) {
		char b[32];
		rt_fatal("%s: cannot allocate its arguments (%s) in device memory: %s", k->sig,
		         fmt_bytes(total, b, sizeof b), cudaGetErrorString(err));
	}
	void *args[RT_MAX_ARGS];
	for (int i = 0; i < nargs; i++)
		args[i] = base + off[i];
	fill_args(p, d, args);

	Timing t;
	time_launches(p, &(Launch){kernel, args, NULL, NULL}, &t);
	const char *impl = rt_cuda_backend.kernels.impl_name(kernel);
	emit(p, "kernel\t%s\t%.9g\t%.9g\t%d\t%s\t%lld", k->sig, t.median, t.spread, t.runs, impl,
	     (long long)gpu_kernel_scratch(kernel));
	progress(p, "[%d/%d] %s: %.3f ms (%s)", index + 1, nkernels, k->sig, 1e3 * t.median, impl);
	profile_algos(p, k, kernel, args);

	rt_cuda_backend.kernels.destroy(p->state, kernel);
	CUDA_CHECK(cudaFree(base));
}

/* ---- moves ----------------------------------------------------------------------------- */

/* The buffers moves copy between: two of each kind, `bytes` each. */
typedef struct MoveBuffers {
	void *host[2];         /* pinned host memory (the slow pool's kind) */
	void *dev[2];          /* device memory */
	cudaStream_t copy[2];  /* a stream per direction */
	cudaEvent_t start, done[2];
	int64_t bytes;         /* the size of each */
} MoveBuffers;

static void free_move_buffers(MoveBuffers *m)
{
	for (int i = 0; i < 2; i++) {
		if (m->host[i])
			CUDA_CHECK(cudaFreeHost(m->host[i]));
		if (m->dev[i])
			CUDA_CHECK(cudaFree(m->dev[i]));
		m->host[i] = m->dev[i] = NULL;
	}
}

/* Buffers for the largest size the device and the host have room for; returns the sizes to time. */
static int open_move_buffers(Prof *p, MoveBuffers *m)
{
	*m = (MoveBuffers){0};
	size_t free_bytes, total;
	CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
	for (int n = NMOVE_SIZES; n > 0; n--) {
		int64_t bytes = move_sizes[n - 1];
		char b[32];
		const char *why = NULL;
		cudaError_t err = cudaSuccess;
		/* Two device buffers and room to spare for the runtime's own allocations. */
		if ((int64_t)free_bytes < 2 * bytes + (INT64_C(256) << 20))
			why = "not enough free device memory";
		for (int i = 0; i < 2 && !why && err == cudaSuccess; i++) {
			err = cudaHostAlloc(&m->host[i], (size_t)bytes, cudaHostAllocPortable);
			if (err == cudaSuccess)
				err = cudaMalloc(&m->dev[i], (size_t)bytes);
		}
		if (!why && err == cudaSuccess) {
			m->bytes = bytes;
			for (int i = 0; i < 2; i++) {
				CUDA_CHECK(cudaStreamCreateWithFlags(&m->copy[i], cudaStreamNonBlocking));
				CUDA_CHECK(cudaEventCreate(&m->done[i]));
			}
			CUDA_CHECK(cudaEventCreate(&m->start));
			return n;
		}
		if (err != cudaSuccess) {
			cudaGetLastError(); /* an allocation's failure is not sticky: clear it */
			why = cudaGetErrorString(err);
		}
		free_move_buffers(m);
		emit(p, "# move: %s left out: %s", fmt_bytes(bytes, b, sizeof b), why);
		if (n == 1)
			rt_fatal("cannot allocate buffers of %s for the moves: %s", fmt_bytes(bytes, b, sizeof b), why);
	}
	RT_ICE("no move sizes");
}

static void close_move_buffers(MoveBuffers *m)
{
	for (int i = 0; i < 2; i++) {
		CUDA_CHECK(cudaStreamDestroy(m->copy[i]));
		CUDA_CHECK(cudaEventDestroy(m->done[i]));
	}
	CUDA_CHECK(cudaEventDestroy(m->start));
	free_move_buffers(m);
}

enum { TO_HOST = 0, TO_DEVICE = 1 }; /* fast_to_slow, slow_to_fast */
enum { MOVE_SYNC, MOVE_ASYNC, MOVE_BOTH };

/*
 * One copy of `bytes`, in seconds: `sync` is cudaMemcpy timed on the
 * host; `async` a cudaMemcpyAsync on the direction's stream between
 * events; `both` a copy each way at once, from an event both streams wait
 * for until the later of the two is done.
 */
static double move_once(MoveBuffers *m, int kind, int dir, int64_t bytes)
{
	size_t n = (size_t)bytes;
	if (kind == MOVE_SYNC) {
		double t0 = rt_now();
		if (dir == TO_HOST)
			CUDA_CHECK(cudaMemcpy(m->host[0], m->dev[0], n, cudaMemcpyDeviceToHost));
		else
			CUDA_CHECK(cudaMemcpy(m->dev[0], m->host[0], n, cudaMemcpyHostToDevice));
		return rt_now() - t0;
	}
	CUDA_CHECK(cudaEventRecord(m->start, m->copy[0]));
	CUDA_CHECK(cudaStreamWaitEvent(m->copy[1], m->start, 0));
	for (int d = 0; d < 2; d++) {
		if (kind == MOVE_ASYNC && d != dir)
			continue;
		if (d == TO_HOST)
			CUDA_CHECK(cudaMemcpyAsync(m->host[0], m->dev[0], n, cudaMemcpyDeviceToHost, m->copy[d]));
		else
			CUDA_CHECK(cudaMemcpyAsync(m->dev[1], m->host[1], n, cudaMemcpyHostToDevice, m->copy[d]));
		CUDA_CHECK(cudaEventRecord(m->done[d], m->copy[d]));
	}
	double t = 0;
	for (int d = 0; d < 2; d++) {
		if (kind == MOVE_ASYNC && d != dir)
			continue;
		float ms;
		CUDA_CHECK(cudaEventSynchronize(m->done[d]));
		CUDA_CHECK(cudaEventElapsedTime(&ms, m->start, m->done[d]));
		t = t > 1e-3 * ms ? t : 1e-3 * ms;
	}
	return t;
}

/* move fast_to_slow|slow_to_fast|both sync|async BYTES MEDIAN */
static void profile_moves(Prof *p)
{
	MoveBuffers m;
	int nsizes = open_move_buffers(p, &m);
	static const char *const dir_names[] = {"fast_to_slow", "slow_to_fast"};
	static const char *const kind_names[] = {"sync", "async", "async"};
	for (int s = 0; s < nsizes; s++)
		for (int kind = MOVE_SYNC; kind <= MOVE_BOTH; kind++)
			for (int dir = 0; dir < (kind == MOVE_BOTH ? 1 : 2); dir++) {
				int64_t bytes = move_sizes[s];
				for (int w = 0; w < p->o.warmup; w++)
					move_once(&m, kind, dir, bytes);
				for (int r = 0; r < p->o.runs; r++)
					p->times[r] = move_once(&m, kind, dir, bytes);
				Timing t = summarise(p->times, p->o.runs);
				const char *dname = kind == MOVE_BOTH ? "both" : dir_names[dir];
				emit(p, "move\t%s\t%s\t%lld\t%.9g", dname, kind_names[kind], (long long)bytes, t.median);
				char b[32];
				progress(p, "move %s %s %s: %.3f ms (%.2f GB/s%s)", dname, kind_names[kind],
				         fmt_bytes(bytes, b, sizeof b), 1e3 * t.median, 1e-9 * (double)bytes / t.median,
				         kind == MOVE_BOTH ? " each way" : "");
			}
	close_move_buffers(&m);
}

/* ---- the program ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	rt_set_prog_name(argv[0]);
	Prof p = {0};
	parse_options(argc, argv, &p.o);
	int nkernels;
	Kernel *ks = read_kernels(p.o.kernels, &nkernels);

	open_device(&p);
	size_t len = strlen(p.o.output) + sizeof ".tmp";
	p.tmp = rt_xmalloc(len);
	snprintf(p.tmp, len, "%s.tmp", p.o.output);
	p.out = fopen(p.tmp, "w");
	if (!p.out)
		rt_fatal("cannot create %s: %s", p.tmp, strerror(errno));
	emit(&p, "%s", PROFILE_HEADER);
	emit_machine(&p);
	for (int i = 0; i < nkernels; i++)
		profile_kernel(&p, &ks[i], i, nkernels);
	profile_moves(&p);

	if (fclose(p.out) != 0)
		rt_fatal("cannot write %s: %s", p.tmp, strerror(errno));
	if (rename(p.tmp, p.o.output) != 0)
		rt_fatal("cannot rename %s to %s: %s", p.tmp, p.o.output, strerror(errno));
	close_device(&p);
	progress(&p, "%s: %d kernels profiled into %s", rt_prog_name(), nkernels, p.o.output);
	for (int i = 0; i < nkernels; i++)
		free(ks[i].sig);
	free(ks);
	free(p.tmp);
	return 0;
}
