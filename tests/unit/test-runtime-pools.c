/*
 * test-runtime-pools.c - the runtime's pools, moves and command line.
 *
 *   - moves: blocking moves of every size class (small, non-temporal,
 *     split across threads) at unaligned addresses, and thousands of
 *     asynchronous moves in flight at once (more than the copy thread's
 *     queue holds), waited for in scrambled order; every byte checked;
 *   - pools: the slow pool lives in a fresh directory inside --slow-dir,
 *     which is gone after rt_end, after an error exit and after SIGTERM;
 *     a fast pool over the limit, an unknown NUMA node and a bad option
 *     are refused with their messages and exit statuses;
 *   - data: --save-weights then --weights gives the same weights back;
 *     --input and --labels (.npy, labels as one-hot or class indices)
 *     reach rt_data; a missing weight, a wrong shape and a bad label are
 *     errors with `autotmc interpret`'s messages.
 *
 * The cases that end the process run in a child (fork) whose stderr goes
 * to a file the parent reads.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autotm/rt.h"
#include "autotm/tensorio.h"

static int npassed, nfailed;

static void report(int ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	npassed += ok;
	nfailed += !ok;
}

/* A deterministic byte pattern. */
static unsigned char pat(uint64_t i)
{
	i = (i ^ (i >> 7)) * 0x9e3779b97f4a7c15ULL;
	return (unsigned char)(i >> 56);
}

static uint64_t rng_state = 12345;
static uint64_t rnd(uint64_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (rng_state >> 33) % n;
}

/* ---- moves ----------------------------------------------------------------- */

static void test_moves(const char *tmp)
{
	enum { MB = 1 << 20 };
	RtProgram prog = {.model = "moves", .fast_bytes = 64 * MB, .slow_bytes = 64 * MB};
	char *argv[] = {"test-moves", "--slow-dir", (char *)tmp, "--quiet", NULL};
	RtCtx *ctx = rt_begin(4, argv, &prog);
	unsigned char *fast = rt_pool_base(ctx, RT_POOL_FAST), *slow = rt_pool_base(ctx, RT_POOL_SLOW);
	report(fast && slow && ((uintptr_t)fast & ((2 << 20) - 1)) == 0 && ((uintptr_t)slow & 63) == 0,
	       "both pools allocated, the fast one 2 MiB-aligned");
	for (uint64_t i = 0; i < 64 * MB; i++)
		slow[i] = pat(i);

	/* blocking moves: small, non-temporal, and split across threads */
	const int64_t sizes[] = {0, 1, 15, 100, 4096 + 7, MB - 1, MB + 3, 3 * MB + 5, 9 * MB + 13, 30 * MB};
	int ok = 1;
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		int64_t so = 3 + (int64_t)k, d = 5 + 2 * (int64_t)k;
		memset(fast, 0xEE, (size_t)(sizes[k] + 64));
		rt_move(ctx, fast + d, slow + so, sizes[k]);
		for (int64_t i = 0; ok && i < sizes[k]; i++)
			ok = fast[d + i] == pat((uint64_t)(so + i));
		for (int64_t i = 0; ok && i < d; i++)
			ok = fast[i] == 0xEE;
		ok = ok && fast[d + sizes[k]] == 0xEE;
		if (!ok) {
			printf("#   rt_move of %lld bytes is wrong\n", (long long)sizes[k]);
			break;
		}
	}
	report(ok, "rt_move: every size, unaligned, exact bytes and nothing past them");

	/* asynchronous moves: more in flight than the queue holds */
	enum { N = 6000 };
	static int32_t handle[N];
	static int64_t src[N], dst[N], len[N];
	int64_t at = 0;
	for (int i = 0; i < N; i++) {
		len[i] = i % 500 == 0 ? (int64_t)(MB + rnd(2 * MB)) : (int64_t)rnd(4000);
		src[i] = (int64_t)rnd((uint64_t)(64 * MB - len[i]));
		dst[i] = at + (int64_t)rnd(8);
		at = dst[i] + len[i];
		if (at + 3 * MB + 8 > 64 * MB)
			at = 0; /* wrap: later moves overwrite earlier ones, in FIFO order */
	}
	memset(fast, 0, 64 * MB);
	for (int i = 0; i < N; i++)
		handle[i] = rt_move_async(ctx, fast + dst[i], slow + src[i], len[i]);
	int distinct = 1;
	for (int i = 1; i < N; i++)
		distinct = distinct && handle[i] > handle[i - 1] && handle[i] > 0;
	report(distinct, "rt_move_async: increasing positive handles");
	/* wait in scrambled order: each wait returns once that move (and all before it) is done */
	for (int i = 0; i < 200; i++)
		rt_move_wait(ctx, handle[rnd(N)]);
	rt_move_wait(ctx, handle[N - 1]);
	rt_move_wait(ctx, handle[0]);
	/* the final bytes: replay the moves in order on a shadow copy */
	unsigned char *want = calloc(64 * MB, 1);
	for (int i = 0; i < N; i++)
		memcpy(want + dst[i], slow + src[i], (size_t)len[i]);
	report(memcmp(want, fast, 64 * MB) == 0, "rt_move_async + rt_move_wait: 6000 moves in flight, every byte right");
	free(want);

	/* a wait for a move that is already done returns at once; the step drains the rest */
	rt_step_begin(ctx);
	int32_t h = rt_move_async(ctx, fast, slow, 8 * MB);
	rt_move_async(ctx, fast + 8 * MB, slow + 8 * MB, 8 * MB);
	rt_move_wait(ctx, h);
	float loss = 0.5f;
	rt_step_end(ctx, &loss);
	report(memcmp(fast, slow, 16 * MB) == 0, "rt_step_end waits for the step's moves");
	report(rt_end(ctx) == 0, "rt_end");
}

