/*
 * profile.h - the profile database: every kernel of a training step timed
 * with its arguments in each tier, and the moves between the tiers.
 *
 * The placement optimizers need, for every kernel, its time under each IO
 * configuration (a bit per argument, inputs then outputs: set = the slow
 * tier) and the time of a move of any size in each direction. profile_cpu.c
 * measures them on this machine (autotm/profile.h does the timing) and
 * stores them in a SQLite database keyed by
 *
 *   (machine, backend, threads, signature, configuration)
 *
 * where the machine is this machine's identity (CPU model, logical CPUs,
 * memory, slow tier kind: profile_machine) and the signature is the
 * kernel's description as text (kdesc.h). Nodes with equal signatures are
 * profiled once. Each measurement is its own committed row, so an
 * interrupted profile loses nothing and the next one resumes.
 *
 * Which configurations are measured (docs/profiling.md has the details):
 *   - all-fast (0) and all-slow (every bit) always;
 *   - if they differ by no more than the noise of the measurements, none
 *     other: the kernel is recorded as `noise` and every configuration
 *     takes the all-fast time;
 *   - else, for kernels of at most max_full_args arguments, every
 *     configuration (`all`);
 *   - else each configuration with one argument in the slow tier, and the
 *     others are the all-fast time plus the sum of the one-argument
 *     penalties (`additive`).
 *
 * costmodel_profile.c turns the database into a CostModel.
 */
#ifndef AUTOTM_PROFILE_H
#define AUTOTM_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "autotm/profile.h"
#include "costmodel.h"
#include "graph.h"
#include "schedule.h"

/* The longest a measured kernel or move may take: a time beyond it in a profile is damage, not a measurement. */
#define PROFILE_MAX_SECONDS 1e4
/* Kernel scratch or workspace read from a profile beyond this (1 PiB) is damage: sums of it must not overflow. */
#define PROFILE_MAX_SCRATCH ((int64_t)1 << 50)

/* How to profile, and which profiles to read. Zero fields take the defaults. */
typedef struct ProfileOptions {
	const char *db;        /* the database (NULL: profile_default_db()) */
	int threads;           /* kernel threads (0: every core, as generated programs) */
	int runs;              /* timed runs per measurement, at most (default 5) */
	int warmup;            /* untimed runs before them (default 1) */
	double max_seconds;    /* no further run once a measurement took this long, past 3 runs (default 1) */
	double noise_floor;    /* the noise is at least this fraction of the all-fast time (default 0.02) */
	int max_full_args;     /* kernels with more arguments follow the additive rule (default 4) */
	int slow_kind;         /* RT_SLOW_TIER_* (default pmem) */
	const char *slow_dir;  /* pmem: where its directory goes (NULL: $TMPDIR or /tmp) */
	int numa_node;         /* numa: the node */
	bool fast_only;        /* measure only all-fast times and no moves (what --hw needs) */
	bool quiet;            /* print nothing but errors */
	bool brief;            /* one summary line at the end (and the progress bar on a terminal), not each kernel */
	FILE *report;          /* where the report goes (NULL: stdout; stderr when profiling for another command,
	                          whose standard output is its own) */
	const char *model;     /* the model's file, for messages ("run autotmc profile FILE") */
} ProfileOptions;

/* What profile_graph did. */
typedef struct ProfileReport {
	int nodes;             /* nodes of the step */
	int kernels;           /* distinct signatures among them */
	int already;           /* of which the database had complete profiles */
	int profiled;          /* of which profiled now (the rest: an error stopped the profile) */
	int measurements;      /* measurements taken now (kernels and moves) */
	int noise, all, additive; /* kernels profiled now, by rule */
	double seconds;        /* wall time */
} ProfileReport;

/*
 * What identifies this machine in the database, as parts and as one key:
 * "AMD EPYC 9654; 192 cpus; 1511 GiB; slow: pmem on ext4-dax". The slow
 * tier's kind is part of it because the same machine measures differently
 * with its slow tier on another device (a DRAM-backed file system, a DAX
 * one, a NUMA node).
 */
typedef struct ProfileMachine {
	char cpu[128];        /* /proc/cpuinfo's model name */
	int cpus;             /* online logical CPUs */
	int64_t memory_gib;   /* MemTotal, rounded to GiB */
	char slow[160];       /* "pmem on ext4", "pmem on ext4-dax", "dax-kmem", "numa:2" */
	char key[512];        /* all of them, "; "-separated */
} ProfileMachine;
void profile_machine(const ProfileOptions *o, ProfileMachine *m);

/* $XDG_CACHE_HOME/autotm/profiles.db, or ~/.cache/autotm/profiles.db. */
const char *profile_default_db(Arena *a);

/* Options with every zero field replaced by its default (max_full_args at most 8). */
void profile_resolve(const ProfileOptions *in, ProfileOptions *out, Arena *a);

/*
 * Measure what the database lacks for the kernels of s and for moves,
 * showing progress on stderr. Returns false with a message in err when
 * the database cannot be used. Failures of the runtime (an allocation, a
 * kernel that cannot be made) exit with a message, as in programs.
 */
bool profile_graph(const Graph *g, const Schedule *s, const ProfileOptions *o, ProfileReport *r, char *err,
                   size_t errlen);

/*
 * Kernels of s the database has no complete profile of (fast_only: no
 * all-fast time), plus 1 if it lacks move times; 0: nothing to measure;
 * -1 and err when the database cannot be read.
 */
int profile_missing(const Graph *g, const Schedule *s, const ProfileOptions *o, char *err, size_t errlen);

