/*
 * test-profile.c - kernel profiling, the profile database and hw files.
 *
 *   - hw files: the shipped ones parse with their figures; every malformed
 *     file is an error "file:line: error: ..." naming the problem;
 *   - signatures: identical layers share one, different shapes do not,
 *     and the signature reads like the kernel;
 *   - the database: random bytes, a foreign SQLite database and a newer
 *     schema are refused with a message naming the file; a fresh one is
 *     created and opened again;
 *   - the runtime's profiler: kernel and move timings are positive and
 *     finite, in every IO configuration;
 *   - a small model profiled into a fresh database: afterwards nothing is
 *     missing, the cost model from the profile gives every configuration
 *     a time no smaller than all-fast and moves that grow with their size,
 *     and the hw cost model adds exactly the roofline penalty.
 *
 * For tests/unit/test-profile.sh: `test-profile --hw FILE` reads a hw file
 * and prints it, or the error (exit 1).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autodiff.h"
#include "elaborate.h"
#include "hwmodel.h"
#include "kdesc.h"
#include "place.h"
#include "profile.h"
#include "schedule.h"
#include "tests/testlib.h"

static const char *tmpdir;

static const char *tmp_path(const char *name)
{
	static char buf[8][1024];
	static int i;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof buf[i], "%s/%s", tmpdir, name);
	return buf[i];
}

static void write_bytes(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* ---- hw files ------------------------------------------------------------------ */

static void test_hw_shipped(void)
{
	const char *src = getenv("TOP_SRCDIR") ? getenv("TOP_SRCDIR") : ".";
	static const struct {
		const char *file;
		double slow_read, slow_write;
	} files[] = {
		{"optane-6dimm.hw", 39e9, 14e9},
		{"cxl-x8.hw", 26e9, 25e9},
		{"h100-pcie5.hw", 52e9, 52e9},
		{"h200-pcie5.hw", 55e9, 55e9},
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char path[1024], err[512];
		snprintf(path, sizeof path, "%s/hw/%s", src, files[i].file);
		HwModel hw;
		bool ok = hw_load(path, &hw, err, sizeof err);
		test_check(ok && hw.slow.read_bw == files[i].slow_read && hw.slow.write_bw == files[i].slow_write &&
		                   hw.fast.read_bw > hw.slow.read_bw && hw.name[0],
		           "hw/%s parses: slow tier %.0f / %.0f GB/s%s%s", files[i].file, hw.slow.read_bw / 1e9,
		           hw.slow.write_bw / 1e9, ok ? "" : ": ", ok ? "" : err);
	}
	HwModel hw;
	char err[512];
	test_check(hw_parse("t.hw",
	                    "[fast]\nread_bandwidth=1 TB/s\nwrite_bandwidth = 2 GiB/s\nlatency = 3 us\n"
	                    "capacity = 4 KiB\n[slow]\nread_bandwidth = 5 MB/s # five\nwrite_bandwidth = 6000000 B/s\n"
	                    "[link]\nasync_fraction = 0.25\n",
	                    &hw, err, sizeof err) &&
	                   hw.fast.read_bw == 1e12 && hw.fast.write_bw == 2.0 * (1 << 30) &&
	                   fabs(hw.fast.latency - 3e-6) < 1e-15 && hw.fast.capacity == 4096 && hw.slow.read_bw == 5e6 &&
	                   hw.slow.write_bw == 6e6 && hw.async_fraction == 0.25,
	           "units convert: TB/s GiB/s MB/s B/s us KiB, comments, fractions");
}

