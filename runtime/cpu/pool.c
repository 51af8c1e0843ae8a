/*
 * cpu/pool.c - the fast and slow memory pools of the CPU backend (its
 * table's memory group; host staging is in cpu/move.c).
 *
 * The compiler's memory plan gives every tensor a byte offset in one of
 * two pools, so the runtime makes exactly one allocation per pool (as
 * llm.c carves all parameters out of one buffer) and never allocates
 * tensors afterwards:
 *
 *   fast  DRAM: one 2 MiB-aligned allocation (transparent huge pages
 *         where the kernel gives them), refused when it exceeds the
 *         limit the placement was made for.
 *   slow  by default a memkind pmem kind on a fresh temporary directory:
 *         memkind_create_pmem works on any file system, so the embedded
 *         default needs no special hardware and behaves like Optane in
 *         App Direct mode on a DAX file system. `--slow dax-kmem` uses
 *         persistent memory exposed as a NUMA node (MEMKIND_DAX_KMEM);
 *         `--slow numa:N` binds anonymous memory to NUMA node N (CXL
 *         memory, HBM in flat mode, or any CPU-less node).
 *
 * Both pools are touched once when they are made, so that page faults do
 * not land in the first training step and a file system too small for the
 * slow pool is an error now rather than a SIGBUS later.
 *
 * The pmem directory is ours: memkind unlinks its file as soon as it is
 * created, so removing the (empty) directory is all the cleaning there
 * is, and it happens on every exit path: cpu_pool_close, an atexit
 * handler, rt_exit_error (errors exit through rt_fatal, which calls the
 * table's memory.remove_temp_dirs), and SIGINT/SIGTERM/SIGHUP handlers
 * that rmdir (async-signal-safe) before re-raising the signal. SIGKILL
 * runs no handler, so the directory's name carries its creator's pid
 * (autotm-slow.PID.XXXXXX) and the next pool made in the same parent
 * removes those whose process is gone (remove_stale_dirs).
 *
 * What a pool needs beyond RtPool's common fields - where its memory came
 * from, so that it is freed the same way - is a CpuPool behind RtPool.priv.
 */
#include "cpu.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <memkind.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { POOL_ALIGN = 2 << 20, MAX_TEMP_DIRS = 8 };

/* The CPU backend's part of a pool (RtPool.priv). */
typedef struct CpuPool {
	bool slow;       /* the slow pool; else the fast one (posix_memalign in DRAM) */
	RtSlowKind kind; /* slow: where its memory comes from */
	memkind_t mk;    /* slow, pmem: the kind made on dir (memkind_destroy_kind at close) */
	char *dir;       /* slow, pmem: the temporary directory holding its file */
	int numa_node;   /* slow, numa: the node it is bound to */
} CpuPool;

/* ---- temporary directories removed on every exit path ------------------ */

/* Directories to rmdir at exit or on a signal; an empty string is a free slot. */
static char temp_dirs[MAX_TEMP_DIRS][PATH_MAX];
static bool handlers_installed;

void cpu_remove_temp_dirs(void)
{
	for (int i = 0; i < MAX_TEMP_DIRS; i++)
		if (temp_dirs[i][0])
			rmdir(temp_dirs[i]);
}

/* Only async-signal-safe calls here: rmdir, signal, raise. */
static void on_signal(int sig)
{
	cpu_remove_temp_dirs();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void register_temp_dir(const char *dir)
{
	if (!handlers_installed) {
		handlers_installed = true;
		if (atexit(cpu_remove_temp_dirs) != 0)
			rt_fatal("cannot register the slow pool's clean-up (atexit)");
		const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
		for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
			struct sigaction sa = {.sa_handler = on_signal};
			sigemptyset(&sa.sa_mask);
			if (sigaction(sigs[i], &sa, NULL) != 0)
				rt_fatal("cannot install a signal handler: %s", strerror(errno));
		}
	}
	for (int i = 0; i < MAX_TEMP_DIRS; i++)
		if (!temp_dirs[i][0]) {
			snprintf(temp_dirs[i], sizeof temp_dirs[i], "%s", dir);
			return;
		}
	RT_ICE("more than %d slow pools at once", MAX_TEMP_DIRS);
}

