/*
 * outfile.c - output files written atomically where that is what the
 * destination wants, straight through where it is not (outfile.h).
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A heap copy of the directory part of path ("." when it has none). */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/*
 * The path output to `path` lands at: symbolic links followed (a dangling
 * one names the file to create), as a heap string; NULL with errno.
 */
static char *resolve(const char *path)
{
	char *cur = strdup(path);
	for (int hops = 0; cur && hops < 40; hops++) {
		struct stat st;
		if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
			return cur;
		char target[PATH_MAX];
		ssize_t n = readlink(cur, target, sizeof target - 1);
		if (n < 0) {
			free(cur);
			return NULL;
		}
		target[n] = '\0';
		char *next;
		if (target[0] == '/') {
			next = strdup(target);
		} else {
			char *dir = dir_of(cur);
			size_t len = strlen(dir) + strlen(target) + 2;
			next = malloc(len);
			if (next)
				snprintf(next, len, "%s/%s", dir, target);
			free(dir);
		}
		free(cur);
		cur = next;
	}
	free(cur);
	errno = ELOOP;
	return NULL;
}

static void fail(char *err, size_t errlen, const char *path, const char *why)
{
	snprintf(err, errlen, "cannot write %s: %s", path, why);
}

/*
 * Whether path names something that exists and is neither a regular file
 * nor a directory (a device, a FIFO, a terminal), following links as
 * open() does: such a destination is written straight through by its own
 * name, which also covers links that only the kernel can follow, such as
 * /dev/stdout to a pipe ("pipe:[1234]").
 */
static bool is_special(const char *path, struct stat *st)
{
	return stat(path, st) == 0 && !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode);
}

bool outfile_check(const char *path, char *err, size_t errlen)
{
	if (!path[0]) {
		fail(err, errlen, "''", "an empty file name");
		return false;
	}
	struct stat st;
	if (is_special(path, &st)) {
		if (access(path, W_OK) != 0) {
			fail(err, errlen, path, strerror(errno));
			return false;
		}
		return true;
	}
	char *real = resolve(path);
	if (!real) {
		fail(err, errlen, path, strerror(errno));
		return false;
	}
	bool ok = true;
	if (stat(real, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			fail(err, errlen, path, "it is a directory");
			ok = false;
		} else if (access(real, W_OK) != 0) {
			fail(err, errlen, path, strerror(errno));
			ok = false;
		}
	}
	if (ok) {
		/* a new or regular file is renamed into its directory */
		char *dir = dir_of(real);
		struct stat ds;
		if (stat(dir, &ds) != 0) {
			fail(err, errlen, path, errno == ENOENT ? "its directory does not exist" : strerror(errno));
			ok = false;
		} else if (!S_ISDIR(ds.st_mode)) {
			char why[PATH_MAX + 32];
			snprintf(why, sizeof why, "%s is not a directory", dir);
			fail(err, errlen, path, why);
			ok = false;
		} else if (access(dir, W_OK | X_OK) != 0) {
			fail(err, errlen, path, "its directory is not writable");
			ok = false;
		}
		free(dir);
	}
	free(real);
	return ok;
}

/*
 * Give the temporary file the owner and group of the file it replaces.
 * Only root may give a file away, and a group only to one of ours; where
 * that is not allowed the new file is simply ours, as any rewrite makes it.
 */
static void keep_owner(int fd, const struct stat *st)
{
	if (st->st_uid == geteuid() && st->st_gid == getegid())
		return;
	int rc = fchown(fd, st->st_uid, st->st_gid);
	if (rc != 0)
		rc = fchown(fd, (uid_t)-1, st->st_gid);
	(void)rc; /* neither permitted: the file stays ours */
}

bool outfile_open(OutFile *o, const char *path, char *err, size_t errlen)
{
	return outfile_open_mode(o, path, 0666, err, errlen);
}

bool outfile_open_mode(OutFile *o, const char *path, int new_mode, char *err, size_t errlen)
{
	*o = (OutFile){0};
	if (!outfile_check(path, err, errlen))
		return false;
	struct stat st;
	if (is_special(path, &st)) {
		/* a device, a FIFO, a terminal: written as it is */
		o->path = strdup(path);
		o->f = o->path ? fopen(path, "w") : NULL;
		if (!o->f) {
			fail(err, errlen, path, strerror(errno));
			free(o->path);
			o->path = NULL;
			return false;
		}
		return true;
	}
	o->path = resolve(path);
	if (!o->path) {
		fail(err, errlen, path, strerror(errno));
		return false;
	}
	bool exists = stat(o->path, &st) == 0;
	if (exists) {
		o->mode = (int)(st.st_mode & 07777);
	} else {
		mode_t mask = umask(0);
		umask(mask);
		o->mode = (int)((mode_t)new_mode & ~mask);
	}
	char *dir = dir_of(o->path);
	const char *base = strrchr(o->path, '/') ? strrchr(o->path, '/') + 1 : o->path;
	size_t len = strlen(dir) + strlen(base) + 16;
	o->tmp = malloc(len);
	if (o->tmp)
		snprintf(o->tmp, len, "%s/.%s.XXXXXX", dir, base);
	free(dir);
	int fd = o->tmp ? mkstemp(o->tmp) : -1;
	if (fd >= 0 && exists)
		keep_owner(fd, &st);
	if (fd < 0 || fchmod(fd, (mode_t)o->mode) != 0 || !(o->f = fdopen(fd, "w"))) {
		fail(err, errlen, path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(o->tmp);
		}
		free(o->tmp);
		free(o->path);
		*o = (OutFile){0};
		return false;
	}
	return true;
}

bool outfile_commit(OutFile *o, char *err, size_t errlen)
{
	bool ok = fflush(o->f) == 0 && !ferror(o->f);
	if (ok && o->tmp && fsync(fileno(o->f)) != 0)
		ok = false;
	int saved = errno;
	if (fclose(o->f) != 0 && ok) {
		ok = false;
		saved = errno;
	}
	if (ok && o->tmp && rename(o->tmp, o->path) != 0) {
		ok = false;
		saved = errno;
	}
	if (!ok) {
		fail(err, errlen, o->path, strerror(saved));
		if (o->tmp)
			unlink(o->tmp);
	} else if (o->tmp) {
		/* the rename itself is durable once the directory is synced */
		char *dir = dir_of(o->path);
		int dfd = open(dir, O_RDONLY | O_DIRECTORY);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
		free(dir);
	}
	free(o->tmp);
	free(o->path);
	*o = (OutFile){0};
	return ok;
}

void outfile_abort(OutFile *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	*o = (OutFile){0};
}

bool outfile_write(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	OutFile o;
	if (!outfile_open(&o, path, err, errlen))
		return false;
	if (len && fwrite(data, 1, len, o.f) != len) {
		fail(err, errlen, path, strerror(errno));
		outfile_abort(&o);
		return false;
	}
	return outfile_commit(&o, err, errlen);
}
