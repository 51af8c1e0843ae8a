/*
 * profile_db.c - the profile database (SQLite), the machine's identity and
 * the kernel signatures of a training step (see profile.h).
 *
 * The schema (version 2; docs/profiling.md shows it whole):
 *
 *   meta          (key, value)            format = autotm-profiles, version = 2
 *   machines      (machine, cpu, cpus, memory_gib, slow_tier, first_seen)
 *   kernels       (machine, backend, threads, signature, op, nargs, rule, complete, scratch)
 *   measurements  (machine, backend, threads, signature, config, seconds, spread, runs, measured_at)
 *   moves         (machine, backend, threads, direction, mode, bytes, seconds, spread, runs, measured_at)
 *
 * A new database is made whole, schema and all, in a file of its own and
 * linked into place, so no reader ever finds one without its schema.
 * Every write is a statement of its own, committed when it returns, so a
 * profile killed at any point keeps every measurement it finished. The
 * database runs in WAL mode (readers do not block the profiler) with a
 * busy timeout, so two autotmc processes can share it.
 *
 * A file that is not an SQLite database, or one that is but has no
 * `meta` table saying format = autotm-profiles, is refused with a message
 * naming the file; so is a schema version newer than this autotmc knows.
 * A version 1 database (without kernels.scratch) opened for writing is
 * upgraded in place: the column is added, unknown (NULL) for the kernels
 * already there, which a profile then measures.
 * Nothing here assumes the file's contents are well-formed: every SQLite
 * call is checked and its message passed on.
 */
#include "profile.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kdesc.h"
#include "util.h"

struct ProfileDb {
	sqlite3 *h;            /* the connection */
	const char *path;      /* the file, for messages */
	sqlite3_stmt *put_kernel, *put_meas, *put_move; /* prepared writes */
};

static const char schema_sql[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
	"CREATE TABLE machines (\n"
	"  machine TEXT PRIMARY KEY, cpu TEXT NOT NULL, cpus INTEGER NOT NULL,\n"
	"  memory_gib INTEGER NOT NULL, slow_tier TEXT NOT NULL,\n"
	"  first_seen TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')));\n"
	"CREATE TABLE kernels (\n"
	"  machine TEXT NOT NULL, backend TEXT NOT NULL, threads INTEGER NOT NULL, signature TEXT NOT NULL,\n"
	"  op TEXT NOT NULL, nargs INTEGER NOT NULL,\n"
	"  rule TEXT CHECK (rule IN ('noise', 'all', 'additive')),\n"
	"  complete INTEGER NOT NULL DEFAULT 0,\n"
	"  scratch INTEGER,\n"
	"  PRIMARY KEY (machine, backend, threads, signature));\n"
	"CREATE TABLE measurements (\n"
	"  machine TEXT NOT NULL, backend TEXT NOT NULL, threads INTEGER NOT NULL, signature TEXT NOT NULL,\n"
	"  config INTEGER NOT NULL, seconds REAL NOT NULL, spread REAL NOT NULL, runs INTEGER NOT NULL,\n"
	"  measured_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),\n"
	"  PRIMARY KEY (machine, backend, threads, signature, config));\n"
	"CREATE TABLE moves (\n"
	"  machine TEXT NOT NULL, backend TEXT NOT NULL, threads INTEGER NOT NULL,\n"
	"  direction TEXT NOT NULL CHECK (direction IN ('fast_to_slow', 'slow_to_fast')),\n"
	"  mode TEXT NOT NULL CHECK (mode IN ('sync', 'async')),\n"
	"  bytes INTEGER NOT NULL, seconds REAL NOT NULL, spread REAL NOT NULL, runs INTEGER NOT NULL,\n"
	"  measured_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),\n"
	"  PRIMARY KEY (machine, backend, threads, direction, mode, bytes));\n"
	"INSERT INTO meta VALUES ('format', 'autotm-profiles'), ('version', '2'),\n"
	"  ('about', 'kernel and move times measured by autotmc profile (docs/profiling.md)');\n";

static const char *const rule_names[] = {NULL, "noise", "all", "additive"};

/* ---- the machine ------------------------------------------------------------ */

/* The value of the first line of a /proc file starting with `key`, after its ':'. */
static bool proc_field(const char *path, const char *key, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char line[512];
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, key, strlen(key)) != 0 || !colon)
			continue;
		colon++;
		colon += strspn(colon, " \t");
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, size, "%s", colon);
		found = true;
	}
	fclose(f);
	return found;
}

