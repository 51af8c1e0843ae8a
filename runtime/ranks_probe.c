/*
 * ranks_probe.c - autotm-ranks-probe: the link between ranks on this
 * machine, as the gradients' exchange uses it (runtime/ranks.c: a sum
 * reduced to rank 0, then broadcast), for the cost model's link term
 * (compiler/cost/ranks_link.c, docs/distributed.md).
 *
 *   mpirun -np N autotm-ranks-probe
 *
 * Times the exchange of 4 KiB to 16 MiB (the median of 7 after 2 warm-up
 * rounds, each between barriers), fits time = a + bytes x hops / bandwidth
 * (hops = 2 (N - 1) / N) by least squares for the bandwidth, and takes the
 * latency from the median of 51 exchanges of one float; rank 0 prints
 * "BANDWIDTH LATENCY" (bytes per second, seconds per message hop: that
 * time / (2 ceil(log2 N))), or exits 1 with why.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SIZES = 4, REPS = 7, WARMUP = 2, SMALL_REPS = 51 };


static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median time of one exchange of n floats, of reps. */
static double exchange(float *buf, int n, int rank, int reps)
{
	double t[SMALL_REPS];
	for (int r = -WARMUP; r < reps; r++) {
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		MPI_Reduce(rank == 0 ? MPI_IN_PLACE : buf, buf, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
		MPI_Bcast(buf, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		if (r >= 0)
			t[r] = MPI_Wtime() - t0;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp);
	return t[reps / 2];
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	static const int floats[SIZES] = {1 << 10, 1 << 14, 1 << 18, 1 << 22};
	float *buf = calloc((size_t)floats[SIZES - 1], sizeof(float));
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	double x[SIZES], y[SIZES], hops = size > 1 ? 2.0 * (size - 1) / size : 1;
	for (int i = 0; i < SIZES; i++) {
		x[i] = hops * floats[i] * (double)sizeof(float);
		y[i] = exchange(buf, floats[i], rank, REPS);
	}
	double one = exchange(buf, 1, rank, SMALL_REPS); /* a message of one float: the latency */
	free(buf);
	int status = 0;
	if (rank == 0) {
		double mx = 0, my = 0, sxx = 0, sxy = 0;
		for (int i = 0; i < SIZES; i++)
			mx += x[i] / SIZES, my += y[i] / SIZES;
		for (int i = 0; i < SIZES; i++)
			sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
		double slope = sxy / sxx, a = one, steps = 2 * ceil(log2(size > 1 ? size : 2));
		if (!(slope > 0) || !isfinite(slope)) {
			fprintf(stderr, "autotm-ranks-probe: the times do not grow with the bytes (%g .. %g s): no link "
			                "to fit\n", y[0], y[SIZES - 1]);
			status = 1;
		} else {
			printf("%.6g %.6g\n", 1 / slope, a > 0 ? a / steps : 0.0);
		}
	}
	MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return status;
}