static void unregister_temp_dir(const char *dir)
{
	for (int i = 0; i < MAX_TEMP_DIRS; i++)
		if (strcmp(temp_dirs[i], dir) == 0)
			temp_dirs[i][0] = '\0';
}

/* ---- touching the pages ------------------------------------------------- */

static sigjmp_buf bus_jump;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jump, 1);
}

/*
 * Zero a pool, page by page in parallel with nothing else (before any
 * kernel runs). A file-backed pool whose file system runs out of room
 * raises SIGBUS on the first write to a page it cannot back: report it.
 */
static void prefault(RtPool *p)
{
	struct sigaction sa = {.sa_handler = on_sigbus}, old;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &old) != 0)
		rt_fatal("cannot install a SIGBUS handler: %s", strerror(errno));
	if (sigsetjmp(bus_jump, 1)) {
		char b[32], w[PATH_MAX + 64];
		sigaction(SIGBUS, &old, NULL);
		rt_fatal("the %s pool (%s, %s) could not be backed by memory: its file system is full",
		         p->name, fmt_bytes(p->bytes, b, sizeof b), cpu_pool_where(p, w, sizeof w));
	}
	memset(p->base, 0, (size_t)p->mapped);
	sigaction(SIGBUS, &old, NULL);
}

static int64_t round_up(int64_t n, int64_t a)
{
	return (n + a - 1) / a * a;
}

/* ---- fast -------------------------------------------------------------- */

void cpu_pool_open_fast(RtPool *p, int64_t bytes, int64_t limit)
{
	char b1[32];
	rt_pool_fast_check(bytes, limit);
	*p = (RtPool){.name = "fast", .bytes = bytes, .priv = rt_xcalloc(sizeof(CpuPool))};
	if (bytes == 0)
		return;
	p->mapped = round_up(bytes, POOL_ALIGN);
	int rc = posix_memalign(&p->base, POOL_ALIGN, (size_t)p->mapped);
	if (rc != 0)
		rt_fatal("cannot allocate the fast pool (%s): %s", fmt_bytes(bytes, b1, sizeof b1), strerror(rc));
#ifdef MADV_HUGEPAGE
	madvise(p->base, (size_t)p->mapped, MADV_HUGEPAGE); /* a hint: failure is harmless */
#endif
	prefault(p);
}

void cpu_pool_open_managed(RtPool *p, int64_t bytes, int64_t limit)
{
	(void)p, (void)bytes, (void)limit;
	rt_fatal("this program was compiled for unified memory on a GPU (managed); link it with libautotmrt-cuda.a");
}

/* ---- what the pools take ------------------------------------------------ */

/* The directory a pmem pool's own is made in: --slow-dir, $TMPDIR or /tmp. */
static const char *pmem_parent(const char *dir)
{
	if (dir && dir[0])
		return dir;
	return getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
}

void cpu_pool_footprint(int64_t fast, int64_t slow, RtSlowKind kind, const char *dir, bool managed, RtFootprint *out)
{
	(void)managed;
	*out = (RtFootprint){.host_fast = round_up(fast, POOL_ALIGN), .device_free = -1};
	/* a pmem file in a file system in RAM is memory like the fast pool; on a disk it is the disk's */
	struct statfs fs;
	if (kind == RT_SLOW_PMEM && slow > 0 && statfs(pmem_parent(dir), &fs) == 0 &&
	    (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC)) {
		out->host_slow = round_up(slow, POOL_ALIGN);
		out->slow_where = fs.f_type == TMPFS_MAGIC ? " in tmpfs" : " in ramfs";
	}
}

/* ---- slow -------------------------------------------------------------- */

/* A memkind call returning a memkind error code: fatal with file:line, the call and memkind's reason. */
static void memkind_check(int err, const char *what, const char *file, int line)
{
	if (!err)
		return;
	char msg[MEMKIND_ERROR_MESSAGE_SIZE];
	memkind_error_message(err, msg, sizeof msg);
	rt_fatal("%s:%d: %s failed: %s (memkind error %d)", file, line, what, msg, err);
}
#define MEMKIND_CHECK(call) memkind_check((call), #call, __FILE__, __LINE__)