/* Undo /proc/self/mounts' octal escapes (\040 for a space) in place. */
static void unescape_mount(char *s)
{
	char *d = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/* "ext4", or "ext4-dax" when mounted with -o dax: the file system holding dir. */
static void fs_of(const char *dir, char *buf, size_t size)
{
	snprintf(buf, size, "unknown");
	char real[PATH_MAX];
	FILE *f;
	if (!realpath(dir, real) || !(f = fopen("/proc/self/mounts", "r")))
		return;
	char line[4096];
	size_t best = 0;
	while (fgets(line, sizeof line, f)) {
		char *save = NULL, *dev = strtok_r(line, " ", &save), *mnt = strtok_r(NULL, " ", &save);
		char *type = strtok_r(NULL, " ", &save), *opts = strtok_r(NULL, " ", &save);
		if (!dev || !mnt || !type || !opts)
			continue;
		unescape_mount(mnt);
		size_t n = strlen(mnt);
		bool under = strcmp(mnt, "/") == 0 || (strncmp(real, mnt, n) == 0 && (real[n] == '/' || real[n] == '\0'));
		if (!under || n < best)
			continue; /* the longest mount point holding dir wins; a later one shadows an earlier */
		best = n;
		bool dax = strstr(opts, "dax") && !strstr(opts, "dax=never");
		snprintf(buf, size, "%s%s", type, dax ? "-dax" : "");
	}
	fclose(f);
}

void profile_machine(const ProfileOptions *o, ProfileMachine *m)
{
	memset(m, 0, sizeof *m);
	if (!proc_field("/proc/cpuinfo", "model name", m->cpu, sizeof m->cpu) &&
	    !proc_field("/proc/cpuinfo", "cpu model", m->cpu, sizeof m->cpu) &&
	    !proc_field("/proc/cpuinfo", "Hardware", m->cpu, sizeof m->cpu))
		snprintf(m->cpu, sizeof m->cpu, "unknown CPU");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	m->cpus = cpus > 0 ? (int)cpus : 1;
	char mem[64];
	if (proc_field("/proc/meminfo", "MemTotal", mem, sizeof mem))
		m->memory_gib = (strtoll(mem, NULL, 10) + (1 << 19)) >> 20; /* kB -> GiB, rounded */
	if (o->slow_kind == RT_SLOW_TIER_DAX) {
		snprintf(m->slow, sizeof m->slow, "dax-kmem");
	} else if (o->slow_kind == RT_SLOW_TIER_NUMA) {
		snprintf(m->slow, sizeof m->slow, "numa:%d", o->numa_node);
	} else {
		const char *tmp = getenv("TMPDIR");
		const char *dir = o->slow_dir && o->slow_dir[0] ? o->slow_dir : tmp && tmp[0] ? tmp : "/tmp";
		char fs[64];
		fs_of(dir, fs, sizeof fs);
		snprintf(m->slow, sizeof m->slow, "pmem on %s", fs);
	}
	snprintf(m->key, sizeof m->key, "%s; %d cpus; %lld GiB; slow: %s", m->cpu, m->cpus, (long long)m->memory_gib,
	         m->slow);
}

const char *profile_default_db(Arena *a)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (xdg && xdg[0])
		return arena_printf(a, "%s/autotm/profiles.db", xdg);
	return arena_printf(a, "%s/.cache/autotm/profiles.db", home && home[0] ? home : "/tmp");
}

