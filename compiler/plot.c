/*
 * plot.c - drawing with gnuplot (see plot.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "diag.h"
#include "plot.h"

bool plot_open(Plot *p, const char *path, int width, int height)
{
	*p = (Plot){.path = path};
	const char *ext = strrchr(path, '.');
	bool svg = ext && strcmp(ext, ".svg") == 0;
	if (!ext || (!svg && strcmp(ext, ".png") != 0)) {
		error_plain("%s: a plot is written as .png or .svg", path);
		return false;
	}
	char err[512];
	if (!outfile_open(&p->out, path, err, sizeof err)) {
		error_plain("%s", err);
		return false;
	}
	int fds[2];
	if (pipe(fds) != 0) {
		error_plain("cannot start gnuplot: %s", strerror(errno));
		outfile_abort(&p->out);
		return false;
	}
	fflush(NULL);
	p->pid = fork();
	if (p->pid == 0) {
		dup2(fds[0], 0);
		dup2(fileno(p->out.f), 1);
		close(fds[0]);
		close(fds[1]);
		execlp("gnuplot", "gnuplot", (char *)NULL);
		fprintf(stderr, "autotmc: error: cannot run gnuplot: %s (Debian package: gnuplot-nox)\n", strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	p->f = p->pid > 0 ? fdopen(fds[1], "w") : NULL;
	if (!p->f) {
		error_plain("cannot start gnuplot: %s", strerror(errno));
		close(fds[1]);
		if (p->pid > 0)
			waitpid(p->pid, NULL, 0);
		outfile_abort(&p->out);
		return false;
	}
	fprintf(p->f, "set terminal %s size %d,%d\nset output\n", svg ? "svg" : "png", width, height);
	return true;
}

bool plot_close(Plot *p)
{
	fclose(p->f);
	int status;
	while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		error_plain("gnuplot failed to write %s", p->path);
		outfile_abort(&p->out);
		return false;
	}
	char err[512];
	if (!outfile_commit(&p->out, err, sizeof err)) {
		error_plain("%s", err);
		return false;
	}
	return true;
}
