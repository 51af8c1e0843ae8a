/*
 * test-bf16.c - bfloat16 rounding (base/bf16.h): to nearest, ties to even,
 * at the cases that tell rounding modes apart, and the special values; and
 * which bf16 arguments the kernels take as they are, and the float32
 * copies a GPU kernel that runs widened takes (base/ops.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "bf16.h"
#include "ops.h"
#include "tests/testlib.h"

static void expect_bits(float f, uint16_t want, const char *what)
{
	uint16_t got = bf16_from_f32(f);
	test_check(got == want, "%s: %.9g -> 0x%04x (expected 0x%04x)", what, (double)f, got, want);
}

int main(void)
{
	float ulp = ldexpf(1, -7); /* of bf16 in [1, 2) */
	expect_bits(1.0f, 0x3f80, "exact");
	expect_bits(-2.0f, 0xc000, "exact negative");
	expect_bits(1 + ulp / 2, 0x3f80, "tie to even, down");
	expect_bits(1 + 3 * ulp / 2, 0x3f82, "tie to even, up");
	expect_bits(1 + ulp / 2 + ldexpf(1, -20), 0x3f81, "just above a tie");
	expect_bits(1 + ulp / 2 - ldexpf(1, -20), 0x3f80, "just below a tie");
	expect_bits(-(1 + 3 * ulp / 2), 0xbf82, "negative tie");
	expect_bits(INFINITY, 0x7f80, "infinity");
	expect_bits(-INFINITY, 0xff80, "-infinity");
	expect_bits(3.4028235e38f, 0x7f80, "largest float rounds to infinity");
	expect_bits(-0.0f, 0x8000, "negative zero");
	expect_bits(ldexpf(1, -133), 0x0001, "subnormal");
	uint16_t n = bf16_from_f32(NAN);
	test_check((n & 0x7f80) == 0x7f80 && (n & 0x7f) != 0, "NaN stays NaN (0x%04x)", n);
	test_check(bf16_to_f32(0x3fc0) == 1.5f, "0x3fc0 is 1.5");
	int ok = 1;
	for (uint32_t h = 0; h < 0x10000; h++) { /* every finite bf16 is its own rounding */
		float f = bf16_to_f32((uint16_t)h);
		if (isfinite(f) && bf16_from_f32(f) != h)
			ok = 0;
	}
	test_check(ok, "every finite bf16 converts back to itself");
	/* fusion's folded casts: the one bf16 argument each kernel takes itself, nothing else */
	test_check(op_bf16_arg_native(OP_ADAMW, 1 << 1) && op_bf16_arg_native(OP_GRAD_SUMSQ, 1 << 0) &&
	               op_bf16_arg_native(OP_LAYERNORM, 1 << 3) && op_bf16_arg_native(OP_LAYERNORM_BWD, 1 << 4),
	           "an update's gradient, a sum of squares' gradient, a layernorm's y, a layernorm_bwd's dy");
	test_check(!op_bf16_arg_native(OP_ADAMW, 1 << 0 | 1 << 1) && !op_bf16_arg_native(OP_LAYERNORM, 1 << 0) &&
	               !op_bf16_arg_native(OP_LAYERNORM_BWD, 1 << 4 | 1 << 5) && !op_bf16_arg_native(OP_ADD, 1 << 0),
	           "no other argument, and not with another bf16 one");
	/* layernorm_bwd (x, w, mean, rstd, dy, sum -> dx, dw, db) with dy and sum bf16, after 100 bytes of scratch */
	int64_t el[9] = {10, 4, 2, 2, 10, 10, 10, 4, 4};
	int64_t wide = op_gpu_widened_bytes(OP_LAYERNORM_BWD, 1 << 4 | 1 << 5, el, 9, 100);
	test_check(wide == 512 + 40 - 100, "widened layernorm_bwd: copies at 256 and 512, %lld bytes beyond the scratch",
	           (long long)wide);
	test_check(op_gpu_widened_bytes(OP_LAYERNORM_BWD, 1 << 4, el, 9, 100) == 0 &&
	               op_gpu_widened_bytes(OP_DENSE, 7, el, 4, 0) == 0 &&
	               op_gpu_widened_bytes(OP_EMBEDDING, 0, el, 3, 0) == 0,
	           "nothing widened where the kernel takes bf16");
	/* the fused output layer's GPU kernel reads its types from the description: widened, it would misread */
	test_check(op_gpu_native_bf16(OP_DENSE_XENT_IDS_GRAD) &&
	               op_gpu_widened_bytes(OP_DENSE_XENT_IDS_GRAD, 11, el, 6, 0) == 0,
	           "the fused output layer takes bf16 on the GPU");
	return test_summary();
}