void profile_resolve(const ProfileOptions *in, ProfileOptions *out, Arena *a)
{
	*out = *in;
	if (!out->db || !out->db[0])
		out->db = profile_default_db(a);
	if (out->threads <= 0)
		out->threads = online_cores(); /* what generated programs use by default */
	if (out->runs <= 0)
		out->runs = 5;
	if (out->warmup <= 0)
		out->warmup = 1;
	if (!(out->max_seconds > 0))
		out->max_seconds = 1.0;
	if (!(out->noise_floor > 0))
		out->noise_floor = 0.02;
	if (out->max_full_args <= 0)
		out->max_full_args = 4;
	if (out->max_full_args > 8)
		out->max_full_args = 8;
}

/* ---- signatures ------------------------------------------------------------- */

static uint64_t hash_text(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

ProfileSig *profile_sig_find(const ProfileSigs *sigs, const char *text)
{
	size_t mask = (size_t)sigs->nslots - 1;
	for (size_t i = hash_text(text) & mask;; i = (i + 1) & mask) {
		int at = sigs->slots[i];
		if (at < 0)
			return NULL;
		if (strcmp(sigs->v[at]->text, text) == 0)
			return sigs->v[at];
	}
}

ProfileSigs *profile_signatures(const Graph *g, const Schedule *s, Arena *a)
{
	ProfileSigs *sigs = arena_alloc(a, sizeof *sigs);
	sigs->nslots = 16;
	while (sigs->nslots < 2 * s->n + 2)
		sigs->nslots *= 2;
	sigs->slots = arena_array(a, (size_t)sigs->nslots, sizeof(int));
	for (int i = 0; i < sigs->nslots; i++)
		sigs->slots[i] = -1;
	sigs->v = arena_array(a, (size_t)s->n + 1, sizeof *sigs->v);
	sigs->of_node = arena_array(a, (size_t)g->nodes.n + 1, sizeof(int));
	for (int i = 0; i < g->nodes.n; i++)
		sigs->of_node[i] = -1;
	int64_t desc[RT_DESC_LEN];
	char text[KDESC_SIGNATURE_MAX];
	for (int step = 0; step < s->n; step++) {
		const Node *n = s->order[step];
		node_describe(n, desc);
		desc[RT_D_SEED] = 0; /* the dropout stream does not change the time */
		kdesc_signature(desc, text, sizeof text);
		size_t mask = (size_t)sigs->nslots - 1, i = hash_text(text) & mask;
		while (sigs->slots[i] >= 0 && strcmp(sigs->v[sigs->slots[i]]->text, text) != 0)
			i = (i + 1) & mask;
		if (sigs->slots[i] < 0) {
			ProfileSig *sig = arena_alloc(a, sizeof *sig);
			sig->text = arena_strdup(a, text);
			sig->desc = arena_array(a, RT_DESC_LEN, sizeof(int64_t));
			memcpy(sig->desc, desc, sizeof desc);
			sig->first = n;
			sig->nargs = n->nin + n->nout;
			sig->scratch = -1;
			sigs->slots[i] = sigs->n;
			sigs->v[sigs->n++] = sig;
		}
		sigs->v[sigs->slots[i]]->nodes++;
		sigs->of_node[n->id] = sigs->slots[i];
	}
	return sigs;
}

const ProfileMeas *profile_sig_meas(const ProfileSig *sig, uint32_t config)
{
	for (int i = 0; i < sig->meas.n; i++)
		if (sig->meas.v[i].config == config)
			return &sig->meas.v[i];
	return NULL;
}

/* ---- the database ------------------------------------------------------------- */

/* "PATH: what: SQLite's message"; returns false. */
static bool db_error(const ProfileDb *db, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "profile database %s: %s: %s", db->path, what, sqlite3_errmsg(db->h));
	return false;
}