/*
 * The cost model of the profiles: kernel times from the measurements
 * (configurations of a `noise` kernel take its all-fast time; a
 * configuration never takes less time than one with fewer arguments in
 * the slow tier), moves from the measured copy times, interpolated in
 * size. NULL with a message in err when a kernel or the moves were not
 * profiled on this machine ("run autotmc profile").
 */
CostModel *costmodel_from_profile(const Graph *g, const Schedule *s, const ProfileOptions *o, Arena *a, char *err,
                                  size_t errlen);

/*
 * node id -> its measured all-fast time, for costmodel_from_hw, and into
 * *scratch node id -> its kernel's scratch bytes; NULL with err if one is
 * missing.
 */
double *profile_fast_times(const Graph *g, const Schedule *s, const ProfileOptions *o, int64_t **scratch, Arena *a,
                           char *err, size_t errlen);

/* ---- the database (profile_db.c), shared by profile_cpu.c and costmodel_profile.c ---- */

enum { PROFILE_SCHEMA_VERSION = 2 };

/* How a kernel's configurations were profiled. */
typedef enum ProfileRule {
	RULE_UNDECIDED, /* all-fast and all-slow not both measured yet */
	RULE_NOISE,     /* all-fast and all-slow within noise: every configuration = all-fast */
	RULE_ALL,       /* every configuration measured */
	RULE_ADDITIVE,  /* one-argument configurations measured; penalties add up */
} ProfileRule;

typedef struct ProfileDb ProfileDb;

/* Which profiles: the machine, the backend and the thread count. */
/*
 * The backend of this runtime's kernels as the database keys it: "cpu/"
 * and a revision, raised whenever the kernels or how their threads wait
 * change, so that profiles measured with an older runtime are not used.
 */
#define PROFILE_BACKEND "cpu/5"

typedef struct ProfileKey {
	const char *machine;   /* ProfileMachine.key */
	const char *backend;   /* PROFILE_BACKEND */
	int threads;           /* kernel threads */
} ProfileKey;

/* One measurement of a kernel. */
typedef struct ProfileMeas {
	uint32_t config;       /* IO configuration */
	double seconds;        /* median */
	double spread;         /* max - min of the runs */
	int runs;              /* timed runs */
} ProfileMeas;

/* A kernel signature with what the database holds of it. */
typedef struct ProfileSig {
	const char *text;            /* the signature */
	int64_t *desc;               /* its description (RT_DESC_LEN) */
	const Node *first;           /* the first node of the step with it */
	int nodes;                   /* nodes of the step with it */
	int nargs;                   /* arguments: inputs, then outputs */
	bool known;                  /* the database has a row for it */
	ProfileRule rule;            /* as recorded */
	bool complete;               /* every measurement its rule needs is stored */
	int64_t scratch;             /* bytes of the runtime's scratch its kernel needs (-1: not known) */
	VEC(ProfileMeas) meas;       /* measurements stored */
} ProfileSig;

/* The distinct signatures of the step's kernels, in schedule order. */
typedef struct ProfileSigs {
	ProfileSig **v;              /* the signatures */
	int n;                       /* how many */
	int *of_node;                /* node id -> index in v (-1: not in the schedule) */
	int *slots;                  /* hash table of the texts: index in v, -1 for none */
	int nslots;                  /* its size, a power of two */
} ProfileSigs;

ProfileSigs *profile_signatures(const Graph *g, const Schedule *s, Arena *a);
/* The signature with this text, or NULL. */
ProfileSig *profile_sig_find(const ProfileSigs *sigs, const char *text);
/* The measurement of config in sig, or NULL. */
const ProfileMeas *profile_sig_meas(const ProfileSig *sig, uint32_t config);

/*
 * Open a database: with `create` (to measure), read-write, a missing file
 * created with the schema; else read-only (a shared database, a read-only
 * mount). A file that is not SQLite, damaged, or SQLite of another schema
 * is an error naming the path and what to do. NULL with err.
 */
ProfileDb *pdb_open(const char *path, bool create, char *err, size_t errlen);
/* Make the directory the database at path goes in; false with err. */
bool pdb_make_parent(const char *path, char *err, size_t errlen);
void pdb_close(ProfileDb *db);
bool pdb_add_machine(ProfileDb *db, const ProfileMachine *m, char *err, size_t errlen);
/* Fill the `known` fields of every signature from the database. */
bool pdb_load_kernels(ProfileDb *db, const ProfileKey *k, ProfileSigs *sigs, Arena *a, char *err, size_t errlen);
/* Record a kernel (rule and completeness); each call is its own transaction. */
bool pdb_put_kernel(ProfileDb *db, const ProfileKey *k, const ProfileSig *sig, char *err, size_t errlen);
/* Record a measurement; its own transaction. */
bool pdb_put_meas(ProfileDb *db, const ProfileKey *k, const ProfileSig *sig, const ProfileMeas *m, char *err,
                  size_t errlen);

/* A measured copy between the tiers. */
typedef struct ProfileMove {
	bool to_slow;          /* fast -> slow (else slow -> fast) */
	bool async;            /* on the copy thread */
	int64_t bytes;         /* size */
	double seconds;        /* median */
	double spread;         /* max - min */
	int runs;              /* timed runs */
} ProfileMove;
typedef VEC(ProfileMove) ProfileMoves;

bool pdb_load_moves(ProfileDb *db, const ProfileKey *k, ProfileMoves *out, Arena *a, char *err, size_t errlen);
bool pdb_put_move(ProfileDb *db, const ProfileKey *k, const ProfileMove *m, char *err, size_t errlen);

/* The copy sizes profiled: 64 KiB, 256 KiB, ..., 256 MiB. */
enum { PROFILE_MOVE_MIN = 64 << 10, PROFILE_MOVE_MAX = 256 << 20, PROFILE_MOVE_FACTOR = 4 };

#endif