static void test_hw_errors(void)
{
	static const char ok_tiers[] = "[fast]\nread_bandwidth = 1 GB/s\nwrite_bandwidth = 1 GB/s\n"
	                               "[slow]\nread_bandwidth = 1 GB/s\nwrite_bandwidth = 1 GB/s\n";
	static const struct {
		const char *text;
		const char *expect;
	} cases[] = {
		{"[fast]\nread_bandwidth = 10\n", "bad.hw:2: error: read_bandwidth needs a unit (B/s, KB/s"},
		{"[fast]\nread_bandwidth = 1e-300 GB/s\n",
		 "bad.hw:2: error: read_bandwidth = 1e-300 GB/s is outside what autotmc models (1 MB/s to 1000 TB/s)"},
		{"[fast]\nread_bandwidth = 6 B/s\n", "bad.hw:2: error: read_bandwidth = 6 B/s is outside what autotmc models"},
		{"[fast]\nlatency = 2 s\n", "bad.hw:2: error: latency = 2 s is outside what autotmc models (0 to 1 s)"},
		{"[fast]\nread_bandwidth = 10 ns\n", "bad.hw:2: error: read_bandwidth expects a bandwidth"},
		{"[fast]\nread_bandwidth = 10 GB/sec\n", "bad.hw:2: error: read_bandwidth: unknown unit 'GB/sec'"},
		{"[fast]\nread_bandwidth = fast\n", "bad.hw:2: error: read_bandwidth expects a bandwidth"},
		{"[fast]\nread_bandwidth = 0 GB/s\n", "bad.hw:2: error: read_bandwidth must be positive"},
		{"[fast]\nlatency = 5 GB/s\n", "bad.hw:2: error: latency expects a time"},
		{"[fast]\ncapacity = 5 ns\n", "bad.hw:2: error: capacity expects a size"},
		{"# a comment\n\n[fast]\nspeed = 10 GB/s\n", "bad.hw:4: error: unknown key 'speed' in [fast]"},
		{"read_bandwidth = 10 GB/s\n", "bad.hw:1: error: unknown key 'read_bandwidth' before any section"},
		{"[medium]\n", "bad.hw:1: error: unknown section [medium]"},
		{"[fast\n", "bad.hw:1: error: a section header is"},
		{"[fast]\n[fast]\n", "bad.hw:2: error: a second [fast] section (the first is on line 1)"},
		{"[fast]\nread_bandwidth = 1 GB/s\nread_bandwidth = 2 GB/s\n", "bad.hw:3: error: read_bandwidth is given twice"},
		{"[fast]\nthis is not a key\n", "bad.hw:2: error: expected 'key = value' or a [section]"},
		{"[fast]\nread_bandwidth =\n", "bad.hw:2: error: read_bandwidth has no value"},
		{"[link]\nasync_fraction = 2\n", "bad.hw:2: error: async_fraction must be in (0, 1]"},
		{"[fast]\nread_bandwidth = 1 GB/s\nwrite_bandwidth = 1 GB/s\n", "bad.hw: error: no [slow] section"},
		{"[fast]\nread_bandwidth = 1 GB/s\nwrite_bandwidth = 1 GB/s\n\n[slow]\nread_bandwidth = 1 GB/s\n",
		 "bad.hw:5: error: [slow] has no write_bandwidth"},
		{"", "bad.hw: error: no [fast] section"},
		{"[compute]\nflops.conv3d = 1 TFLOP/s\n",
		 "bad.hw:2: error: flops.conv3d: no op is called 'conv3d' (the names of ops.def, as in a profile)"},
		{"[compute]\nbandwidth.relu = 2\n", "bad.hw:2: error: bandwidth.relu must be in (0, 1]"},
		{"[compute]\nflops.relu = 0.5\n", "bad.hw:2: error: flops.relu needs a unit (FLOP/s, GFLOP/s, TFLOP/s)"},
		{"[compute]\nbandwidth.relu = 0.5\nbandwidth.relu = 0.4\n",
		 "bad.hw:3: error: bandwidth.relu is given twice in [compute]"},
		{"[fast]\nflops.relu = 1 TFLOP/s\n", "bad.hw:2: error: unknown key 'flops.relu' in [fast]"},
		{"[ranks]\nlatency = 10 us\n[fast]\nread_bandwidth = 1 GB/s\nwrite_bandwidth = 1 GB/s\n[slow]\n"
		 "read_bandwidth = 1 GB/s\nwrite_bandwidth = 1 GB/s\n", "bad.hw:1: error: [ranks] has no bandwidth"},
		{"[ranks]\nbandwidth = 5\n", "bad.hw:2: error: bandwidth needs a unit (B/s, KB/s"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		HwModel hw;
		char err[512] = "";
		bool ok = hw_parse("bad.hw", cases[i].text, &hw, err, sizeof err);
		test_check(!ok && strncmp(err, cases[i].expect, strlen(cases[i].expect)) == 0, "hw error: %s",
		           ok ? "(accepted)" : err);
	}
	HwModel hw;
	char err[512];
	test_check(hw_parse("good.hw", ok_tiers, &hw, err, sizeof err), "a minimal hw file is accepted");
	char ranks[512];
	snprintf(ranks, sizeof ranks, "%s[ranks]\nbandwidth = 40 GB/s\nlatency = 10 us\n", ok_tiers);
	bool parsed = hw_parse("ranks.hw", ranks, &hw, err, sizeof err);
	test_check(parsed && hw.ranks_bw == 40e9 && fabs(hw.ranks_latency - 10e-6) < 1e-15,
	           "[ranks]: the link between data-parallel ranks (%g B/s, %g s)", parsed ? hw.ranks_bw : 0.0,
	           parsed ? hw.ranks_latency : 0.0);
	/* a binary file read from disk */
	const char *bin = tmp_path("binary.hw");
	write_bytes(bin, "[fast]\n\0\x01\x02", 10);
	test_check(!hw_load(bin, &hw, err, sizeof err) && strstr(err, "NUL byte"), "a binary hw file: %s", err);
	test_check(!hw_load(tmp_path("missing.hw"), &hw, err, sizeof err) && strstr(err, "cannot read the hw file"),
	           "a missing hw file: %s", err);
}

/* ---- a model ------------------------------------------------------------------------- */

static const char model_text[] =
	"model tiny(batch = 4)\n"
	"network = chain {\n"
	"    conv(3x3, 3 => 8, pad = 1) relu\n"
	"    conv(3x3, 8 => 8, pad = 1) relu\n"
	"    conv(3x3, 8 => 8, pad = 1) relu\n"
	"    flatten dense(8 * 8 * 8 => 10)\n"
	"}\n"
	"input x : f32[batch, 3, 8, 8]\n"
	"labels y : onehot[batch, 10]\n"
	"loss = crossentropy(network(x), y)\n"
	"optimizer = sgd(lr = 0.1)\n";

static bool compile_model(Arena *a, Graph **g, Schedule **s)
{
	ElabOptions eo = {.main_text = model_text, .main_len = strlen(model_text)};
	*g = elaborate("tiny.net", &eo, a);
	if (!*g)
		return false;
	autodiff(*g, NULL);
	*s = schedule_graph(*g, a);
	return true;
}

static void test_signatures(const Graph *g, const Schedule *s, Arena *a)
{
	ProfileSigs *sigs = profile_signatures(g, s, a);
	test_check(sigs->n > 0 && sigs->n < s->n, "%d nodes share %d signatures (identical layers once)", s->n,
	           sigs->n);
	bool mapped = true;
	for (int i = 0; i < s->n; i++) {
		const Node *n = s->order[i];
		int64_t d[RT_DESC_LEN];
		char t[KDESC_SIGNATURE_MAX];
		node_describe(n, d);
		d[RT_D_SEED] = 0;
		mapped = mapped && sigs->of_node[n->id] >= 0 &&
		         strcmp(sigs->v[sigs->of_node[n->id]]->text, kdesc_signature(d, t, sizeof t)) == 0;
	}
	test_check(mapped, "every node maps to the signature of its own description");
	const char *conv = NULL;
	for (int i = 0; i < sigs->n && !conv; i++)
		if (strncmp(sigs->v[i]->text, "conv2d ", 7) == 0)
			conv = sigs->v[i]->text;
	const char *want = "conv2d [4,3,8,8] [8,3,3,3] [8] -> [4,8,8,8] kh=3 kw=3 sh=1 sw=1 ph=1 pw=1 groups=1";
	test_check(conv && strcmp(conv, want) == 0, "the first convolution's signature: %s", conv ? conv : "(none)");
}

/*
 * [compute]'s per-op lines: with flops.conv2d at half the FLOP rate, each
 * (compute-bound) forward convolution takes twice as long; with
 * bandwidth.relu at a quarter, each (memory-bound) ReLU four times; every
 * other kernel as before.
 */
static void test_hw_per_op(const Graph *g, Arena *a)
{
	static const char base[] = "[fast]\nread_bandwidth = 1 TB/s\nwrite_bandwidth = 1 TB/s\n"
	                           "[slow]\nread_bandwidth = 1 GB/s\nwrite_bandwidth = 1 GB/s\n"
	                           "[compute]\nflops = 1 TFLOP/s\n";
	char text[512], err[512] = "";
	snprintf(text, sizeof text, "%sflops.conv2d = 0.5 TFLOP/s\nbandwidth.relu = 0.25\n", base);
	HwModel h0, h1;
	if (!test_check(hw_parse("roof.hw", base, &h0, err, sizeof err) && hw_parse("op.hw", text, &h1, err, sizeof err),
	                "hw files with per-op lines parse%s%s", err[0] ? ": " : "", err))
		return;
	test_check(h1.op_flops[OP_CONV2D] == 0.5e12 && h1.op_bandwidth[OP_RELU] == 0.25 && h1.op_flops[OP_RELU] == 0,
	           "flops.conv2d and bandwidth.relu are read into their ops");
	double *t0 = hw_roofline_times(&h0, g, a), *t1 = hw_roofline_times(&h1, g, a);
	int conv = 0, relu = 0, other = 0, bad = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		const Node *n = g->nodes.v[i];
		double r = t1[n->id] / t0[n->id];
		double want = n->op == OP_CONV2D ? 2 : n->op == OP_RELU ? 4 : 1;
		conv += n->op == OP_CONV2D;
		relu += n->op == OP_RELU;
		other += n->op != OP_CONV2D && n->op != OP_RELU;
		if (!(t0[n->id] > 0) || fabs(r - want) > 1e-9) {
			bad++;
			printf("  %s (%s): %.6g s, then %.6g s (x%.4g, expected x%g)\n", n->name, op_info[n->op].name,
			       t0[n->id], t1[n->id], r, want);
		}
	}
	test_check(bad == 0 && conv == 3 && relu == 3 && other > 0,
	           "per-op rates: %d convolutions x2, %d ReLUs x4, %d other kernels unchanged (%d wrong)", conv, relu,
	           other, bad);
}

