/*
 * ticker.c - the status line of ticker.h: a thread that redraws it.
 *
 * The thread formats into its own buffer (snprintf of integers and
 * strings, no stdio stream) and writes it with write(2), so that a fork
 * made while it draws leaves no stream's lock held in the child; the
 * note is copied under a mutex, which a child never takes.
 */
#include "ticker.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define TICKER_PERIOD_NS 500000000L /* redraws twice a second */

static struct {
	bool on;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t stop_cond;
	bool stop;
	char what[64];
	char note[256];
	double t0, budget;
	int width;
} tk = {.lock = PTHREAD_MUTEX_INITIALIZER, .stop_cond = PTHREAD_COND_INITIALIZER};

void ticker_format(char *buf, int width, const char *what, double elapsed, double budget, const char *note)
{
	enum { BAR = 16 };
	char bar[BAR + 1];
	double frac = budget > 0 ? elapsed / budget : 0;
	int fill = frac >= 1 ? BAR : (int)(frac * BAR);
	for (int i = 0; i < BAR; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[BAR] = '\0';
	int n = snprintf(buf, (size_t)width, "%s [%s] %d/%d s%s%s", what, bar, (int)elapsed, (int)(budget + 0.5),
	                 note && *note ? "  " : "", note ? note : "");
	(void)n; /* truncated at width - 1 characters */
}

static void draw(void)
{
	char note[sizeof tk.note], line[512];
	pthread_mutex_lock(&tk.lock);
	memcpy(note, tk.note, sizeof note);
	pthread_mutex_unlock(&tk.lock);
	int width = tk.width < (int)sizeof line - 8 ? tk.width : (int)sizeof line - 8;
	memcpy(line, "\r\033[K", 4);
	ticker_format(line + 4, width, tk.what, now_seconds() - tk.t0, tk.budget, note);
	size_t len = strlen(line);
	while (len > 0) {
		ssize_t w = write(STDERR_FILENO, line + strlen(line) - len, len);
		if (w <= 0)
			break;
		len -= (size_t)w;
	}
}

static void *run(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&tk.lock);
	while (!tk.stop) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += TICKER_PERIOD_NS;
		if (until.tv_nsec >= 1000000000L)
			until.tv_sec++, until.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&tk.stop_cond, &tk.lock, &until);
		if (tk.stop)
			break;
		pthread_mutex_unlock(&tk.lock);
		draw();
		pthread_mutex_lock(&tk.lock);
	}
	pthread_mutex_unlock(&tk.lock);
	return NULL;
}

bool ticker_begin(const char *what, double budget)
{
	const char *off = getenv("AUTOTM_NO_PROGRESS");
	if (tk.on || !isatty(STDERR_FILENO) || (off && *off))
		return false;
	snprintf(tk.what, sizeof tk.what, "%s", what);
	tk.note[0] = '\0';
	tk.t0 = now_seconds();
	tk.budget = budget;
	tk.stop = false;
	tk.width = 80;
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		tk.width = ws.ws_col;
	fflush(stderr);
	if (pthread_create(&tk.thread, NULL, run, NULL) != 0)
		return false;
	tk.on = true;
	return true;
}

void ticker_note(const char *fmt, ...)
{
	if (!tk.on)
		return;
	pthread_mutex_lock(&tk.lock);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tk.note, sizeof tk.note, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&tk.lock);
}

void ticker_end(void)
{
	if (!tk.on)
		return;
	pthread_mutex_lock(&tk.lock);
	tk.stop = true;
	pthread_cond_signal(&tk.stop_cond);
	pthread_mutex_unlock(&tk.lock);
	pthread_join(tk.thread, NULL);
	tk.on = false;
	static const char clear[] = "\r\033[K";
	if (write(STDERR_FILENO, clear, sizeof clear - 1) < 0) {
		/* nothing to do: the terminal went away */
	}
}
