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
 * mkstemp's template for the temporary file that becomes dir/base:
 * "DIR/.BASE.XXXXXX", or "DIR/.autotmc.XXXXXX" where that name would be
 * longer than the directory's file system allows (a legal name of 248 to
 * 255 bytes) or the path longer than PATH_MAX. A heap string; NULL with
 * errno ENAMETOOLONG when even the short one does not fit.
 */
static char *tmp_template(const char *dir, const char *base)
{
	long name_max = pathconf(dir, _PC_NAME_MAX);
	if (name_max <= 0)
		name_max = NAME_MAX;
	size_t own_len = strlen(dir) + strlen(base) + sizeof "/..XXXXXX"; /* with the NUL */
	bool own = strlen(base) + sizeof "..XXXXXX" - 1 <= (size_t)name_max && own_len <= PATH_MAX;
	size_t len = own ? own_len : strlen(dir) + sizeof "/.autotmc.XXXXXX";
	if (len > PATH_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	char *t = malloc(len);
	if (t)
		snprintf(t, len, "%s/.%s.XXXXXX", dir, own ? base : "autotmc");
	return t;
}

/* Whether the temporary file for path (resolved, a regular or new file) can be named; false with errno. */
static bool tmp_fits(const char *real)
{
	char *dir = dir_of(real);
	const char *slash = strrchr(real, '/');
	char *t = dir ? tmp_template(dir, slash ? slash + 1 : real) : NULL;
	int saved = errno;
	free(dir);
	free(t);
	errno = saved;
	return t != NULL;
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
	} else if (errno == ENAMETOOLONG) { /* a name or a path longer than the system takes */
		fail(err, errlen, path, strerror(errno));
		ok = false;
	}
	if (ok && !tmp_fits(real)) {
		fail(err, errlen, path, "the path is too long for the temporary file it is written through");
		ok = false;
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
	o->tmp = dir ? tmp_template(dir, base) : NULL;
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

/*
 * Where path lands, for comparing: links followed, the directory made
 * absolute by realpath; a heap string, NULL when it cannot be resolved.
 */
static char *canonical(const char *path)
{
	char *real = resolve(path), *dir = real ? dir_of(real) : NULL;
	char *abs = dir ? realpath(dir, NULL) : NULL, *out = NULL;
	if (abs) {
		const char *slash = strrchr(real, '/'), *base = slash ? slash + 1 : real;
		size_t len = strlen(abs) + strlen(base) + 2;
		if ((out = malloc(len)))
			snprintf(out, len, "%s/%s", strcmp(abs, "/") ? abs : "", base);
	}
	free(real);
	free(dir);
	free(abs);
	return out;
}

bool outfile_same(const char *a, const char *b)
{
	struct stat sa, sb;
	bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
	if (ea || eb) /* a device or FIFO is written straight through, and shared harmlessly */
		return ea && eb && S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	char *ca = canonical(a), *cb = canonical(b);
	bool same = ca && cb && strcmp(ca, cb) == 0;
	free(ca);
	free(cb);
	return same;
}

bool outfile_clash(const FileUse *u, int n, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			const FileUse *x = &u[i], *y = &u[j];
			if (!x->path || !y->path || (!x->writes && !y->writes))
				continue;
			if (!x->writes) { /* the output first */
				const FileUse *t = x;
				x = y;
				y = t;
			}
			if (x->may_replace && !y->writes && strcmp(x->may_replace, y->flag) == 0)
				continue;
			if (!outfile_same(x->path, y->path))
				continue;
			if (y->writes)
				snprintf(err, errlen, "%s %s and %s %s name the same file; give each output a file of its own",
				         x->flag, x->path, y->flag, y->path);
			else
				snprintf(err, errlen, "%s %s would replace %s %s, which is read by this run; write it to "
				         "another file", x->flag, x->path, y->flag, y->path);
			return true;
		}
	return false;
}
