/*
 * memcheck.c - whether the pools fit the memory there is, checked before
 * they are made.
 *
 * The pools are made whole and touched at once (cpu/pool.c prefaults
 * them), so a program whose pools need more memory than the machine has
 * free would not fail cleanly: the kernel's overcommit heuristic lets an
 * allocation up to RAM + swap through, and touching it wakes the OOM
 * killer (SIGKILL: no message, no checkpoint), or swaps the machine to a
 * crawl. So before any pool is made, what the pools take from the host
 * (the backend says which of them are host memory: RtMemoryOps.footprint)
 * is compared with what the host can give this process, and what they
 * take from a device with the device's free memory; a program that does
 * not fit is refused with the figures. --overcommit makes the pools
 * anyway (memory freed by the time they are touched, or swap meant to be
 * used).
 *
 * What the host can give is MemAvailable of /proc/meminfo (free memory
 * plus what the kernel can reclaim without swapping), or less where the
 * process's cgroup (v2, or v1's memory controller) has a limit: the limit
 * less the group's usage.
 */
#include "rt_internal.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* The number on the line of /proc/meminfo that starts with key ("MemAvailable:"), in bytes; -1 if none. */
static int64_t meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return -1;
	char line[256];
	int64_t kib = -1;
	while (kib < 0 && fgets(line, sizeof line, f))
		if (strncmp(line, key, strlen(key)) == 0 && sscanf(line + strlen(key), "%" SCNd64, &kib) != 1)
			kib = -1;
	fclose(f);
	return kib < 0 || kib > INT64_MAX / 1024 ? -1 : kib * 1024;
}

/* A file holding one number of bytes ("max" or none: -1). */
static int64_t read_bytes(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int64_t v = -1;
	if (fscanf(f, "%" SCNd64, &v) != 1 || v < 0)
		v = -1;
	fclose(f);
	return v;
}

/* What this process's cgroup still lets it take, or -1 without a limit. */
static int64_t cgroup_room(void)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	if (!f)
		return -1;
	char line[1024], path[PATH_MAX + 64];
	int64_t room = -1;
	while (room < 0 && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		const char *rel = NULL, *max = NULL, *cur = NULL, *root = NULL;
		if (strncmp(line, "0::", 3) == 0) { /* v2: one hierarchy */
			rel = line + 3, root = "/sys/fs/cgroup", max = "memory.max", cur = "memory.current";
		} else if (strstr(line, ":memory:")) { /* v1: the memory controller's */
			rel = strstr(line, ":memory:") + 8, root = "/sys/fs/cgroup/memory";
			max = "memory.limit_in_bytes", cur = "memory.usage_in_bytes";
		}
		if (!rel)
			continue;
		snprintf(path, sizeof path, "%s%s/%s", root, rel, max);
		int64_t limit = read_bytes(path);
		snprintf(path, sizeof path, "%s%s/%s", root, rel, cur);
		int64_t used = read_bytes(path);
		if (limit >= 0 && limit < INT64_MAX / 2 && used >= 0) /* v1 writes "no limit" as a huge number */
			room = limit > used ? limit - used : 0;
	}
	fclose(f);
	return room;
}

/* The host memory this process can take, or -1 when unknown; *source names where the figure came from. */
static int64_t host_available(const char **source)
{
	int64_t avail = meminfo("MemAvailable:"), room = cgroup_room();
	*source = "MemAvailable in /proc/meminfo";
	if (room >= 0 && (avail < 0 || room < avail)) {
		*source = "the limit of this process's cgroup less its usage";
		return room;
	}
	return avail;
}

void rt_check_memory(const RtCtx *ctx)
{
	const RtProgram *p = ctx->program;
	const RtOptions *o = &ctx->opt;
	if (o->overcommit)
		return;
	RtFootprint need;
	ctx->backend->memory.footprint(p->fast_bytes, p->slow_bytes, o->slow_kind, o->slow_dir,
	                               (p->flags & RT_PROGRAM_MANAGED) != 0, &need);
	char b1[32], b2[32], b3[32], b4[32], parts[160];
	const char *source;
	int64_t host = host_available(&source), total = need.host_fast + need.host_slow;
	snprintf(parts, sizeof parts, "%s%s%s%s%s%s", need.host_fast ? "the fast pool " : "",
	         need.host_fast ? fmt_bytes(need.host_fast, b1, sizeof b1) : "", need.host_fast && need.host_slow ? ", " : "",
	         need.host_slow ? "the slow pool " : "", need.host_slow ? fmt_bytes(need.host_slow, b2, sizeof b2) : "",
	         need.host_slow ? need.slow_where : "");
	if (host >= 0 && total > host)
		rt_fatal("the pools need %s of this machine's memory (%s), but %s is available (%s): give a smaller "
		         "--limit or batch, or --overcommit to make them anyway", fmt_bytes(total, b3, sizeof b3), parts,
		         fmt_bytes(host, b4, sizeof b4), source);
	if (need.device_free >= 0 && need.device > need.device_free)
		rt_fatal("the fast pool needs %s of device memory, but the device has %s free: give a smaller --limit or "
		         "batch, or --overcommit to try anyway", fmt_bytes(need.device, b1, sizeof b1),
		         fmt_bytes(need.device_free, b2, sizeof b2));
}
