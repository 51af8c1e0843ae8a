/*
 * abi-train.c - a training program written by hand against autotm/rt.h,
 * as autotmc would emit it, built twice: abi-train-cpu links libautotmrt.a
 * and abi-train-cuda links libautotmrt-cuda.a (and nothing else but CUDA,
 * cJSON, libpthread and libm: test-gpu-link.sh checks it). test-gpu-abi.sh
 * compares the losses the two print.
 *
 * The model: x [8, 16] -> dense(16 => 32) -> relu -> dropout(0.25) ->
 * dense(32 => 4) -> softmax_crossentropy with one-hot labels; the first
 * layer's weight and its velocity (sgd_momentum) live in the slow pool and
 * are moved in at the start of every step (asynchronously, and blocking)
 * and out at its end, as a placement that spills them would.
 *
 * ABI_TRAIN_MANAGED=LIMIT in the environment makes it a unified-memory
 * program (RT_PROGRAM_MANAGED) for a device of LIMIT bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotm/random.h"
#include "autotm/rt.h"

enum { N = 8, I = 16, H = 32, K = 4 };

/* A tensor: its shape (1 or 2 dimensions) and where it lives. */
typedef struct Arg {
	int ndim;
	int64_t d[2];
	int32_t pool;
	int64_t offset;
} Arg;

static int64_t pool_size[2];

static Arg tensor(int32_t pool, int64_t rows, int64_t cols)
{
	Arg a = {cols ? 2 : 1, {rows, cols}, pool, pool_size[pool]};
	pool_size[pool] += ((cols ? rows * cols : rows) * 4 + 255) / 256 * 256;
	return a;
}

/* The tensors (fast pool unless marked slow). */
static Arg x, y, w1, b1, w2, b2, v1, w1s, v1s, h, r, m, z, loss, dz, dw2, db2, dm, dr, dh, dw1, db1;

static void put_f64(int64_t *desc, int field, double v)
{
	memcpy(&desc[field], &v, sizeof v);
}

/* rt_kernel for op on the given arguments, inputs first. */
static void kernel(RtCtx *ctx, int32_t id, RtOp op, int nin, int nout, const Arg *const *args, double attr)
{
	int64_t desc[RT_DESC_LEN] = {0};
	desc[RT_D_OP] = op;
	desc[RT_D_NIN] = nin;
	desc[RT_D_NOUT] = nout;
	desc[RT_D_SEED] = 99;
	put_f64(desc, RT_D_P, 0.25);
	put_f64(desc, RT_D_LR, attr);
	put_f64(desc, RT_D_MOMENTUM, 0.9);
	for (int i = 0; i < nin + nout; i++) {
		RT_ARG_NDIM(desc, i) = args[i]->ndim;
		for (int k = 0; k < args[i]->ndim; k++)
			RT_ARG_DIM(desc, i, k) = args[i]->d[k];
	}
	rt_kernel(ctx, id, desc);
}

/* The kernels in schedule order: forward, backward, updates. */
static const struct Step {
	RtOp op;
	int nin, nout;
	const Arg *args[5];
	double lr;
} steps[] = {
	{RT_OP_DENSE, 3, 1, {&x, &w1, &b1, &h}, 0},
	{RT_OP_RELU, 1, 1, {&h, &r}, 0},
	{RT_OP_DROPOUT, 1, 1, {&r, &m}, 0},
	{RT_OP_DENSE, 3, 1, {&m, &w2, &b2, &z}, 0},
	{RT_OP_SOFTMAX_XENT, 2, 1, {&z, &y, &loss}, 0},
	{RT_OP_SOFTMAX_XENT_BWD, 2, 1, {&z, &y, &dz}, 0},
	{RT_OP_DENSE_BWD_WEIGHT, 2, 1, {&m, &dz, &dw2}, 0},
	{RT_OP_BIAS_GRAD, 1, 1, {&dz, &db2}, 0},
	{RT_OP_DENSE_BWD_DATA, 2, 1, {&dz, &w2, &dm}, 0},
	{RT_OP_DROPOUT_BWD, 1, 1, {&dm, &dr}, 0},
	{RT_OP_RELU_BWD, 2, 1, {&r, &dr, &dh}, 0},
	{RT_OP_DENSE_BWD_WEIGHT, 2, 1, {&x, &dh, &dw1}, 0},
	{RT_OP_BIAS_GRAD, 1, 1, {&dh, &db1}, 0},
	{RT_OP_SGD_MOMENTUM, 3, 0, {&w1, &dw1, &v1}, 0.05},
	{RT_OP_SGD, 2, 0, {&b1, &db1}, 0.05},
	{RT_OP_SGD, 2, 0, {&w2, &dw2}, 0.05},
	{RT_OP_SGD, 2, 0, {&b2, &db2}, 0.05},
};
enum { NSTEPS = sizeof steps / sizeof steps[0] };