/* ---- pools, in children ------------------------------------------------------- */

/* Entries of a directory other than . and .., or -1. */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

typedef enum Action { END, RAISE_SIGTERM, CHECK_DIR } Action;

/*
 * Run rt_begin(argv) on a program with these pool sizes in a child, then
 * `action`; returns the wait status and leaves the child's stderr in errfile.
 */
static int child(char **argv, int64_t fast, int64_t slow, int64_t limit, Action action, const char *dir,
                 const char *errfile)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		if (!freopen(errfile, "w", stderr))
			_exit(99);
		setvbuf(stderr, NULL, _IONBF, 0);
		if (!freopen("/dev/null", "w", stdout))
			_exit(99);
		RtProgram prog = {.model = "pools", .fast_bytes = fast, .slow_bytes = slow, .fast_limit = limit};
		int argc = 0;
		while (argv[argc])
			argc++;
		RtCtx *ctx = rt_begin(argc, argv, &prog);
		unsigned char *s = rt_pool_base(ctx, RT_POOL_SLOW);
		if (s)
			memset(s, 1, (size_t)slow);
		if (action == CHECK_DIR && count_entries(dir) != 1)
			_exit(98); /* the pool's own directory should be there */
		if (action == RAISE_SIGTERM)
			raise(SIGTERM);
		_exit(rt_end(ctx));
	}
	int st;
	waitpid(pid, &st, 0);
	return st;
}

static int file_has(const char *path, const char *text)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	if (!strstr(buf, text)) {
		printf("#   expected '%s' in: %s", text, buf);
		return 0;
	}
	return 1;
}

/* A figure of /proc/meminfo in bytes ("MemTotal:"), or 0. */
static int64_t meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long long kib = 0;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, key, strlen(key)) == 0)
			sscanf(line + strlen(key), "%lld", &kib);
	if (f)
		fclose(f);
	return (int64_t)kib * 1024;
}

/*
 * Pools larger than the memory there is are refused before they are made,
 * with the figures, instead of meeting the OOM killer; --overcommit makes
 * them anyway (here: the allocation fails, where the kernel refuses one
 * larger than RAM and swap).
 */
static void test_memory(const char *dir, const char *err)
{
	int64_t total = meminfo("MemTotal:"), swap = meminfo("SwapTotal:");
	if (total <= 0) {
		printf("# skipped: no /proc/meminfo\n");
		return;
	}
	int64_t huge = 2 * (total + swap) + ((int64_t)1 << 30);
	char *plain[] = {"prog", NULL};
	int st = child(plain, huge, 0, 0, END, dir, err);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 1 && file_has(err, "prog: error: the pools need ") &&
	           file_has(err, " of this machine's memory (the fast pool ") && file_has(err, " is available ("),
	       "a fast pool larger than the free memory is refused before it is made");

	struct statfs fs;
	if (statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC) {
		char *shm[] = {"prog", "--slow-dir", "/dev/shm", NULL};
		st = child(shm, 1 << 20, huge, 0, END, dir, err);
		report(WIFEXITED(st) && WEXITSTATUS(st) == 1 && file_has(err, ", the slow pool ") &&
		           file_has(err, " in tmpfs), but "),
		       "a slow pool in tmpfs counts as memory");
	}

	FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
	int mode = -1;
	if (f) {
		if (fscanf(f, "%d", &mode) != 1)
			mode = -1;
		fclose(f);
	}
