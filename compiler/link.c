/*
 * link.c - link the emitted object with libautotmrt.
 *
 * The runtime library is looked for in $AUTOTM_RUNTIME_LIB (a path to
 * libautotmrt.a), next to the autotmc executable (a build tree), in
 * ../lib beside it (an install), and in the library directory chosen at
 * configure time. The libraries the runtime needs (oneDNN, memkind,
 * cJSON, ...) were found by configure and are compiled in. The compiler
 * driver runs without a shell, so no path needs quoting.
 */
#include "link.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#ifndef AUTOTM_LIBDIR
#define AUTOTM_LIBDIR "/usr/local/lib"
#endif
#ifndef AUTOTM_RT_LIBS
#define AUTOTM_RT_LIBS "-ldnnl -lmemkind -lcjson -lpthread -lm"
#endif

const char *runtime_library(void)
{
	static char found[PATH_MAX + 32];
	const char *env = getenv("AUTOTM_RUNTIME_LIB");
	if (env && env[0])
		return access(env, R_OK) == 0 ? env : NULL;
	const char *exe = exe_dir();
	const char *cands[] = {"%s/libautotmrt.a", "%s/../lib/libautotmrt.a"};
	for (size_t i = 0; exe && i < countof(cands); i++) {
		snprintf(found, sizeof found, cands[i], exe);
		if (access(found, R_OK) == 0)
			return found;
	}
	snprintf(found, sizeof found, "%s/libautotmrt.a", AUTOTM_LIBDIR);
	return access(found, R_OK) == 0 ? found : NULL;
}

bool link_program(const char *obj, const char *out, char *err, size_t errlen)
{
	const char *lib = runtime_library();
	if (!lib) {
		snprintf(err, errlen, "cannot find the runtime library libautotmrt.a (set AUTOTM_RUNTIME_LIB)");
		return false;
	}
	const char *cc = getenv("CC");
	if (!cc || !cc[0])
		cc = "cc";
	char *libs = xstrdup(AUTOTM_RT_LIBS);
	const char *argv[64];
	int argc = 0;
	argv[argc++] = cc;
	argv[argc++] = "-o";
	argv[argc++] = out;
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
			return false;
		}
	free(libs);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "linking %s failed (%s exited with status %d)", out, cc,
		         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return false;
	}
	return true;
}
