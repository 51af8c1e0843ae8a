/*
 * tempfiles.c - the temporary files autotmc makes on the way to a program
 * (the object, the linker's output in $TMPDIR, a program and its checksum
 * about to enter the cache), removed however the process ends (see
 * tempfiles.h).
 *
 * Each is tracked from just before it is made until it is renamed or
 * removed. A handler for SIGINT, SIGTERM and SIGHUP (Ctrl-C during a long
 * link) unlinks the tracked files, which is async-signal-safe, then lets
 * the signal end the process as it would have. The paths live in fixed
 * slots, so the handler touches no allocator; a slot's path is written
 * before it is marked in use and unmarked before it is reused.
 *
 * SIGKILL runs no handler, so every such name carries its maker's pid
 * (autotm-link.PID.XXXXXX, NAME-HASH.tmpPID...), and temp_sweep removes,
 * from a directory, the ones whose process is gone: regular files owned
 * by this user, of a pid that no longer exists (kill(pid, 0) fails with
 * ESRCH). A live process's files, another user's, and anything else are
 * left alone.
 */
#include "tempfiles.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { TEMP_SLOTS = 8 };

static char slot_path[TEMP_SLOTS][PATH_MAX];
static volatile sig_atomic_t slot_used[TEMP_SLOTS];
static const int caught[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction before[3]; /* each caught signal's action before ours */

/* Only async-signal-safe calls: unlink, sigaction, raise. */
static void on_signal(int sig)
{
	for (int i = 0; i < TEMP_SLOTS; i++)
		if (slot_used[i])
			unlink(slot_path[i]);
	for (int i = 0; i < 3; i++)
		if (caught[i] == sig)
			sigaction(sig, &before[i], NULL);
	raise(sig);
}

static void install(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++) {
		sigaction(caught[i], NULL, &before[i]);
		if (before[i].sa_handler != SIG_IGN) /* a signal ignored (nohup) stays ignored */
			sigaction(caught[i], &sa, NULL);
	}
}

void temp_track(const char *path)
{
	install();
	for (int i = 0; i < TEMP_SLOTS; i++)
		if (!slot_used[i]) {
			snprintf(slot_path[i], sizeof slot_path[i], "%s", path);
			slot_used[i] = 1;
			return;
		}
	/* more at once than autotmc ever makes: the file is only not removed on a signal */
}

void temp_untrack(const char *path)
{
	for (int i = 0; i < TEMP_SLOTS; i++)
		if (slot_used[i] && strcmp(slot_path[i], path) == 0) {
			slot_used[i] = 0;
			return;
		}
}

/*
 * The pid in name when it is prefix, digits and then `after` (a character
 * that must follow them, '\0' for the end of the name), else 0.
 */
static long pid_after(const char *name, const char *prefix, char after)
{
	size_t n = strlen(prefix);
	if (strncmp(name, prefix, n) != 0 || name[n] < '0' || name[n] > '9')
		return 0;
	char *end;
	errno = 0;
	long pid = strtol(name + n, &end, 10);
	return errno || pid <= 0 || pid > INT_MAX || *end != after ? 0 : pid;
}

/* The pid a temporary name carries: PREFIX.PID.XXXXXX, or NAME.tmpPID, NAME.tmpPID.o, NAME.tmpPID.sum. */
static long pid_of(const char *name, const char *prefix)
{
	if (prefix)
		return pid_after(name, prefix, '.');
	const char *tmp = strstr(name, ".tmp");
	while (tmp && !pid_after(tmp, ".tmp", '\0') && !pid_after(tmp, ".tmp", '.'))
		tmp = strstr(tmp + 1, ".tmp");
	if (!tmp)
		return 0;
	long pid = pid_after(tmp, ".tmp", '\0');
	if (pid)
		return pid;
	pid = pid_after(tmp, ".tmp", '.');
	const char *rest = strchr(tmp + 4, '.');
	return rest && (strcmp(rest, ".o") == 0 || strcmp(rest, ".sum") == 0) ? pid : 0;
}

void temp_sweep(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		long pid = pid_of(e->d_name, prefix);
		if (!pid || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		char path[PATH_MAX];
		struct stat st;
		if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path &&
		    lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
			unlink(path);
	}
	closedir(d);
}