/* Run SQL without results; false (and err) on failure. */
static bool exec(ProfileDb *db, const char *sql, const char *what, char *err, size_t errlen)
{
	char *msg = NULL;
	if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) == SQLITE_OK)
		return true;
	snprintf(err, errlen, "profile database %s: %s: %s", db->path, what, msg ? msg : sqlite3_errmsg(db->h));
	sqlite3_free(msg);
	return false;
}

/* The value of meta key `key` into buf; 1 found, 0 not found, -1 error (err set). */
static int meta_get(ProfileDb *db, const char *key, char *buf, size_t size, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) != SQLITE_OK)
		return db_error(db, "reading its metadata", err, errlen), -1;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st), found = 0;
	if (rc == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);
		snprintf(buf, size, "%s", v ? (const char *)v : "");
		found = 1;
	} else if (rc != SQLITE_DONE) {
		db_error(db, "reading its metadata", err, errlen);
		found = -1;
	}
	sqlite3_finalize(st);
	return found;
}

/* Tables in the file; -1 (and err) when it cannot be read as SQLite. */
static int count_tables(ProfileDb *db, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int n = -1;
	if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	if (n < 0) {
		int code = sqlite3_extended_errcode(db->h) & 0xff;
		if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
			snprintf(err, errlen,
			         "the profile database %s is damaged or not an SQLite database (%s): move it away and "
			         "profile again (autotmc profile), or give another file with --profile-db",
			         db->path, sqlite3_errmsg(db->h));
		else
			snprintf(err, errlen, "cannot read the profile database %s: %s", db->path, sqlite3_errmsg(db->h));
	}
	sqlite3_finalize(st);
	return n;
}

/* Create the schema in an empty database, unless another process just did. */
static bool create_schema(ProfileDb *db, char *err, size_t errlen)
{
	if (!exec(db, "BEGIN IMMEDIATE", "starting a transaction", err, errlen))
		return false;
	int n = count_tables(db, err, errlen);
	if (n < 0 || (n == 0 && !exec(db, schema_sql, "creating the schema", err, errlen))) {
		sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
		return false;
	}
	return exec(db, "COMMIT", "creating the schema", err, errlen);
}

/* Version 1 -> 2: kernels gain their scratch (unknown for the rows there), unless another process just did it. */
static bool upgrade_schema(ProfileDb *db, char *err, size_t errlen)
{
	char version[32];
	if (!exec(db, "BEGIN IMMEDIATE", "starting a transaction", err, errlen))
		return false;
	int rc = meta_get(db, "version", version, sizeof version, err, errlen);
	bool ok = rc >= 0 && (rc == 0 || strcmp(version, "1") != 0 ||
	                      exec(db,
	                           "ALTER TABLE kernels ADD COLUMN scratch INTEGER; "
	                           "UPDATE meta SET value = '2' WHERE key = 'version'",
	                           "upgrading it from schema version 1 to 2", err, errlen));
	if (!ok) {
		sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
		return false;
	}
	return exec(db, "COMMIT", "upgrading it from schema version 1 to 2", err, errlen);
}

/*
 * Is it ours, and of a version we read? A version 1 file is upgraded when
 * open for writing; else *old is set (and err).
 */