/*
 * [compute]'s bf16 lines: a node with a bf16 input takes its op's
 * flops_bf16.OP, else its op's float32 flops.OP, else flops_bf16; a
 * float32 node never takes a bf16 figure.
 */
static void test_hw_bf16(void)
{
	static const char text[] = "[fast]\nread_bandwidth = 1 TB/s\nwrite_bandwidth = 1 TB/s\n"
	                           "[slow]\nread_bandwidth = 1 GB/s\nwrite_bandwidth = 1 GB/s\n"
	                           "[compute]\nflops = 1 TFLOP/s\nflops.conv2d = 0.5 TFLOP/s\n"
	                           "flops.batchnorm = 2 TFLOP/s\nflops_bf16 = 8 TFLOP/s\nflops_bf16.conv2d = 4 TFLOP/s\n";
	char err[512] = "";
	HwModel hw;
	if (!test_check(hw_parse("bf16.hw", text, &hw, err, sizeof err), "a hw file with bf16 rates parses%s%s",
	                err[0] ? ": " : "", err))
		return;
	Tensor f32 = {.dtype = DT_F32}, bf16 = {.dtype = DT_BF16};
	Tensor *in32[2] = {&f32, &f32}, *in16[2] = {&f32, &bf16};
	static const struct {
		Op op;
		bool bf16;
		double want; /* TFLOP/s */
	} cases[] = {
		{OP_CONV2D, false, 0.5}, {OP_CONV2D, true, 4}, {OP_BATCHNORM, true, 2}, {OP_RELU, true, 8}, {OP_RELU, false, 1},
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		Node n = {.op = cases[i].op, .in = cases[i].bf16 ? in16 : in32, .nin = 2};
		double r = hw_flop_rate(&hw, &n);
		if (r != cases[i].want * 1e12) {
			bad++;
			printf("  %s with %s inputs: %g TFLOP/s, expected %g\n", op_info[cases[i].op].name,
			       cases[i].bf16 ? "bf16" : "float32", r / 1e12, cases[i].want);
		}
	}
	test_check(bad == 0, "bf16 rates: flops_bf16.conv2d, then batchnorm's float32 figure, then flops_bf16; "
	                     "float32 nodes as before (%d wrong)", bad);
	bool ok = hw_parse("bad.hw", "[fast]\nread_bandwidth = 1 TB/s\nwrite_bandwidth = 1 TB/s\n[slow]\n"
	                   "read_bandwidth = 1 GB/s\nwrite_bandwidth = 1 GB/s\n[compute]\nflops = 1 TFLOP/s\n"
	                   "flops_bf16.conv3d = 1 TFLOP/s\n", &hw, err, sizeof err);
	test_check(!ok && strstr(err, "bad.hw:9: error: flops_bf16.conv3d: no op is called 'conv3d'"), "%s", err);
}