/* ---- directories left by killed runs ------------------------------------ */

static const char SLOW_PREFIX[] = "autotm-slow.";

/*
 * The pid in a slow pool directory's name, autotm-slow.PID.XXXXXX (what
 * open_pmem makes), or 0 when the name is not of that form.
 */
static long pid_in_name(const char *name)
{
	size_t np = sizeof SLOW_PREFIX - 1;
	if (strncmp(name, SLOW_PREFIX, np) != 0 || !isdigit((unsigned char)name[np]))
		return 0;
	char *end;
	errno = 0;
	long pid = strtol(name + np, &end, 10);
	if (errno || pid <= 0 || pid > INT_MAX || *end != '.' || strlen(end + 1) != 6)
		return 0;
	return pid;
}

/*
 * Remove the empty directories that runs killed with SIGKILL (which no
 * handler sees) left in `parent`: a directory is removed only if it is
 * named autotm-slow.PID.XXXXXX, is a directory itself (not a link), is
 * owned by this user, and process PID no longer exists (kill(PID, 0)
 * fails with ESRCH). A live run's directory is never touched; nor is one
 * whose pid was reused since, or one that is not empty (rmdir refuses).
 * memkind unlinks its file as soon as it makes it, so a killed run's
 * directory is empty and holds no data. Failures are silent: this is
 * tidying, and the new pool does not depend on it.
 */