static bool check_schema(ProfileDb *db, bool writable, bool *old, char *err, size_t errlen)
{
	char format[128], version[32];
	sqlite3_stmt *st = NULL;
	bool has_meta = sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = 'format'", -1, &st, NULL) ==
	                SQLITE_OK;
	sqlite3_finalize(st);
	if (!has_meta) {
		snprintf(err, errlen,
		         "%s is an SQLite database but not an autotm profile database (it has no table 'meta'); "
		         "give another file with --profile-db",
		         db->path);
		return false;
	}
	int rc = meta_get(db, "format", format, sizeof format, err, errlen);
	if (rc < 0)
		return false;
	if (rc == 0 || strcmp(format, "autotm-profiles") != 0) {
		snprintf(err, errlen,
		         "%s is an SQLite database but not an autotm profile database (its meta table has no "
		         "format 'autotm-profiles'); give another file with --profile-db",
		         db->path);
		return false;
	}
	rc = meta_get(db, "version", version, sizeof version, err, errlen);
	if (rc < 0)
		return false;
	long v = rc ? strtol(version, NULL, 10) : 0;
	if (v == 1 && writable)
		return upgrade_schema(db, err, errlen);
	if (v == 1) {
		*old = true;
		snprintf(err, errlen,
		         "%s: profile database schema version 1, which lacks the kernels' scratch memory; run autotmc "
		         "profile with it once (it needs write access) to upgrade it",
		         db->path);
		return false;
	}
	if (v != PROFILE_SCHEMA_VERSION) {
		snprintf(err, errlen, "%s: profile database schema version %s, but this autotmc reads version %d%s", db->path,
		         rc ? version : "(none)", PROFILE_SCHEMA_VERSION,
		         v > PROFILE_SCHEMA_VERSION ? " (it was written by a newer autotmc)" : "");
		return false;
	}
	return true;
}

/* mkdir -p of the directory holding path. */
bool pdb_make_parent(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return true;
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create the directory %s for the profile database: %s", dir,
			         strerror(errno));
			return false;
		}
		*p = c;
		if (!c)
			return true;
	}
}

static bool prepare(ProfileDb *db, const char *sql, sqlite3_stmt **st, char *err, size_t errlen)
{
	if (sqlite3_prepare_v2(db->h, sql, -1, st, NULL) == SQLITE_OK)
		return true;
	return db_error(db, "preparing a statement (is it a profile database of this version?)", err, errlen);
}

/*
 * Make the database at path whole or not at all: the schema is written to
 * a file of its own beside it (PATH.new.PID), which is then linked to
 * path unless another process got there first. So a database that exists
 * always has its schema, and a reader starting beside the first profiler
 * never finds it empty. True when path holds a database now.
 */
static bool create_whole(const char *path, char *err, size_t errlen)
{
	if (access(path, F_OK) == 0)
		return true;
	char tmp[PATH_MAX + 32];
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.new.%ld", path, (long)getpid()) >= sizeof tmp) {
		snprintf(err, errlen, "the profile database's path %s is too long", path);
		return false;
	}
	unlink(tmp); /* a leftover of a killed process with this pid */
	ProfileDb db = {.path = path};
	bool ok = sqlite3_open_v2(tmp, &db.h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) == SQLITE_OK;
	if (!ok)
		snprintf(err, errlen, "cannot create the profile database %s: %s", path,
		         db.h ? sqlite3_errmsg(db.h) : "out of memory");
	ok = ok && exec(&db, schema_sql, "creating the schema", err, errlen);
	if (db.h && sqlite3_close(db.h) != SQLITE_OK && ok) {
		snprintf(err, errlen, "cannot create the profile database %s: closing it failed", path);
		ok = false;
	}
	if (ok && link(tmp, path) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create the profile database %s: %s", path, strerror(errno));
		ok = false;
	}
	unlink(tmp);
	return ok;
}

