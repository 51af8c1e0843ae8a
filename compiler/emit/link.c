/*
 * link.c - link the emitted object with libautotmrt.
 *
 * The runtime library is looked for in $AUTOTM_RUNTIME_LIB (a path to
 * libautotmrt.a), next to the autotmc executable (a build tree), in
 * ../lib beside it (an install), and in the library directory chosen at
 * configure time. The libraries the runtime needs (oneDNN, memkind,
 * cJSON, ...) were found by configure and are compiled in. The compiler
 * driver runs without a shell, so no path needs quoting.
 *
 * A GPU program links libautotmrt-cuda.a (found the same way; the
 * environment variable is AUTOTM_RUNTIME_CUDA_LIB) with CUDA, cuDNN and
 * cuBLAS. It is meant to run on another machine, one that has the CUDA
 * libraries but maybe nothing else of ours: the copy of libcjson this
 * compiler runs with is put beside it and found there through an
 * $ORIGIN run path.
 *
 * The linker writes $TMPDIR/autotm-link.PID.XXXXXX, removed on every path
 * out, on Ctrl-C (tempfiles.h), and by the next link after a kill -9.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>

#include <cjson/cJSON.h>

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "link.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "outfile.h"
#include "tempfiles.h"
#include "util.h"

#ifndef AUTOTM_LIBDIR
#define AUTOTM_LIBDIR "/usr/local/lib"
#endif
#ifndef AUTOTM_RT_LIBS
#define AUTOTM_RT_LIBS "-ldnnl -lmemkind -lcjson -lpthread -lm"
#endif

const char *runtime_library(TargetId target)
{
	bool gpu = target == TARGET_GPU;
	static char found[PATH_MAX + 32];
	const char *name = gpu ? "libautotmrt-cuda.a" : "libautotmrt.a";
	const char *env = getenv(gpu ? "AUTOTM_RUNTIME_CUDA_LIB" : "AUTOTM_RUNTIME_LIB");
	if (env && env[0])
		return access(env, R_OK) == 0 ? env : NULL;
	const char *exe = exe_dir();
	const char *cands[] = {"%s/%s", "%s/../lib/%s"};
	for (size_t i = 0; exe && i < countof(cands); i++) {
		snprintf(found, sizeof found, cands[i], exe, name);
		if (access(found, R_OK) == 0)
			return found;
	}
	snprintf(found, sizeof found, "%s/%s", AUTOTM_LIBDIR, name);
	return access(found, R_OK) == 0 ? found : NULL;
}

/* Copy the shared cJSON library this process uses next to out, under its soname. */
static bool copy_cjson_beside(const char *out, char *err, size_t errlen)
{
	Dl_info info;
	if (!dladdr((void *)cJSON_Parse, &info) || !info.dli_fname || !strchr(info.dli_fname, '/'))
		return true; /* linked statically: nothing to carry */
	char *outc = xstrdup(out);
	char dst[PATH_MAX];
	snprintf(dst, sizeof dst, "%s/libcjson.so.1", dirname(outc));
	free(outc);
	size_t len = 0;
	char *data = read_file(info.dli_fname, &len);
	int fd = data ? open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
	bool ok = fd >= 0 && write(fd, data, len) == (ssize_t)len;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	free(data);
	if (!ok)
		snprintf(err, errlen, "cannot copy %s to %s: %s", info.dli_fname, dst, strerror(errno));
	return ok;
}

bool link_program(const char *obj, const char *out, TargetId target, char *err, size_t errlen)
{
	bool gpu = target == TARGET_GPU; /* the CUDA runtime, and cJSON carried beside the program */
#ifndef AUTOTM_RT_CUDA_LIBS
	if (gpu) {
		snprintf(err, errlen, "this autotmc was built without the CUDA backend (configure found no CUDA toolkit "
		         "with cuDNN and cuBLAS; see docs/gpu.md)");
		return false;
	}
#define AUTOTM_RT_CUDA_LIBS ""
#endif
	const char *lib = runtime_library(target);
	if (!lib) {
		snprintf(err, errlen, "cannot find the runtime library %s (set %s)",
		         gpu ? "libautotmrt-cuda.a" : "libautotmrt.a", gpu ? "AUTOTM_RUNTIME_CUDA_LIB" : "AUTOTM_RUNTIME_LIB");
		return false;
	}
	const char *cc = getenv("CC");
	if (!cc || !cc[0])
		cc = "cc";
	char *libs = xstrdup(gpu ? AUTOTM_RT_CUDA_LIBS " -Wl,-rpath,$ORIGIN" : AUTOTM_RT_LIBS);
	const char *argv[64];
	int argc = 0;
	/* the linker writes a temporary file; out is written from it as base/outfile.h writes files */
	const char *tmpdir = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
	temp_sweep(tmpdir, "autotm-link.");
	char linked[PATH_MAX];
	snprintf(linked, sizeof linked, "%s/autotm-link.%ld.XXXXXX", tmpdir, (long)getpid());
	int lfd = mkstemp(linked);
	if (lfd < 0) {
		snprintf(err, errlen, "cannot create a temporary file in %s: %s", tmpdir, strerror(errno));
		free(libs);
		return false;
	}
	temp_track(linked);
	close(lfd);
	argv[argc++] = cc;
	argv[argc++] = "-o";
	argv[argc++] = linked;
	argv[argc++] = obj;
	argv[argc++] = lib;
	for (char *tok = strtok(libs, " "); tok && argc < (int)countof(argv) - 1; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;

	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot start the linker: %s", strerror(errno));
		free(libs);
		return false;
	}
	if (pid == 0) {
		execvp(cc, (char *const *)argv);
		fprintf(stderr, "autotmc: error: cannot run %s: %s\n", cc, strerror(errno));
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			snprintf(err, errlen, "waiting for the linker: %s", strerror(errno));
			free(libs);
			unlink(linked);
			temp_untrack(linked);
			return false;
		}
	free(libs);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "linking %s failed (%s exited with status %d)", out, cc,
		         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		unlink(linked);
		temp_untrack(linked);
		return false;
	}
	size_t len = 0;
	char *bytes = read_file(linked, &len);
	unlink(linked);
	temp_untrack(linked);
	if (!bytes) {
		snprintf(err, errlen, "cannot read the linked program %s: %s", linked, strerror(errno));
		return false;
	}
	OutFile o;
	bool ok = outfile_open_mode(&o, out, 0777, err, errlen);
	if (ok && fwrite(bytes, 1, len, o.f) != len) {
		snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
		outfile_abort(&o);
		ok = false;
	} else if (ok) {
		ok = outfile_commit(&o, err, errlen);
	}
	free(bytes);
	struct stat st;
	bool regular = stat(out, &st) == 0 && S_ISREG(st.st_mode);
	return ok && (!gpu || !regular || copy_cjson_beside(out, err, errlen));
}