static void remove_stale_dirs(const char *parent)
{
	DIR *d = opendir(parent);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		long pid = pid_in_name(e->d_name);
		struct stat st;
		if (!pid || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static void open_pmem(RtPool *p, CpuPool *c, const char *parent)
{
	char b1[32], b2[32];
	parent = pmem_parent(parent);
	remove_stale_dirs(parent);
	char tmpl[PATH_MAX];
	if ((size_t)snprintf(tmpl, sizeof tmpl, "%s/%s%ld.XXXXXX", parent, SLOW_PREFIX, (long)getpid()) >= sizeof tmpl)
		rt_fatal("--slow-dir '%s' is too long a path", parent);
	if (!mkdtemp(tmpl))
		rt_fatal("cannot create the slow pool's directory in '%s': %s", parent, strerror(errno));
	c->dir = rt_xstrdup(tmpl);
	register_temp_dir(c->dir);

	struct statvfs vfs;
	if (statvfs(c->dir, &vfs) == 0) {
		int64_t avail = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize;
		if (avail < p->mapped)
			rt_fatal("the slow pool needs %s but the file system of '%s' has %s free (choose another with --slow-dir)",
			         fmt_bytes(p->mapped, b1, sizeof b1), parent, fmt_bytes(avail, b2, sizeof b2));
	}
	MEMKIND_CHECK(memkind_create_pmem(c->dir, 0, &c->mk)); /* 0: the file grows as needed */
	int err = memkind_posix_memalign(c->mk, &p->base, POOL_ALIGN, (size_t)p->mapped);
	if (err || !p->base)
		rt_fatal("cannot allocate the slow pool (%s) in '%s': %s", fmt_bytes(p->bytes, b1, sizeof b1), c->dir,
		         strerror(err ? err : ENOMEM));
}

static void open_dax(RtPool *p)
{
	char b[32];
	int err = memkind_check_available(MEMKIND_DAX_KMEM);
	if (err) {
		char msg[MEMKIND_ERROR_MESSAGE_SIZE];
		memkind_error_message(err, msg, sizeof msg);
		rt_fatal("--slow dax-kmem: this machine has no persistent memory configured as a NUMA node (%s); "
		         "use the default --slow pmem with --slow-dir on its DAX file system instead",
		         msg);
	}
	err = memkind_posix_memalign(MEMKIND_DAX_KMEM, &p->base, POOL_ALIGN, (size_t)p->mapped);
	if (err || !p->base)
		rt_fatal("cannot allocate the slow pool (%s) from MEMKIND_DAX_KMEM: %s", fmt_bytes(p->bytes, b, sizeof b),
		         strerror(err ? err : ENOMEM));
}

/* The online NUMA nodes, as /sys lists them ("0-1"), for messages. */
static const char *online_nodes(char *buf, size_t size)
{
	snprintf(buf, size, "unknown");
	FILE *f = fopen("/sys/devices/system/node/online", "r");
	if (f) {
		if (fgets(buf, (int)size, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	return buf;
}

static void open_numa(RtPool *p, int node)
{
	char path[128], nodes[64], b[32];
	snprintf(path, sizeof path, "/sys/devices/system/node/node%d", node);
	struct stat st;
	if (node < 0 || node >= 1024 || stat(path, &st) != 0)
		rt_fatal("--slow numa:%d: this machine has no NUMA node %d (online nodes: %s)", node, node,
		         online_nodes(nodes, sizeof nodes));
	p->base = mmap(NULL, (size_t)p->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->base == MAP_FAILED) {
		p->base = NULL;
		rt_fatal("cannot map the slow pool (%s): %s", fmt_bytes(p->bytes, b, sizeof b), strerror(errno));
	}
	/* mbind(MPOL_BIND) without libnuma: a bit mask of nodes, one bit per node. */
	unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
	mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
	const int mpol_bind = 2, mpol_mf_strict = 1;
	if (syscall(SYS_mbind, p->base, (unsigned long)p->mapped, mpol_bind, mask, (unsigned long)1024 + 1,
	            mpol_mf_strict) != 0)
		rt_fatal("cannot bind the slow pool to NUMA node %d (mbind): %s", node, strerror(errno));
}

void cpu_pool_open_slow(RtPool *p, int64_t bytes, RtSlowKind kind, const char *dir, int numa_node)
{
	*p = (RtPool){.name = "slow", .bytes = bytes};
	CpuPool *c = p->priv = rt_xcalloc(sizeof *c);
	*c = (CpuPool){.slow = true, .kind = kind, .numa_node = numa_node};
	if (bytes < 0)
		RT_ICE("negative slow pool size %lld", (long long)bytes);
	if (bytes == 0)
		return;
	p->mapped = round_up(bytes, POOL_ALIGN);
	switch (kind) {
	case RT_SLOW_PMEM:
		open_pmem(p, c, dir);
		break;
	case RT_SLOW_DAX:
		open_dax(p);
		break;
	case RT_SLOW_NUMA:
		open_numa(p, numa_node);
		break;
	}
	prefault(p);
}

/* Free a slow pool the way its memory came. */
static void close_slow(RtPool *p, CpuPool *c)
{
	switch (c->kind) {
	case RT_SLOW_PMEM:
		if (p->base)
			memkind_free(c->mk, p->base);
		if (c->mk)
			MEMKIND_CHECK(memkind_destroy_kind(c->mk));
		if (c->dir) {
			if (rmdir(c->dir) != 0)
				rt_warn("cannot remove the slow pool's directory '%s': %s", c->dir, strerror(errno));
			unregister_temp_dir(c->dir);
			free(c->dir);
		}
		break;
	case RT_SLOW_DAX:
		if (p->base)
			memkind_free(MEMKIND_DAX_KMEM, p->base);
		break;
	case RT_SLOW_NUMA:
		if (p->base)
			munmap(p->base, (size_t)p->mapped);
		break;
	}
}

void cpu_pool_close(RtPool *p)
{
	CpuPool *c = p->priv;
	if (c && c->slow)
		close_slow(p, c);
	else
		free(p->base);
	free(c);
	*p = (RtPool){.name = p->name};
}

const char *cpu_pool_where(const RtPool *p, char *buf, size_t size)
{
	const CpuPool *c = p->priv;
	if (!c || !c->slow)
		snprintf(buf, size, "DRAM");
	else if (p->bytes == 0)
		snprintf(buf, size, "none");
	else
		switch (c->kind) {
		case RT_SLOW_PMEM:
			snprintf(buf, size, "pmem file in %s", c->dir ? c->dir : "?");
			break;
		case RT_SLOW_DAX:
			snprintf(buf, size, "MEMKIND_DAX_KMEM");
			break;
		case RT_SLOW_NUMA:
			snprintf(buf, size, "NUMA node %d", c->numa_node);
			break;
		}
	return buf;
}