ProfileDb *pdb_open(const char *path, bool create, char *err, size_t errlen)
{
	if (create && (!pdb_make_parent(path, err, errlen) || !create_whole(path, err, errlen)))
		return NULL;
	if (!create && access(path, F_OK) != 0) {
		snprintf(err, errlen, "no profile database at %s (run autotmc profile first)", path);
		return NULL;
	}
	ProfileDb *db = xcalloc(1, sizeof *db);
	db->path = xstrdup(path);
	/*
	 * Reading needs no write access: a shared database, or one on a
	 * read-only mount, serves placements. A write-ahead-logged database
	 * whose directory cannot take the log's index is read as immutable.
	 */
	int flags = create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
	int n = -1;
	for (int immutable = 0; immutable < 2 && n < 0; immutable++) {
		if (db->h)
			sqlite3_close(db->h);
		db->h = NULL;
		int rc;
		if (!immutable) {
			rc = sqlite3_open_v2(path, &db->h, flags, NULL);
		} else {
			/* file:PATH?immutable=1, with the path's own '%', '?' and '#' escaped */
			char *uri = sqlite3_mprintf("file:");
			for (const char *q = path; uri && *q; q++)
				uri = strchr("%?#", *q) ? sqlite3_mprintf("%z%%%02X", uri, (unsigned char)*q)
				                        : sqlite3_mprintf("%z%c", uri, *q);
			uri = uri ? sqlite3_mprintf("%z?immutable=1", uri) : NULL;
			rc = uri ? sqlite3_open_v2(uri, &db->h, flags | SQLITE_OPEN_URI, NULL) : SQLITE_NOMEM;
			sqlite3_free(uri);
		}
		if (rc != SQLITE_OK) {
			snprintf(err, errlen, "cannot open the profile database %s: %s", path,
			         db->h ? sqlite3_errmsg(db->h) : "out of memory");
			pdb_close(db);
			return NULL;
		}
		sqlite3_busy_timeout(db->h, 30000);
		n = count_tables(db, err, errlen);
		int code = n < 0 ? sqlite3_extended_errcode(db->h) & 0xff : SQLITE_OK;
		if (create || (code != SQLITE_CANTOPEN && code != SQLITE_READONLY && code != SQLITE_IOERR))
			break;
	}
	bool ok = n >= 0;
	if (ok && n == 0) {
		if (!create) {
			snprintf(err, errlen, "the profile database %s is empty (run autotmc profile first)", path);
			ok = false;
		} else {
			ok = create_schema(db, err, errlen);
		}
	}
	bool old = false;
	ok = ok && check_schema(db, create, &old, err, errlen);
	if (!ok && old && access(path, W_OK) == 0) {
		pdb_close(db); /* a version 1 file we may write: upgrade it (readers then use the new column) */
		return pdb_open(path, true, err, errlen);
	}
	/* WAL: readers do not wait for the profiler; NORMAL: a commit survives a
	   killed process (not necessarily a power cut), which is what resuming needs. */
	ok = ok && (!create ||
	            exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL", "setting its journal mode", err,
	                 errlen));
	ok = ok &&
	     prepare(db,
	             "INSERT INTO kernels (machine, backend, threads, signature, op, nargs, rule, complete, scratch) "
	             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
	             "ON CONFLICT (machine, backend, threads, signature) DO UPDATE SET "
	             "rule = excluded.rule, complete = excluded.complete, scratch = excluded.scratch",
	             &db->put_kernel, err, errlen) &&
	     prepare(db,
	             "INSERT OR REPLACE INTO measurements (machine, backend, threads, signature, config, seconds, "
	             "spread, runs) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	             &db->put_meas, err, errlen) &&
	     prepare(db,
	             "INSERT OR REPLACE INTO moves (machine, backend, threads, direction, mode, bytes, seconds, "
	             "spread, runs) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	             &db->put_move, err, errlen);
	if (!ok) {
		pdb_close(db);
		return NULL;
	}
	return db;
}

void pdb_close(ProfileDb *db)
{
	if (!db)
		return;
	sqlite3_finalize(db->put_kernel);
	sqlite3_finalize(db->put_meas);
	sqlite3_finalize(db->put_move);
	sqlite3_close(db->h);
	free((char *)db->path);
	free(db);
}

/* Step a prepared write once and reset it. */
static bool run_write(ProfileDb *db, sqlite3_stmt *st, const char *what, char *err, size_t errlen)
{
	int rc = sqlite3_step(st);
	bool ok = rc == SQLITE_DONE || db_error(db, what, err, errlen);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return ok;
}

static void bind_key(sqlite3_stmt *st, const ProfileKey *k)
{
	sqlite3_bind_text(st, 1, k->machine, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, k->backend, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 3, k->threads);
}

bool pdb_add_machine(ProfileDb *db, const ProfileMachine *m, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (!prepare(db,
	             "INSERT OR IGNORE INTO machines (machine, cpu, cpus, memory_gib, slow_tier) VALUES (?, ?, ?, ?, ?)",
	             &st, err, errlen))
		return false;
	sqlite3_bind_text(st, 1, m->key, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, m->cpu, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 3, m->cpus);
	sqlite3_bind_int64(st, 4, m->memory_gib);
	sqlite3_bind_text(st, 5, m->slow, -1, SQLITE_TRANSIENT);
	bool ok = run_write(db, st, "recording the machine", err, errlen);
	sqlite3_finalize(st);
	return ok;
}

bool pdb_put_kernel(ProfileDb *db, const ProfileKey *k, const ProfileSig *sig, char *err, size_t errlen)
{
	sqlite3_stmt *st = db->put_kernel;
	bind_key(st, k);
	sqlite3_bind_text(st, 4, sig->text, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, op_info[sig->desc[RT_D_OP]].name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 6, sig->nargs);
	if (rule_names[sig->rule])
		sqlite3_bind_text(st, 7, rule_names[sig->rule], -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 7);
	sqlite3_bind_int(st, 8, sig->complete);
	if (sig->scratch >= 0)
		sqlite3_bind_int64(st, 9, sig->scratch);
	else
		sqlite3_bind_null(st, 9);
	return run_write(db, st, "recording a kernel", err, errlen);
}

bool pdb_put_meas(ProfileDb *db, const ProfileKey *k, const ProfileSig *sig, const ProfileMeas *m, char *err,
                  size_t errlen)
{
	sqlite3_stmt *st = db->put_meas;
	bind_key(st, k);
	sqlite3_bind_text(st, 4, sig->text, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 5, m->config);
	sqlite3_bind_double(st, 6, m->seconds);
	sqlite3_bind_double(st, 7, m->spread);
	sqlite3_bind_int(st, 8, m->runs);
	return run_write(db, st, "recording a measurement", err, errlen);
}

bool pdb_put_move(ProfileDb *db, const ProfileKey *k, const ProfileMove *m, char *err, size_t errlen)
{
	sqlite3_stmt *st = db->put_move;
	bind_key(st, k);
	sqlite3_bind_text(st, 4, m->to_slow ? "fast_to_slow" : "slow_to_fast", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, m->async ? "async" : "sync", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, m->bytes);
	sqlite3_bind_double(st, 7, m->seconds);
	sqlite3_bind_double(st, 8, m->spread);
	sqlite3_bind_int(st, 9, m->runs);
	return run_write(db, st, "recording a move", err, errlen);
}

static ProfileRule rule_of(const unsigned char *text)
{
	for (int r = RULE_NOISE; r <= RULE_ADDITIVE; r++)
		if (text && strcmp((const char *)text, rule_names[r]) == 0)
			return (ProfileRule)r;
	return RULE_UNDECIDED;
}

/* Does sig have every measurement its rule needs? */
static bool has_needed(const ProfileSig *sig)
{
	uint32_t all = (uint32_t)((UINT64_C(1) << sig->nargs) - 1);
	bool ok = profile_sig_meas(sig, 0) && profile_sig_meas(sig, all);
	if (sig->rule == RULE_ALL)
		for (uint32_t c = 1; ok && c < all; c++)
			ok = profile_sig_meas(sig, c) != NULL;
	else if (sig->rule == RULE_ADDITIVE)
		for (int i = 0; ok && i < sig->nargs; i++)
			ok = profile_sig_meas(sig, UINT32_C(1) << i) != NULL;
	return ok;
}

bool pdb_load_kernels(ProfileDb *db, const ProfileKey *k, ProfileSigs *sigs, Arena *a, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (!prepare(db,
	             "SELECT signature, rule, complete, nargs, scratch FROM kernels "
	             "WHERE machine = ?1 AND backend = ?2 AND threads = ?3",
	             &st, err, errlen))
		return false;
	bind_key(st, k);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *text = sqlite3_column_text(st, 0);
		ProfileSig *sig = text ? profile_sig_find(sigs, (const char *)text) : NULL;
		if (!sig || sqlite3_column_int(st, 3) != sig->nargs)
			continue;
		sig->known = true;
		sig->rule = rule_of(sqlite3_column_text(st, 1));
		sig->complete = sqlite3_column_int(st, 2) != 0 && sig->rule != RULE_UNDECIDED;
		sig->scratch = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 4);
		if (sig->scratch < 0 || sig->scratch > PROFILE_MAX_SCRATCH)
			sig->scratch = -1; /* unknown, or damage: measured again */
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_error(db, "reading the kernels", err, errlen);
	if (!prepare(db,
	             "SELECT signature, config, seconds, spread, runs FROM measurements "
	             "WHERE machine = ?1 AND backend = ?2 AND threads = ?3",
	             &st, err, errlen))
		return false;
	bind_key(st, k);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *text = sqlite3_column_text(st, 0);
		ProfileSig *sig = text ? profile_sig_find(sigs, (const char *)text) : NULL;
		int64_t config = sqlite3_column_int64(st, 1);
		double sec = sqlite3_column_double(st, 2);
		if (!sig || !sig->known || config < 0 || config >= (INT64_C(1) << sig->nargs) ||
		    profile_sig_meas(sig, (uint32_t)config))
			continue;
		if (!(sec >= 0 && sec <= PROFILE_MAX_SECONDS)) {
			sqlite3_finalize(st);
			snprintf(err, errlen,
			         "the profile database %s is damaged: kernel %s, configuration %#llx, has a time of %g s "
			         "(expected 0 to %g s); move it away and profile again",
			         db->path, sig->text, (unsigned long long)config, sec, PROFILE_MAX_SECONDS);
			return false;
		}
		ProfileMeas m = {(uint32_t)config, sec, sqlite3_column_double(st, 3), sqlite3_column_int(st, 4)};
		vec_push(a, &sig->meas, m);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_error(db, "reading the measurements", err, errlen);
	/* A kernel marked complete whose rows were deleted since is measured again. */
	for (int i = 0; i < sigs->n; i++)
		if (sigs->v[i]->complete && !has_needed(sigs->v[i]))
			sigs->v[i]->complete = false;
	return true;
}

