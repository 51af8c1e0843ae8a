/*
 * hwmodel.h - hardware descriptions (hw/NAME.hw) and the cost model they give.
 *
 * A hw file describes the two tiers of a machine that is not this one
 * (Optane DC PMM, a CXL memory expander, a GPU with host memory over
 * PCIe): read and write bandwidth, latency and capacity of each tier, and
 * optionally the link a move between them crosses. The format
 * (docs/profiling.md):
 *
 *   # comment                      (to the end of the line)
 *   name = Optane DC PMM, 6 DIMMs  (before any section: the machine)
 *   [fast]                         the fast tier; [slow]: the slow one
 *   name = DDR4-2666, 6 channels
 *   read_bandwidth = 105 GB/s      B/s KB/s MB/s GB/s TB/s, KiB/s ... TiB/s
 *   write_bandwidth = 80 GB/s
 *   latency = 81 ns                s ms us ns
 *   capacity = 192 GiB             B KB MB GB TB, KiB MiB GiB TiB
 *   [link]                         optional
 *   fast_to_slow = 14 GB/s         bandwidth of a move each way (default:
 *   slow_to_fast = 39 GB/s           bounded by the tiers only)
 *   latency = 1 us                 added to each move
 *   async_fraction = 0.5           async moves get this fraction of the bandwidth
 *   [compute]                      optional: kernel times without a profile
 *   flops = 51 TFLOP/s             FLOP/s, GFLOP/s, TFLOP/s (required in [compute])
 *   launch = 4 us                  added to every kernel
 *   flops.conv2d = 30 TFLOP/s      one op's own FLOP rate (any op of ops.def)
 *   flops_bf16 = 990 TFLOP/s       instead of flops for a kernel with bf16 inputs (--precision bf16)
 *   flops_bf16.conv2d = 330 TFLOP/s  one op's own rate with bf16 inputs (else its flops.OP)
 *   bandwidth.batchnorm = 0.4      the fraction of the fast tier's bandwidth one op reaches
 *   [ranks]                        optional: the link between data-parallel ranks (--ranks)
 *   bandwidth = 50 GB/s            of a gradient's exchange (required in [ranks])
 *   latency = 10 us                of one message
 *
 * Every tier needs read_bandwidth and write_bandwidth; the rest is
 * optional. Errors are "file:line: error: message".
 */
#ifndef AUTOTM_HWMODEL_H
#define AUTOTM_HWMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "costmodel.h"
#include "ops.h"

/* One memory tier. */
typedef struct HwTier {
	char name[128];      /* what it is ("DDR4-2666, 6 channels"), or "" */
	double read_bw;      /* bytes per second */
	double write_bw;     /* bytes per second */
	double latency;      /* seconds (0: not given) */
	int64_t capacity;    /* bytes (0: not given) */
} HwTier;

typedef struct HwModel {
	char path[512];          /* the file it was read from */
	char name[128];          /* the machine ("" if not given) */
	HwTier fast, slow;       /* the tiers */
	double to_slow_bw;       /* link bandwidth of a fast -> slow move (0: no separate link) */
	double to_fast_bw;       /* link bandwidth of a slow -> fast move (0: no separate link) */
	double link_latency;     /* seconds added to each move */
	double async_fraction;   /* async moves run at this fraction of the bandwidth (default 1) */
	double flop_rate;        /* [compute] flops: FLOP/s of a kernel (0: no [compute] section) */
	double launch;           /* [compute] launch: seconds added to every kernel */
	double op_flops[NUM_OPS];     /* [compute] flops.OP: that op's FLOP/s (0: flop_rate) */
	double flop_rate_bf16;        /* [compute] flops_bf16: FLOP/s of a kernel with bf16 inputs (0: as float32) */
	double op_flops_bf16[NUM_OPS]; /* [compute] flops_bf16.OP: that op's with bf16 inputs (0: flop_rate_bf16) */
	double op_bandwidth[NUM_OPS]; /* [compute] bandwidth.OP: fraction of the fast tier's bandwidth (0: all of it) */
	double ranks_bw;         /* [ranks] bandwidth: of the link between data-parallel ranks (0: not given) */
	double ranks_latency;    /* [ranks] latency: of one of its messages */
} HwModel;

/* A bandwidth with its unit ("450 GB/s") into bytes per second; false with "what: error: ..." in err. */
bool hw_bandwidth(const char *what, const char *text, double *out, char *err, size_t errlen);

/* Parse the text of a hw file named path. False with "path:line: error: ..." in err. */
bool hw_parse(const char *path, const char *text, HwModel *hw, char *err, size_t errlen);
/*
 * The FLOP rate [compute] gives node n: flops.OP, else flops; with a bf16
 * input, flops_bf16.OP before both and flops_bf16 before flops (an op's
 * own float32 figure still holds for its bf16 kernel unless it has a bf16
 * one).
 */
double hw_flop_rate(const HwModel *hw, const Node *n);
/* Read and parse a hw file. */
bool hw_load(const char *path, HwModel *hw, char *err, size_t errlen);
/*
 * The file a --hw argument names: a path as given if it has a '/' or ends
 * in .hw; else NAME.hw in $AUTOTM_HW, beside the executable (hw/ in a
 * build tree, ../share/autotm/hw in an install) or in the installed hw
 * directory. NULL with err if none exists.
 */
const char *hw_find(const char *name, Arena *a, char *err, size_t errlen);

/*
 * The cost model of a hw file, from the measured all-fast time of every
 * node (fast_seconds, by node id: profile_fast_times). A kernel with some
 * arguments in the slow tier takes its all-fast time plus, for each such
 * argument, the extra time its bytes take at the slow tier's bandwidth:
 *
 *   t(config) = t_fast + sum over slow arguments of
 *                 bytes_read    * max(0, 1/slow.read_bw  - 1/fast.read_bw)
 *               + bytes_written * max(0, 1/slow.write_bw - 1/fast.write_bw)
 *
 * (an input is read; an output is written; an input the op overwrites is
 * both). A move takes bytes / min(source read, destination write, link)
 * (times async_fraction when asynchronous) plus the slow tier's and the
 * link's latency. Its source is "modeled: hw/NAME.hw".
 */
CostModel *costmodel_from_hw(const HwModel *hw, const Graph *g, const double *fast_seconds, Arena *a);

/*
 * All-fast kernel times from the [compute] section alone, for a machine
 * without a profile (a GPU planned for on a CPU): by node id,
 *   launch + max(flops / flop_rate, (bytes read / fast read bandwidth
 *                                    + bytes written / fast write bandwidth) / efficiency),
 * with the op's own flops.OP and bandwidth.OP (efficiency) where given.
 * hw->flop_rate must be set.
 */
double *hw_roofline_times(const HwModel *hw, const Graph *g, Arena *a);

#endif
