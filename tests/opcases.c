/*
 * opcases.c - the op cases the op tests share (opcases.h).
 *
 * The forward-op cases come first, at least one per forward op of ops.def
 * (the backward ops are only ever built by autodiff, so they are covered
 * through the op they differentiate), then the update ops, the small
 * networks, and the cases only kernels care about. A new op gets its case
 * here, and every op test takes it.
 */
#include "opcases.h"

#include <stdio.h>

#include "ranks.h"
#include "testlib.h"
#include "util.h"

const OpCase op_cases[] = {
	/* one forward op each */
	{"conv2d", OPCASE_OP, "2, 3, 6, 6", "36", "conv(3x3, 3 => 4, stride = 2, pad = 1) flatten", NULL},
	{"conv2d groups, no bias", OPCASE_OP, "2, 4, 5, 5", "54", "conv(3x3, 4 => 6, groups = 2, bias = false) flatten",
	 NULL},
	{"conv2d asymmetric", OPCASE_OP, "2, 3, 4, 5", "20",
	 "conv((1, 3), 3 => 2, stride = (2, 1), pad = (0, 1)) flatten", NULL},
	{"dense", OPCASE_OP, "3, 5", "4", "dense(5 => 4)", NULL},
	{"dense without bias", OPCASE_OP, "3, 5", "4", "dense(5 => 4, bias = false)", NULL},
	{"maxpool", OPCASE_OP, "2, 2, 5, 5", "18", "maxpool(3x3, stride = 2, pad = 1) flatten", NULL},
	{"avgpool", OPCASE_OP, "2, 2, 5, 5", "18", "avgpool(3x3, stride = 2, pad = 1) flatten", NULL},
	{"globalavgpool", OPCASE_OP, "2, 3, 4, 4", "3", "globalavgpool flatten", NULL},
	{"batchnorm 4d", OPCASE_OP, "3, 2, 3, 3", "18", "batchnorm flatten", NULL},
	{"batchnorm 2d", OPCASE_OP, "4, 3", "3", "batchnorm(eps = 0.001)", NULL},
	{"layernorm 2d", OPCASE_OP, "3, 6", "6", "layernorm", NULL},
	{"layernorm 4d (over the width)", OPCASE_OP, "2, 2, 3, 4", "24", "layernorm(eps = 0.001) flatten", NULL},
	{"relu", OPCASE_OP, "3, 5", "5", "relu", NULL},
	{"sigmoid", OPCASE_OP, "3, 5", "5", "sigmoid", NULL},
	{"tanh", OPCASE_OP, "3, 5", "5", "tanh", NULL},
	{"gelu", OPCASE_OP, "3, 7", "7", "gelu", NULL},
	{"dense with gelu", OPCASE_OP, "3, 5", "4", "dense(5 => 4, gelu)", NULL},
	{"relu6", OPCASE_OP, "3, 5", "5", "relu6", NULL},
	{"hardsigmoid", OPCASE_OP, "3, 5", "5", "hardsigmoid", NULL},
	{"hardswish", OPCASE_OP, "3, 5", "5", "hardswish", NULL},
	{"silu", OPCASE_OP, "3, 5", "5", "silu", NULL},
	{"conv with relu6, hardswish", OPCASE_OP, "2, 3, 5, 5", "4",
	 "conv(3x3, 3 => 4, relu6, pad = 1) conv(1x1, 4 => 4, hardswish) globalavgpool flatten", NULL},
	{"softmax", OPCASE_OP, "3, 5", "4", "softmax dense(5 => 4)", NULL},
	{"reshape", OPCASE_OP, "2, 2, 2, 3", "12", "flatten", NULL},
	{"dropout", OPCASE_OP, "3, 6", "6", "dropout(0.3)", NULL},
	{"add of 3", OPCASE_OP, "3, 5", "5", "add { branch { dense(5 => 5) } branch { relu } branch { tanh } }", NULL},
	{"concat 2d", OPCASE_OP, "3, 5", "8", "concat { branch { dense(5 => 3) } branch { tanh } }", NULL},
	{"tokens, transpose", OPCASE_OP, "2, 3, 2, 2", "6",
	 "conv(1x1, 3 => 4) tokens dense(4 => 3) transpose flatten dense(12 => 6)", NULL},
	{"class token, token(i)", OPCASE_OP, "2, 3, 2, 2", "5",
	 "conv(1x1, 3 => 4) tokens class_token dense(4 => 4, tanh) token(0) dense(4 => 5)", NULL},
	{"token(i) of a later position", OPCASE_OP, "2, 3, 2, 2", "5", "tokens dense(3 => 4) token(2) dense(4 => 5)",
	 NULL},
	{"softmax over the last dimension", OPCASE_OP, "2, 3, 2, 2", "12", "tokens softmax flatten", NULL},
	{"mean over the tokens", OPCASE_OP, "2, 3, 2, 2", "5", "tokens dense(3 => 4, tanh) mean(1) dense(4 => 5)", NULL},
	{"mean over the channels of an image", OPCASE_OP, "2, 3, 2, 3", "6", "mean(1) flatten", NULL},
	{"gate (squeeze-and-excitation)", OPCASE_OP, "2, 3, 3, 3", "4",
	 "conv(3x3, 3 => 4, pad = 1, act = relu) "
	 "gate(chain { globalavgpool conv(1x1, 4 => 2, relu) conv(1x1, 2 => 4) hardsigmoid }) globalavgpool flatten",
	 NULL},
	{"clamp", OPCASE_OP, "3, 5", "5", "clamp(-0.5, 0.75)", NULL},
	{"gate of the same shape", OPCASE_OP, "2, 3, 2, 2", "12", "conv(1x1, 3 => 3) gate(sigmoid) flatten", NULL},
	{"bidirectional attention", OPCASE_OP, "2, 4, 2, 2", "12",
	 "tokens dense(4 => 12) attention(2, causal = false) dense(4 => 3) flatten", NULL},
	{"concat 4d", OPCASE_OP, "2, 2, 3, 3", "45",
	 "concat { branch { conv(1x1, 2 => 3) } branch { maxpool(3x3, stride = 1, pad = 1) } } flatten", NULL},
	{"softmax_crossentropy", OPCASE_OP, "4, 6", "6", "tanh", NULL},
	{"softmax_crossentropy_ids", OPCASE_OP, "4, 6", "class 4", "dense(6 => 5)", NULL},
	{"embedding, dense over [N, T, C]", OPCASE_OP, "i32 3, 4", "class 3, 4", "embedding(11 => 6) dense(6 => 5)", NULL},
	{"position_embedding", OPCASE_OP, "i32 2, 5", "class 2, 5",
	 "embedding(7 => 4) position_embedding(8 => 4) dense(4 => 7, bias = false)", NULL},
	{"attention (matmul, split_heads, causal_softmax, merge_heads)", OPCASE_OP, "i32 2, 5", "class 2, 5",
	 "embedding(9 => 12) attention(2)", NULL},
	{"attention with dropout", OPCASE_OP, "i32 2, 4", "class 2, 4", "embedding(9 => 18) attention(3, p = 0.25)",
	 NULL},
	{"dense tied to an embedding", OPCASE_OP, "i32 2, 3", "class 2, 3",
	 "embedding(7 => 4) tanh dense(4 => 7, bias = false, tie = \"embedding1\")", NULL},

	/* the gradients' all-reduce of a program for several ranks (one rank: the mean is the gradient) */
	{"allreduce, clipped", OPCASE_RANKS, "3, 4", "2", "dense(4 => 3, tanh) dense(3 => 2)",
	 "optimizer = sgd(lr = 0.5, momentum = 0.9, clip = 0.05)"},
	/* update ops (sgd: every other case) */
	{"sgd_momentum", OPCASE_UPDATE, "3, 4", "2", "dense(4 => 2)", "optimizer = sgd(lr = 0.05, momentum = 0.9)"},
	{"sgd weight decay, nesterov", OPCASE_UPDATE, "3, 4", "2", "dense(4 => 2)",
	 "optimizer = sgd(lr = 0.05, momentum = 0.9, weight_decay = 0.01, nesterov = true)"},
	{"sgd step decay, clipped", OPCASE_UPDATE, "3, 4", "2", "dense(4 => 3, tanh) dense(3 => 2)",
	 "optimizer = sgd(lr = 0.5, weight_decay = 0.1, clip = 0.05, schedule = step_decay(every = 2, gamma = 0.5))"},
	{"adamw", OPCASE_UPDATE, "3, 4", "2", "dense(4 => 2)", "optimizer = adamw(lr = 0.01)"},
	{"adamw cosine, clipped", OPCASE_UPDATE, "3, 4", "2", "dense(4 => 3, tanh) dense(3 => 2)",
	 "optimizer = adamw(lr = 0.01, weight_decay = 0.1, clip = 0.1, "
	 "schedule = cosine(steps = 4, warmup = 2, floor = 0.001))"},

	/* small networks */
	{"transformer block, tied output", OPCASE_NETWORK, "i32 2, 6", "class 2, 6",
	 "embedding(11 => 8) position_embedding(6 => 8)"
	 "  residual { layernorm dense(8 => 24) attention(2) dense(8 => 8) }"
	 "  residual { layernorm dense(8 => 32, gelu) dense(32 => 8) }"
	 "  layernorm dense(8 => 11, bias = false, tie = \"embedding1\")",
	 NULL},
	{"residuals ending in dropout", OPCASE_NETWORK, "4, 6", "3",
	 "dense(6 => 8) residual { layernorm dense(8 => 16, gelu) dense(16 => 8) dropout(0.25) }"
	 "  residual { layernorm dense(8 => 8) dropout(0.5) } layernorm dense(8 => 3)",
	 NULL},
	{"mlp with layernorm and gelu", OPCASE_NETWORK, "4, 6", "3",
	 "dense(6 => 16) layernorm gelu dense(16 => 16) layernorm(eps = 1e-3) tanh dense(16 => 3)", NULL},
	{"mlp 3 layers", OPCASE_NETWORK, "4, 8", "3", "dense(8 => 16, relu) dense(16 => 16, tanh) dense(16 => 3)",
	 NULL},
	{"conv net", OPCASE_NETWORK, "2, 3, 8, 8", "4",
	 "conv(3x3, 3 => 4, pad = 1) batchnorm relu maxpool(2x2) "
	 "conv(3x3, 4 => 6, pad = 1, bias = false) batchnorm relu avgpool(2x2) flatten dense(24 => 4)",
	 NULL},
	{"residual block", OPCASE_NETWORK, "2, 4, 6, 6", "5",
	 "residual(shortcut = chain { conv(1x1, 4 => 8, stride = 2, bias = false) batchnorm }) {"
	 "  conv(3x3, 4 => 8, stride = 2, pad = 1, bias = false) batchnorm relu"
	 "  conv(3x3, 8 => 8, pad = 1, bias = false) batchnorm"
	 "} relu globalavgpool flatten dense(8 => 5)",
	 NULL},
	{"inception block", OPCASE_NETWORK, "2, 4, 5, 5", "5",
	 "concat {"
	 "  branch { conv(1x1, 4 => 2) relu }"
	 "  branch { conv(1x1, 4 => 2) relu conv(3x3, 2 => 3, pad = 1) relu }"
	 "  branch { conv(1x1, 4 => 1) relu conv((1, 3), 1 => 2, pad = (0, 1)) conv((3, 1), 2 => 2, pad = (1, 0)) }"
	 "  branch { avgpool(3x3, stride = 1, pad = 1) conv(1x1, 4 => 2) }"
	 "} globalavgpool flatten dense(9 => 5)",
	 NULL},
	{"densenet block", OPCASE_NETWORK, "2, 4, 4, 4", "3",
	 "repeat 3 as i { concat { branch { identity } "
	 "  branch { batchnorm relu conv(1x1, 4 + 2 * i => 4, bias = false) batchnorm relu "
	 "           conv(3x3, 4 => 2, pad = 1, bias = false) } } } "
	 "batchnorm relu conv(1x1, 10 => 5, bias = false) avgpool(2x2) globalavgpool flatten dense(5 => 3)",
	 NULL},

	/*
	 * for kernels only: which of tied maxima gets the gradient, and larger
	 * sizes, which change how kernels block and launch but not the graph
	 */
	{"maxpool with ties", OPCASE_KERNEL, "2, 2, 5, 5", "50", "relu maxpool(3x3, stride = 1, pad = 1) flatten",
	 NULL},
	{"larger conv 14x14", OPCASE_KERNEL, "4, 8, 14, 14", "10",
	 "conv(3x3, 8 => 16, stride = 2, pad = 1) batchnorm relu conv(3x3, 16 => 16, pad = 1, groups = 4) "
	 "maxpool(3x3, stride = 2) globalavgpool flatten dropout(0.2) dense(16 => 10)",
	 "optimizer = sgd(lr = 0.01, momentum = 0.5)"},
	/* channels in blocks of 16 (the CPU's blocked layouts: compiler/front/layout.h), odd planes */
	{"densenet block of 16 channels", OPCASE_KERNEL, "3, 16, 7, 5", "4",
	 "conv(3x3, 16 => 16, pad = 1) maxpool(3x3, stride = 1, pad = 1) repeat 2 as i { concat { branch { identity } "
	 "  branch { batchnorm relu conv(1x1, 16 + 16 * i => 32, bias = false) batchnorm relu "
	 "           conv(3x3, 32 => 16, pad = 1, bias = false) } } } "
	 "batchnorm relu conv(1x1, 48 => 32) relu avgpool(2x2) globalavgpool flatten dense(32 => 4)",
	 NULL},
	{"residual block of 32 channels", OPCASE_KERNEL, "2, 16, 6, 6", "3",
	 "conv(3x3, 16 => 32, pad = 1) relu residual {"
	 "  conv(3x3, 32 => 32, pad = 1) batchnorm relu conv(3x3, 32 => 32, pad = 1, bias = false) batchnorm"
	 "} relu maxpool(2x2) conv(1x1, 32 => 16) tanh globalavgpool flatten dense(16 => 3)",
	 NULL},
	{"layernorm, wide rows", OPCASE_KERNEL, "8, 96", "10", "dense(96 => 200) layernorm relu dense(200 => 10)", NULL},
	{"gelu, large values", OPCASE_KERNEL, "4, 64", "8", "dense(64 => 64) gelu dense(64 => 8)", NULL},
	{"hard activations, wide values", OPCASE_KERNEL, "4, 64", "8",
	 "dense(64 => 256) relu6 dense(256 => 256) hardswish dense(256 => 256) hardsigmoid dense(256 => 64) silu "
	 "dense(64 => 8)", NULL},
	{"token model, wide rows", OPCASE_KERNEL, "i32 4, 16", "class 4, 16",
	 "embedding(300 => 96) position_embedding(20 => 96) layernorm dense(96 => 128, gelu) dense(128 => 300)",
	 "optimizer = adamw(lr = 0.01)"},
	{"attention, long rows and wide heads", OPCASE_KERNEL, "i32 3, 70", "class 3, 70",
	 "embedding(50 => 96) dense(96 => 288) attention(2) dense(96 => 50, bias = false, tie = \"embedding1\")",
	 "optimizer = adamw(lr = 0.01)"},
	{"fused attention's blocks: 150 positions, heads of 13", OPCASE_KERNEL, "i32 2, 150", "class 2, 150",
	 "embedding(20 => 117) attention(3) dense(39 => 20)", NULL},
	{"fused attention's blocks, bidirectional", OPCASE_KERNEL, "i32 2, 100", "class 2, 100",
	 "embedding(20 => 117) attention(3, causal = false) dense(39 => 20)", NULL},
	{"fused attention over 300 positions (the GPU's query chunks)", OPCASE_KERNEL, "i32 2, 300", "class 2, 300",
	 "embedding(11 => 24) attention(2) dense(8 => 11)", NULL},
	{"the same, bidirectional", OPCASE_KERNEL, "i32 1, 300", "class 1, 300",
	 "embedding(11 => 24) attention(4, causal = false) dense(8 => 11)", NULL},
	{"larger conv 28x28", OPCASE_KERNEL, "8, 16, 28, 28", "10",
	 "conv(3x3, 16 => 32, stride = 2, pad = 1) batchnorm relu conv(3x3, 32 => 32, pad = 1, groups = 4) "
	 "maxpool(3x3, stride = 2) globalavgpool flatten dropout(0.2) dense(32 => 10)",
	 "optimizer = sgd(lr = 0.01, momentum = 0.5)"},

	/* evaluation graphs: batchnorm by its running statistics, dropout gone */
	{"batchnorm_eval", OPCASE_EVAL, "3, 2, 3, 3", "18", "batchnorm dropout(0.5) flatten", NULL},
	{"conv net, evaluated", OPCASE_EVAL, "2, 3, 8, 8", "4",
	 "conv(3x3, 3 => 4, pad = 1) batchnorm relu maxpool(2x2) dropout(0.3) "
	 "conv(3x3, 4 => 6, pad = 1, bias = false) batchnorm(eps = 0.001) relu avgpool(2x2) flatten dense(24 => 4)",
	 NULL},
	{"conv net of 16 channels, evaluated", OPCASE_EVAL, "2, 3, 7, 5", "4",
	 "conv(3x3, 3 => 16, pad = 1) batchnorm relu conv(3x3, 16 => 32, pad = 1, bias = false) batchnorm relu "
	 "globalavgpool flatten dense(32 => 4)",
	 NULL},
};

const int nop_cases = (int)countof(op_cases);

Graph *opcase_graph(Arena *a, const OpCase *c)
{
	char src[4096];
	if (c->kind == OPCASE_EVAL)
		return test_eval_graph(a, c->name, test_chain_source(src, sizeof src, c->layers, c->input, c->labels, c->opt));
	Graph *g = test_training_graph(a, c->name,
	                               test_chain_source(src, sizeof src, c->layers, c->input, c->labels, c->opt), true);
	char err[512];
	int added;
	if (g && c->kind == OPCASE_RANKS && (!ranks_allreduce(g, &added, err, sizeof err) || !graph_verify(g, err, sizeof err))) {
		fprintf(stderr, "%s: the ranks' all-reduce: %s\n", c->name, err);
		return NULL;
	}
	return g;
}