bool pdb_load_moves(ProfileDb *db, const ProfileKey *k, ProfileMoves *out, Arena *a, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (!prepare(db,
	             "SELECT direction, mode, bytes, seconds, spread, runs FROM moves "
	             "WHERE machine = ?1 AND backend = ?2 AND threads = ?3 ORDER BY direction, mode, bytes",
	             &st, err, errlen))
		return false;
	bind_key(st, k);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *dir = sqlite3_column_text(st, 0), *mode = sqlite3_column_text(st, 1);
		ProfileMove m = {
			.to_slow = dir && strcmp((const char *)dir, "fast_to_slow") == 0,
			.async = mode && strcmp((const char *)mode, "async") == 0,
			.bytes = sqlite3_column_int64(st, 2),
			.seconds = sqlite3_column_double(st, 3),
			.spread = sqlite3_column_double(st, 4),
			.runs = sqlite3_column_int(st, 5),
		};
		if (m.bytes <= 0)
			continue;
		if (!(m.seconds > 0 && m.seconds <= PROFILE_MAX_SECONDS)) {
			sqlite3_finalize(st);
			snprintf(err, errlen,
			         "the profile database %s is damaged: a move of %lld bytes has a time of %g s (expected "
			         "more than 0 and at most %g s); move it away and profile again",
			         db->path, (long long)m.bytes, m.seconds, PROFILE_MAX_SECONDS);
			return false;
		}
		vec_push(a, out, m);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_error(db, "reading the moves", err, errlen);
	return true;
}