#ifdef __SANITIZE_ADDRESS__
	mode = -1; /* AddressSanitizer's allocator aborts on a size it cannot serve, instead of failing it */
	printf("# --overcommit not tried under AddressSanitizer\n");
#endif
	if (mode == 0 || mode == 2) { /* the kernel refuses an allocation beyond RAM and swap: safe to try */
		char *over[] = {"prog", "--overcommit", NULL};
		st = child(over, huge, 0, 0, END, dir, err);
		report(WIFEXITED(st) && WEXITSTATUS(st) == 1 && file_has(err, "prog: error: cannot allocate the fast pool"),
		       "--overcommit skips the check (and the allocation then fails)");
	}
}

static void test_pools(const char *tmp)
{
	char dir[600], err[700];
	snprintf(dir, sizeof dir, "%s/slowdir", tmp);
	snprintf(err, sizeof err, "%s/stderr.txt", tmp);
	mkdir(dir, 0700);
	enum { MB = 1 << 20 };

	char *a1[] = {"prog", "--slow-dir", dir, NULL};
	int st = child(a1, MB, 8 * MB, 0, CHECK_DIR, dir, err);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 0 && count_entries(dir) == 0,
	       "slow pool in a fresh directory inside --slow-dir, removed by rt_end");

	st = child(a1, MB, 8 * MB, 0, RAISE_SIGTERM, dir, err);
	report(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && count_entries(dir) == 0,
	       "the slow pool's directory is removed on SIGTERM");

	char *a2[] = {"prog", "--slow-dir", dir, "--weights", "/nonexistent/w.safetensors", NULL};
	st = child(a2, MB, 8 * MB, 0, END, dir, err);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 1 && count_entries(dir) == 0 &&
	           file_has(err, "prog: error: cannot open '/nonexistent/w.safetensors'"),
	       "an error exit (exit 1, message) removes the slow pool's directory");

	st = child(a1, 3 * MB, 0, 2 * MB, END, dir, err);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 1 &&
	           file_has(err, "prog: error: the fast pool (3.00 MiB) exceeds the limit (2.00 MiB)"),
	       "a fast pool over the limit is refused");

	st = child(a1, 2 * MB, 0, 2 * MB, END, dir, err);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a fast pool at the limit is accepted");

	char *a3[] = {"prog", "--slow", "numa:999", NULL};
	st = child(a3, MB, MB, 0, END, dir, err);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 1 && file_has(err, "--slow numa:999: this machine has no NUMA node 999"),
	       "--slow numa:N with no such node is refused");

	char *a4[] = {"prog", "--slow", "numa:0", NULL};
	st = child(a4, MB, 4 * MB, 0, END, dir, err);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--slow numa:0 binds the slow pool to node 0");

	char *a5[] = {"prog", "--slow", "dax-kmem", NULL};
	st = child(a5, MB, 4 * MB, 0, END, dir, err);
	report(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || (WEXITSTATUS(st) == 1 && file_has(err, "--slow dax-kmem: "))),
	       "--slow dax-kmem works or says why not");

	char *a6[] = {"prog", "--iters", "ten", NULL};
	st = child(a6, MB, 0, 0, END, dir, err);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 2 &&
	           file_has(err, "prog: --iters expects a whole number from 0 to 1000000000, got 'ten'"),
	       "a bad option value is a usage error (exit 2)");

	char *a7[] = {"prog", "--frobnicate", NULL};
	st = child(a7, MB, 0, 0, END, dir, err);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 2 && file_has(err, "unknown option '--frobnicate'"),
	       "an unknown option is a usage error (exit 2)");

	char *a8[] = {"prog", "--slow-dir", "/nonexistent/dir", NULL};
	st = child(a8, MB, MB, 0, END, dir, err);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 1 &&
	           file_has(err, "cannot create the slow pool's directory in '/nonexistent/dir'"),
	       "a --slow-dir that cannot be used is an error");

	test_memory(dir, err);
	unlink(err);
	rmdir(dir);
}

/* ---- data ------------------------------------------------------------------ */