/* ---- the database ---------------------------------------------------------------------- */

static void test_db_errors(void)
{
	char err[1024];
	const char *junk = tmp_path("junk.db");
	unsigned char bytes[4096];
	for (size_t i = 0; i < sizeof bytes; i++)
		bytes[i] = (unsigned char)(i * 2654435761u >> 13);
	write_bytes(junk, bytes, sizeof bytes);
	ProfileDb *db = pdb_open(junk, true, err, sizeof err);
	test_check(!db && strstr(err, junk) && strstr(err, "damaged or not an SQLite database"), "random bytes: %s", err);

	const char *foreign = tmp_path("foreign.db");
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
	         "python3 -c \"import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
	         "c.execute('create table songs(title text)'); c.commit()\" '%s'",
	         foreign);
	if (system(cmd) == 0) {
		db = pdb_open(foreign, true, err, sizeof err);
		test_check(!db && strstr(err, "an SQLite database but not an autotm profile database"),
		           "a foreign database: %s", err);
	} else {
		test_check(true, "# skipped the foreign database (no python3 sqlite3)");
	}

	const char *fresh = tmp_path("fresh.db");
	db = pdb_open(fresh, false, err, sizeof err);
	test_check(!db && strstr(err, "no profile database at"), "a missing database is not created when reading: %s",
	           err);
	db = pdb_open(fresh, true, err, sizeof err);
	test_check(db != NULL, "a fresh database is created%s%s", db ? "" : ": ", db ? "" : err);
	pdb_close(db);
	db = pdb_open(fresh, false, err, sizeof err);
	test_check(db != NULL, "and opened again%s%s", db ? "" : ": ", db ? "" : err);
	pdb_close(db);
	snprintf(cmd, sizeof cmd,
	         "python3 -c \"import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
	         "c.execute(\\\"update meta set value='9' where key='version'\\\"); c.commit()\" '%s'",
	         fresh);
	if (system(cmd) == 0) {
		db = pdb_open(fresh, true, err, sizeof err);
		test_check(!db && strstr(err, "schema version 9") && strstr(err, "newer autotmc"), "a newer schema: %s",
		           err);
	}

	/* schema version 1 (kernels without their scratch) is upgraded in place when it may be written */
	const char *old = tmp_path("v1.db");
	db = pdb_open(old, true, err, sizeof err);
	pdb_close(db);
	snprintf(cmd, sizeof cmd,
	         "python3 -c \"import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
	         "c.execute('alter table kernels drop column scratch'); "
	         "c.execute(\\\"insert into kernels (machine, backend, threads, signature, op, nargs) values "
	         "('m', 'cpu/2', 1, 'relu [4]', 'relu', 2)\\\"); "
	         "c.execute(\\\"update meta set value='1' where key='version'\\\"); c.commit()\" '%s'",
	         old);
	if (db && system(cmd) == 0) {
		db = pdb_open(old, false, err, sizeof err);
		test_check(db != NULL, "a version 1 database opened for reading is upgraded%s%s", db ? "" : ": ",
		           db ? "" : err);
		pdb_close(db);
		snprintf(cmd, sizeof cmd,
		         "python3 -c \"import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
		         "v = c.execute(\\\"select value from meta where key='version'\\\").fetchone()[0]; "
		         "n = c.execute('select count(*) from kernels where scratch is null').fetchone()[0]; "
		         "sys.exit(0 if (v, n) == ('2', 1) else 1)\" '%s'",
		         old);
		test_check(system(cmd) == 0, "to version 2, keeping its kernel with an unknown scratch");
	} else {
		test_check(true, "# skipped the version 1 database (no python3 sqlite3 with drop column)");
	}
}

