/*
 * plot.c - drawing with gnuplot (see plot.h).
 */
#include "plot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static bool fail(const Plot *p, const char *msg)
{
	fflush(stdout);
	fprintf(stderr, "%s: error: %s\n", p->who, msg);
	return false;
}

static bool has_ext(const char *path, const char *ext)
{
	const char *dot = strrchr(path, '.');
	return dot && strcmp(dot, ext) == 0;
}

bool plot_format_ok(const char *path)
{
	return has_ext(path, ".png") || has_ext(path, ".svg");
}

bool plot_open(Plot *p, const char *path, int width, int height, const char *who)
{
	*p = (Plot){.path = path, .who = who};
	char err[1024];
	bool svg = has_ext(path, ".svg");
	if (!plot_format_ok(path)) {
		snprintf(err, sizeof err, "%s: a plot is written as .png or .svg", path);
		return fail(p, err);
	}
	if (!outfile_open(&p->out, path, err, sizeof err))
		return fail(p, err);
	int fds[2];
	if (pipe(fds) != 0) {
		snprintf(err, sizeof err, "cannot start gnuplot: %s", strerror(errno));
		outfile_abort(&p->out);
		return fail(p, err);
	}
	fflush(NULL);
	p->pid = fork();
	if (p->pid == 0) {
		dup2(fds[0], 0);
		dup2(fileno(p->out.f), 1);
		close(fds[0]);
		close(fds[1]);
		execlp("gnuplot", "gnuplot", (char *)NULL);
		fprintf(stderr, "%s: error: cannot run gnuplot: %s (Debian package: gnuplot-nox)\n", who, strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	p->f = p->pid > 0 ? fdopen(fds[1], "w") : NULL;
	if (!p->f) {
		snprintf(err, sizeof err, "cannot start gnuplot: %s", strerror(errno));
		close(fds[1]);
		if (p->pid > 0)
			waitpid(p->pid, NULL, 0);
		outfile_abort(&p->out);
		return fail(p, err);
	}
	fprintf(p->f, "set terminal %s size %d,%d\nset output\n", svg ? "svg" : "png", width, height);
	return true;
}

bool plot_close(Plot *p)
{
	char err[1024];
	fclose(p->f);
	int status;
	while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, sizeof err, "gnuplot failed to write %s", p->path);
		outfile_abort(&p->out);
		return fail(p, err);
	}
	return outfile_commit(&p->out, err, sizeof err) || fail(p, err);
}