/* Write a little-endian .npy file: descr "<f4" or "<i8", shape (a,) or (a, b). */
static void write_npy(const char *path, const char *descr, int ndim, const int64_t *shape, const void *data,
                      size_t bytes)
{
	char h[128];
	int n = ndim == 1 ? snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld,), }", descr,
	                             (long long)shape[0])
	                  : snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld, %lld), }",
	                             descr, (long long)shape[0], (long long)shape[1]);
	int total = (10 + n + 1 + 63) / 64 * 64;
	FILE *f = fopen(path, "wb");
	unsigned short hl = (unsigned short)(total - 10);
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	fwrite(&hl, 2, 1, f);
	fwrite(h, 1, (size_t)n, f);
	for (int i = 10 + n; i < total - 1; i++)
		fputc(' ', f);
	fputc('\n', f);
	fwrite(data, 1, bytes, f);
	fclose(f);
}

/*
 * A program with weight "w" [2, 3] in the fast pool at 0, state "v" [3] at
 * 64, input "x" [2, 2] and labels "y" [2, 3]; it copies the batch to 128 and
 * 192 with rt_data and writes what it sees to `dump` (12 floats).
 */
static int data_child(char **argv, const char *errfile, const char *dump)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (!freopen(errfile, "w", stderr) || !freopen("/dev/null", "w", stdout))
			_exit(99);
		setvbuf(stderr, NULL, _IONBF, 0);
		RtProgram prog = {.model = "data", .fast_bytes = 4096};
		int argc = 0;
		while (argv[argc])
			argc++;
		RtCtx *ctx = rt_begin(argc, argv, &prog);
		RtTensor w = {.name = "w", .kind = RT_TENSOR_WEIGHT, .pool = RT_POOL_FAST, .offset = 0, .ndim = 2,
		              .shape = {2, 3}, .init = 0, .lo = -1, .hi = 1};
		RtTensor v = {.name = "v", .kind = RT_TENSOR_STATE, .pool = RT_POOL_FAST, .offset = 64, .ndim = 1,
		              .shape = {3}, .init = 2, .value = 0.25};
		RtTensor x = {.name = "x", .kind = RT_TENSOR_INPUT, .ndim = 2, .shape = {2, 2}, .init = 1};
		RtTensor y = {.name = "y", .kind = RT_TENSOR_LABELS, .ndim = 2, .shape = {2, 3}, .init = 3};
		rt_tensor(ctx, &w);
		rt_tensor(ctx, &v);
		rt_tensor(ctx, &x);
		rt_tensor(ctx, &y);
		char *base = rt_pool_base(ctx, RT_POOL_FAST);
		rt_step_begin(ctx);
		rt_data(ctx, RT_DATA_INPUT, base + 128);
		rt_data(ctx, RT_DATA_LABELS, base + 192);
		float loss = 1;
		rt_step_end(ctx, &loss);
		float out[6 + 3 + 4 + 6];
		memcpy(out, base, 24);
		memcpy(out + 6, base + 64, 12);
		memcpy(out + 9, base + 128, 16);
		memcpy(out + 13, base + 192, 24);
		FILE *f = fopen(dump, "wb");
		fwrite(out, sizeof out, 1, f);
		fclose(f);
		_exit(rt_end(ctx));
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static int read_dump(const char *path, float *out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t n = fread(out, sizeof(float), 19, f);
	fclose(f);
	return n == 19;
}

