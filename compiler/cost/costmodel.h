/*
 * costmodel.h - predicted times of kernels and moves, for placement.
 *
 * The placement optimizers see the machine only through a CostModel:
 * how long each kernel of the schedule takes with each of its arguments in
 * the fast or the slow tier, and how long a move of some bytes between the
 * tiers takes. A cost model comes from the profile database (measured on
 * this machine) or from a hardware description (a hw file: measured fast-tier
 * times plus a roofline penalty for the bytes read and written in the slow
 * tier), in which case everything derived from it is `modeled`.
 */
#ifndef AUTOTM_COSTMODEL_H
#define AUTOTM_COSTMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "optimizer.h"
#include "placement.h"
#include "schedule.h"

typedef struct CostModel CostModel;

/* One way to run a kernel (a cuDNN convolution algorithm), from a GPU profile. */
struct KernelAlgo {
	int number;        /* what the runtime takes: RT_D_ALGO = 1 + number */
	const char *name;  /* "implicit_precomp_gemm" */
	double seconds;    /* its all-fast time */
	int64_t workspace; /* device bytes it needs besides its arguments */
	bool nondeterministic; /* its sums depend on timing (offered only with --nondeterministic) */
};

struct CostModel {
	const char *source; /* what the times come from, for reports ("profile", "modeled: hw/optane-6dimm.hw") */
	bool modeled;       /* times are modeled, not all measured on this machine */
	/*
	 * Seconds node n takes when argument k (inputs first, then outputs) is
	 * in the slow tier for every bit k set in `slow`.
	 */
	double (*kernel_time)(const CostModel *cm, const Node *n, uint32_t slow);
	/* Seconds to copy `bytes` from one tier to the other (async: on the copy thread, overlapping a kernel). */
	double (*move_time)(const CostModel *cm, int64_t bytes, Tier from, Tier to, bool async);
	/*
	 * The algorithms node n may run with, fastest first, or 0 (and NULL)
	 * when it has no choice; NULL function: no kernel has one. The ILP
	 * picks one per kernel and counts its workspace against the limit.
	 */
	int (*algos)(const CostModel *cm, const Node *n, const KernelAlgo **out);
	/*
	 * Asynchronous moves of the two directions run at once (a GPU's copy
	 * engine per direction): a step takes max(its kernel, the async moves
	 * to the fast tier, those to the slow tier) instead of max(its kernel,
	 * all its async moves) (one copy thread).
	 */
	bool duplex;
	bool kernels_fast;  /* for a target whose kernels read fast memory only (a GPU): no time with slow arguments */
	/*
	 * node id -> bytes of fast memory its kernel needs beside its
	 * arguments (reordered arguments, oneDNN's scratchpad, a loss's row
	 * sums), as measured by the profile; NULL: none known (modeled
	 * machines, GPU convolutions' workspaces come with `algos`). The
	 * runtime keeps one scratch buffer, the largest any kernel needs, for
	 * the whole run: placement counts it against the limit.
	 */
	const int64_t *scratch;
	void *data;         /* the model's own state */
};

/*
 * A cost model from first principles, for tests and for machines without
 * a profile: a kernel takes max(flops / flop_rate, bytes / bandwidth of the
 * tier each argument is in); moves take bytes / min(read bandwidth of the
 * source, write bandwidth of the destination). Bandwidths in bytes per
 * second.
 */
typedef struct Roofline {
	double flop_rate;                 /* FLOP/s of a kernel */
	double fast_read, fast_write;     /* fast tier bandwidths */
	double slow_read, slow_write;     /* slow tier bandwidths */
	double async_factor;              /* async moves run at this fraction of the bandwidth */
} Roofline;

CostModel *costmodel_roofline(const Roofline *r, Arena *a);

/*
 * inner, with the time the ranks of a data-parallel program spend
 * exchanging each allreduce node's gradient added to the node's
 * (costmodel_ranks.c): 2 (N - 1) / N of its bytes over a link of
 * `bandwidth` bytes per second, and 2 log2 N times its latency for each
 * bucket of 25 MiB (a smaller gradient pays its share).
 */
CostModel *costmodel_ranks(const CostModel *inner, int ranks, double bandwidth, double latency, Arena *a);

/* Where a placement's times come from: the command line's choices. */
typedef struct CostRequest {
	TargetId target;         /* the machine the program runs on */
	bool fast_only;          /* the placement moves nothing and keeps everything fast (all-fast, um):
	                            all-fast kernel times suffice */
	const char *hw;          /* --hw NAME or FILE: model the tiers of that machine */
	const char *gpu_profile; /* --gpu-profile P.tsv: times measured on the GPU */
	bool nondeterministic;   /* --nondeterministic: also offer cuDNN's nondeterministic algorithms */
	const char *db;          /* --profile-db PATH (CPU) */
	int threads;             /* --threads (CPU profiles are per thread count; 0: every core) */
	const char *slow_dir;    /* --slow-dir (the slow tier's file system is part of the machine) */
	const char *model;       /* the model's file, for messages */
	bool quiet, verbose;     /* a profile made for it: silent; every kernel (else one summary line) */
	int ranks;               /* --ranks N: the allreduce nodes' exchange between N ranks (< 2: none) */
	const char *ranks_link;  /* --ranks-bandwidth BW, or NULL */
} CostRequest;

/*
 * Measure on this machine what the cost model of r needs and the profile
 * database lacks (CPU targets; a GPU is profiled on the GPU machine):
 * progress on stderr. False with a message in err when the database
 * cannot be used.
 */
bool costmodel_measure(const Graph *g, const Schedule *s, const CostRequest *r, char *err, size_t errlen);

/* The cost model of r (the table above; with r->ranks, costmodel_with_ranks of it); NULL with a message in err. */
CostModel *costmodel_for(const Graph *g, const Schedule *s, const CostRequest *r, Arena *a, char *err,
                         size_t errlen);

/*
 * cm with the ranks' exchange on its allreduce nodes (costmodel_ranks),
 * over the link r names (ranks_link.c): --ranks-bandwidth, the --hw
 * file's [ranks] section, or this machine's, measured once and kept
 * beside the profile database. NULL (and why) where the link is wrong or
 * missing (GPU ranks need one given).
 */
CostModel *costmodel_with_ranks(CostModel *cm, const CostRequest *r, Arena *a, char *err, size_t errlen);

/*
 * mpirun's arguments (*n of them) before a program for `ranks` ranks on
 * this machine, as autotmc starts them (ranks_link.c); in a sanitizer
 * build it also turns LeakSanitizer off for them, in the environment.
 */
const char **ranks_mpirun(int ranks, int *n, Arena *a);


#endif