static void declare(RtCtx *ctx, const char *name, int32_t kind, const Arg *a, int32_t init, double lo, double hi)
{
	RtTensor t = {.name = name, .kind = kind, .pool = a->pool, .offset = a->offset, .ndim = a->ndim,
	              .shape = {a->d[0], a->d[1]}, .init = init, .lo = lo, .hi = hi, .value = lo};
	rt_tensor(ctx, &t);
}

int main(int argc, char **argv)
{
	enum { F = RT_POOL_FAST, S = RT_POOL_SLOW };
	x = tensor(F, N, I), y = tensor(F, N, K);
	w1 = tensor(F, H, I), v1 = tensor(F, H, I), w1s = tensor(S, H, I), v1s = tensor(S, H, I);
	b1 = tensor(F, H, 0), w2 = tensor(F, K, H), b2 = tensor(F, K, 0);
	h = tensor(F, N, H), r = tensor(F, N, H), m = tensor(F, N, H), z = tensor(F, N, K), loss = tensor(F, 1, 0);
	dz = tensor(F, N, K), dw2 = tensor(F, K, H), db2 = tensor(F, K, 0), dm = tensor(F, N, H);
	dr = tensor(F, N, H), dh = tensor(F, N, H), dw1 = tensor(F, H, I), db1 = tensor(F, H, 0);
	RtProgram program = {.model = "abi-train", .fast_bytes = pool_size[F], .slow_bytes = pool_size[S],
	                     .nkernels = NSTEPS, .ntensors = 7, .record = "{}"};
	if (getenv("ABI_TRAIN_MANAGED")) {
		program.flags = RT_PROGRAM_MANAGED;
		program.fast_limit = strtoll(getenv("ABI_TRAIN_MANAGED"), NULL, 10);
	}

	RtCtx *ctx = rt_begin(argc, argv, &program);
	for (int i = 0; i < NSTEPS; i++)
		kernel(ctx, i, steps[i].op, steps[i].nin, steps[i].nout, steps[i].args, steps[i].lr);
	declare(ctx, "x", RT_TENSOR_INPUT, &x, RT_INIT_NORMAL, 0, 1);
	declare(ctx, "y", RT_TENSOR_LABELS, &y, RT_INIT_ONEHOT, 0, 0);
	declare(ctx, "fc1.weight", RT_TENSOR_WEIGHT, &w1s, RT_INIT_UNIFORM, -0.25, 0.25);
	declare(ctx, "fc1.velocity", RT_TENSOR_STATE, &v1s, RT_INIT_CONST, 0, 0);
	declare(ctx, "fc1.bias", RT_TENSOR_WEIGHT, &b1, RT_INIT_CONST, 0, 0);
	declare(ctx, "fc2.weight", RT_TENSOR_WEIGHT, &w2, RT_INIT_UNIFORM, -0.17, 0.17);
	declare(ctx, "fc2.bias", RT_TENSOR_WEIGHT, &b2, RT_INIT_CONST, 0, 0);

	char *base[2] = {rt_pool_base(ctx, F), rt_pool_base(ctx, S)};
#define ADDR(a) ((void *)(base[(a).pool] + (a).offset))
	for (int64_t it = 0; it < rt_iters(ctx); it++) {
		rt_step_begin(ctx);
		int32_t in = rt_move_async(ctx, ADDR(w1), ADDR(w1s), H * I * 4);
		rt_data(ctx, RT_DATA_INPUT, ADDR(x));
		rt_data(ctx, RT_DATA_LABELS, ADDR(y));
		rt_move(ctx, ADDR(v1), ADDR(v1s), H * I * 4);
		rt_move_wait(ctx, in);
		for (int i = 0; i < NSTEPS; i++) {
			void *args[5];
			for (int k = 0; k < steps[i].nin + steps[i].nout; k++)
				args[k] = ADDR(*steps[i].args[k]);
			rt_launch(ctx, i, args);
		}
		rt_move_async(ctx, ADDR(w1s), ADDR(w1), H * I * 4); /* waiting for the next move waits for it */
		rt_move_wait(ctx, rt_move_async(ctx, ADDR(v1s), ADDR(v1), H * I * 4));
		rt_step_end(ctx, ADDR(loss));
	}
#undef ADDR
	return rt_end(ctx);
}