static void test_data(const char *tmp)
{
	char err[700], dump[700], w1[700], x[700], y[700], yc[700], ybad[700], xbad[700];
	snprintf(err, sizeof err, "%s/stderr.txt", tmp);
	snprintf(dump, sizeof dump, "%s/dump.bin", tmp);
	snprintf(w1, sizeof w1, "%s/w.safetensors", tmp);
	snprintf(x, sizeof x, "%s/x.npy", tmp);
	snprintf(y, sizeof y, "%s/y.npy", tmp);
	snprintf(yc, sizeof yc, "%s/yc.npy", tmp);
	snprintf(ybad, sizeof ybad, "%s/ybad.npy", tmp);
	snprintf(xbad, sizeof xbad, "%s/xbad.npy", tmp);
	float a[19], b[19];

	char *s1[] = {"prog", "--seed", "5", "--save-weights", w1, NULL};
	int rc = data_child(s1, err, dump);
	int ok = rc == 0 && read_dump(dump, a);
	int init_ok = ok;
	for (int i = 0; i < 6; i++)
		init_ok = init_ok && a[i] >= -1 && a[i] <= 1;
	init_ok = init_ok && a[6] == 0.25f && a[7] == 0.25f && a[8] == 0.25f;
	init_ok = init_ok && a[13] + a[14] + a[15] == 1 && a[16] + a[17] + a[18] == 1;
	report(init_ok, "weights U(lo, hi), state constant, labels one-hot, input through rt_data");

	char *s2[] = {"prog", "--seed", "6", "--weights", w1, NULL};
	rc = data_child(s2, err, dump);
	ok = rc == 0 && read_dump(dump, b) && memcmp(a, b, 6 * sizeof(float)) == 0 && memcmp(a + 9, b + 9, 16) != 0;
	report(ok, "--save-weights then --weights (another seed): the same weights, another input");

	float xv[4] = {1, 2, 3, 4}, yv[6] = {0, 1, 0, 0, 0, 1};
	int64_t cls[2] = {2, 0};
	write_npy(x, "<f4", 2, (int64_t[]){2, 2}, xv, sizeof xv);
	write_npy(y, "<f4", 2, (int64_t[]){2, 3}, yv, sizeof yv);
	write_npy(yc, "<i8", 1, (int64_t[]){2}, cls, sizeof cls);
	char *s3[] = {"prog", "--input", x, "--labels", y, NULL};
	rc = data_child(s3, err, dump);
	ok = rc == 0 && read_dump(dump, b) && memcmp(b + 9, xv, sizeof xv) == 0 && memcmp(b + 13, yv, sizeof yv) == 0;
	report(ok, "--input and --labels (one-hot) reach rt_data");
	char *s4[] = {"prog", "--labels", yc, NULL};
	rc = data_child(s4, err, dump);
	float want[6] = {0, 0, 1, 1, 0, 0};
	ok = rc == 0 && read_dump(dump, b) && memcmp(b + 13, want, sizeof want) == 0;
	report(ok, "--labels as class indices become one-hot rows");

	int64_t badcls[2] = {1, 3};
	write_npy(ybad, "<i8", 1, (int64_t[]){2}, badcls, sizeof badcls);
	char *s5[] = {"prog", "--labels", ybad, NULL};
	rc = data_child(s5, err, dump);
	report(rc == 1 && file_has(err, "label 3 of row 1 is not a class in [0, 3)"), "a label out of range is an error");

	write_npy(xbad, "<f4", 2, (int64_t[]){2, 3}, yv, sizeof yv);
	char *s6[] = {"prog", "--input", xbad, NULL};
	rc = data_child(s6, err, dump);
	report(rc == 1 && file_has(err, "xbad.npy: the array is F32[2, 3] but input 'x' is f32[2, 2]"),
	       "an input of the wrong shape is an error naming both shapes");

	/* a weights file whose "w" has another shape, and one without "w" */
	char *s7[] = {"prog", "--weights", xbad, NULL};
	rc = data_child(s7, err, dump);
	report(rc == 1 && file_has(err, "prog: error: "), "a .npy file given as --weights is an error");
	char terr[256];
	TioOut t1 = {"w", 2, (int64_t[]){3, 2}, TIO_F32, yv}, t2 = {"u", 2, (int64_t[]){2, 3}, TIO_F32, yv};
	tio_safetensors_write(w1, &t1, 1, terr, sizeof terr);
	char *s8[] = {"prog", "--weights", w1, NULL};
	rc = data_child(s8, err, dump);
	report(rc == 1 && file_has(err, "w.safetensors: tensor 'w' has shape [3, 2] in the file but [2, 3] in the model"),
	       "a weight of the wrong shape is an error naming both shapes");
	tio_safetensors_write(w1, &t2, 1, terr, sizeof terr);
	rc = data_child(s8, err, dump);
	report(rc == 1 && file_has(err, "w.safetensors has no tensor 'w' (the model's weights are listed by 'autotmc graph')"),
	       "a missing weight is an error");
	TioOut both[2] = {{"w", 2, (int64_t[]){2, 3}, TIO_F32, yv}, t2};
	tio_safetensors_write(w1, both, 2, terr, sizeof terr);
	rc = data_child(s8, err, dump);
	report(rc == 0 && file_has(err, "warning: ") && file_has(err, "holds 1 tensors that the model does not use"),
	       "tensors the model does not use are a warning");
	unlink(dump);
	unlink(w1);
	unlink(x);
	unlink(y);
	unlink(yc);
	unlink(ybad);
	unlink(xbad);
	unlink(err);
}

int main(void)
{
	const char *t = getenv("TEST_TMPDIR");
	char tmp[512];
	snprintf(tmp, sizeof tmp, "%s/rtpools.XXXXXX", t && t[0] ? t : "/tmp");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	test_moves(tmp);
	test_pools(tmp);
	test_data(tmp);
	report(rmdir(tmp) == 0, "nothing left behind");
	printf("%d passed, %d failed\n", npassed, nfailed);
	return nfailed ? 1 : 0;
}