/* ---- the runtime's profiler ------------------------------------------------------------- */

static void test_profiler(const Graph *g, const Schedule *s, Arena *a)
{
	RtProfilerOptions o = {.threads = 1, .slow_dir = tmpdir, .warmup = 1, .runs = 3, .max_seconds = 0.5};
	RtProfiler *p = rt_profiler_new(&o);
	ProfileSigs *sigs = profile_signatures(g, s, a);
	bool ok = true;
	int measured = 0;
	for (int i = 0; i < sigs->n; i++) {
		RtProfKernel *k = rt_profiler_kernel(p, sigs->v[i]->desc);
		uint32_t all = (uint32_t)((1u << sigs->v[i]->nargs) - 1);
		for (uint32_t c = 0; c <= all; c += all ? all : 1) {
			RtTiming t = rt_profiler_time(p, k, c);
			ok = ok && t.runs == 3 && t.median > 0 && isfinite(t.median) && t.spread >= 0;
			measured++;
			if (!all)
				break;
		}
		rt_profiler_kernel_free(p, k);
	}
	test_check(ok, "%d kernel timings (all-fast and all-slow of every signature) are positive", measured);
	RtTiming small = rt_profiler_move(p, 64 << 10, true, false), big = rt_profiler_move(p, 16 << 20, false, true);
	test_check(small.median > 0 && big.median > small.median, "moves: 64 KiB sync %.1f us, 16 MiB async %.1f us",
	           1e6 * small.median, 1e6 * big.median);
	rt_profiler_free(p);
}

