/*
 * test-bf16.c - bfloat16 rounding (base/bf16.h): to nearest, ties to even,
 * at the cases that tell rounding modes apart, and the special values.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "bf16.h"
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
	return test_summary();
}