/* ---- profile, then the cost models ------------------------------------------------------- */

static void test_profile_and_models(const Graph *g, const Schedule *s, Arena *a)
{
	char err[1024];
	ProfileOptions po = {.db = tmp_path("tiny.db"), .threads = 1, .runs = 3, .slow_dir = tmpdir, .quiet = true,
	                     .model = "tiny.net"};
	int missing = profile_missing(g, s, &po, err, sizeof err);
	test_check(missing > 0, "before profiling %d kernels are missing", missing);
	test_check(!costmodel_from_profile(g, s, &po, a, err, sizeof err) && strstr(err, "autotmc profile"),
	           "no cost model without a profile: %s", err);
	ProfileReport r;
	bool ok = profile_graph(g, s, &po, &r, err, sizeof err);
	test_check(ok && r.kernels > 0 && r.measurements >= 2 * r.kernels && r.noise + r.all + r.additive == r.kernels,
	           "profiled %d kernels: %d within noise, %d every configuration, %d additive, %d measurements%s%s",
	           r.kernels, r.noise, r.all, r.additive, r.measurements, ok ? "" : ": ", ok ? "" : err);
	missing = profile_missing(g, s, &po, err, sizeof err);
	test_check(missing == 0, "afterwards nothing is missing (%d)", missing);
	ok = profile_graph(g, s, &po, &r, err, sizeof err);
	test_check(ok && r.measurements == 0 && r.already == r.kernels, "a second profile measures nothing");

	CostModel *cm = costmodel_from_profile(g, s, &po, a, err, sizeof err);
	test_check(cm && !cm->modeled, "cost model from the profile%s%s", cm ? "" : ": ", cm ? "" : err);
	if (cm) {
		/* the kernels' scratch: the loss kernel's row sums (a double per row, in 64-byte units) at least */
		bool known = cm->scratch != NULL;
		int64_t xent = -1, most = 0;
		for (int i = 0; known && i < s->n; i++) {
			const Node *n = s->order[i];
			known = cm->scratch[n->id] >= 0;
			if (n->op == OP_SOFTMAX_XENT)
				xent = cm->scratch[n->id];
			if (cm->scratch[n->id] > most)
				most = cm->scratch[n->id];
		}
		test_check(known && xent == 64 && place_kernel_scratch(s, cm) == most,
		           "every kernel's scratch is known: the loss's %" PRId64 " bytes (4 rows' sums), the largest %"
		           PRId64, xent, most);
	}
	if (cm) {
		bool mono = true;
		for (int i = 0; i < s->n; i++) {
			const Node *n = s->order[i];
			uint32_t all = (uint32_t)((1u << (n->nin + n->nout)) - 1);
			double t0 = cm->kernel_time(cm, n, 0);
			for (uint32_t c = 0; c <= all; c++)
				mono = mono && cm->kernel_time(cm, n, c) >= t0 && t0 > 0;
		}
		test_check(mono, "every configuration of every node takes at least its all-fast time");
		double m1 = cm->move_time(cm, 1 << 20, TIER_FAST, TIER_SLOW, false);
		double m2 = cm->move_time(cm, 100 << 20, TIER_FAST, TIER_SLOW, false);
		double m3 = cm->move_time(cm, INT64_C(1) << 31, TIER_SLOW, TIER_FAST, true);
		test_check(m1 > 0 && m2 > m1 && m3 > m2,
		           "move times grow with the size: 1 MiB %.1f us, 100 MiB %.2f ms, 2 GiB %.1f ms", 1e6 * m1,
		           1e3 * m2, 1e3 * m3);
	}

	/* the hw model: measured all-fast times plus the roofline penalty */
	int64_t *scratch;
	double *fast = profile_fast_times(g, s, &po, &scratch, a, err, sizeof err);
	test_check(fast != NULL, "all-fast times from the profile%s%s", fast ? "" : ": ", fast ? "" : err);
	const char *src = getenv("TOP_SRCDIR") ? getenv("TOP_SRCDIR") : ".";
	HwModel hw;
	char path[1024];
	snprintf(path, sizeof path, "%s/hw/optane-6dimm.hw", src);
	if (fast && hw_load(path, &hw, err, sizeof err)) {
		CostModel *hm = costmodel_from_hw(&hw, g, fast, a);
		test_check(hm->modeled && strcmp(hm->source, "modeled: hw/optane-6dimm.hw") == 0, "source: %s",
		           hm->source);
		const Node *n = s->order[0]; /* the first convolution: x, weight, bias -> y */
		double expect = fast[n->id] + (double)n->in[0]->bytes * (1 / 39e9 - 1 / 105e9) +
		                (double)n->out[0]->bytes * (1 / 14e9 - 1 / 80e9);
		uint32_t cfg = 1u | 1u << n->nin;
		double got = hm->kernel_time(hm, n, cfg);
		test_check(fabs(got - expect) <= 1e-12 * expect && hm->kernel_time(hm, n, 0) == fast[n->id],
		           "%s with x and y in Optane: %.3f us = fast %.3f us + the penalty", n->name, 1e6 * got,
		           1e6 * fast[n->id]);
		double mv = hm->move_time(hm, 1 << 30, TIER_FAST, TIER_SLOW, false);
		test_check(fabs(mv - (double)(1 << 30) / 14e9 - 300e-9) < 1e-9, "1 GiB to Optane: %.1f ms at 14 GB/s",
		           1e3 * mv);
		double mva = hm->move_time(hm, 1 << 30, TIER_SLOW, TIER_FAST, true);
		test_check(fabs(mva - (double)(1 << 30) / (39e9 * 0.3) - 300e-9) < 1e-9,
		           "1 GiB from Optane, async: %.1f ms", 1e3 * mva);
	} else {
		test_check(false, "hw model: %s", err);
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--hw") == 0) {
		HwModel hw;
		char err[1024];
		if (!hw_load(argv[2], &hw, err, sizeof err)) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		printf("%s: fast %.3g/%.3g GB/s, slow %.3g/%.3g GB/s, links %.3g/%.3g GB/s, async %.2f\n", hw.name,
		       hw.fast.read_bw / 1e9, hw.fast.write_bw / 1e9, hw.slow.read_bw / 1e9, hw.slow.write_bw / 1e9,
		       hw.to_slow_bw / 1e9, hw.to_fast_bw / 1e9, hw.async_fraction);
		return 0;
	}
	char tmpl[1024];
	const char *base = getenv("TEST_TMPDIR") && getenv("TEST_TMPDIR")[0] ? getenv("TEST_TMPDIR") : "/tmp";
	snprintf(tmpl, sizeof tmpl, "%s/profile.XXXXXX", base);
	tmpdir = mkdtemp(tmpl);
	if (!tmpdir) {
		perror("mkdtemp");
		return 1;
	}
	test_hw_shipped();
	test_hw_errors();
	test_db_errors();
	Arena a = {0};
	Graph *g;
	Schedule *s;
	if (!compile_model(&a, &g, &s)) {
		test_check(false, "the test model compiles");
	} else {
		test_signatures(g, s, &a);
		test_hw_per_op(g, &a);
		test_hw_bf16();
		test_profiler(g, s, &a);
		test_profile_and_models(g, s, &a);
	}
	arena_free(&a);
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return test_summary();
}
