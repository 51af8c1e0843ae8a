/*
 * hwmodel.c - reading hw files (format in hwmodel.h and docs/profiling.md).
 *
 * The format is line-based: comments from '#' to the end of the line,
 * `[section]` headers and `key = value` lines, where a value is a number
 * with a unit or, for `name`, text. Each key is declared once in a table
 * with the kind of value it takes, so the parser is one loop and the
 * messages name the units a key accepts. The cost model built from a
 * file is in costmodel_profile.c.
 */
#include "hwmodel.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#ifndef AUTOTM_HWDIR
#define AUTOTM_HWDIR "/usr/local/share/autotm/hw"
#endif

typedef enum ValKind { V_TEXT, V_BANDWIDTH, V_TIME, V_SIZE, V_FRACTION, V_RATE } ValKind;

typedef enum Section { SEC_TOP, SEC_FAST, SEC_SLOW, SEC_LINK, SEC_COMPUTE, SEC_RANKS, NSECTIONS } Section;

static const char *const section_names[NSECTIONS] = {"top", "fast", "slow", "link", "compute", "ranks"};

/* A key: where it may appear, what it takes, where it goes. */
typedef struct Key {
	Section sec;        /* its section */
	const char *name;   /* as written */
	ValKind kind;       /* its value */
	bool required;      /* the section must give it */
} Key;

static const Key keys[] = {
	{SEC_TOP, "name", V_TEXT, false},
	{SEC_FAST, "name", V_TEXT, false},
	{SEC_FAST, "read_bandwidth", V_BANDWIDTH, true},
	{SEC_FAST, "write_bandwidth", V_BANDWIDTH, true},
	{SEC_FAST, "latency", V_TIME, false},
	{SEC_FAST, "capacity", V_SIZE, false},
	{SEC_SLOW, "name", V_TEXT, false},
	{SEC_SLOW, "read_bandwidth", V_BANDWIDTH, true},
	{SEC_SLOW, "write_bandwidth", V_BANDWIDTH, true},
	{SEC_SLOW, "latency", V_TIME, false},
	{SEC_SLOW, "capacity", V_SIZE, false},
	{SEC_LINK, "fast_to_slow", V_BANDWIDTH, false},
	{SEC_LINK, "slow_to_fast", V_BANDWIDTH, false},
	{SEC_LINK, "latency", V_TIME, false},
	{SEC_LINK, "async_fraction", V_FRACTION, false},
	{SEC_COMPUTE, "flops", V_RATE, true},
	{SEC_COMPUTE, "flops_bf16", V_RATE, false},
	{SEC_COMPUTE, "launch", V_TIME, false},
	{SEC_RANKS, "bandwidth", V_BANDWIDTH, true},
	{SEC_RANKS, "latency", V_TIME, false},
};

/* Units of each kind of value, with their factor to bytes/s, seconds or bytes. */
typedef struct Unit {
	ValKind kind;
	const char *name;
	double factor;
} Unit;

static const Unit units[] = {
	{V_BANDWIDTH, "B/s", 1},      {V_BANDWIDTH, "KB/s", 1e3},   {V_BANDWIDTH, "MB/s", 1e6},
	{V_BANDWIDTH, "GB/s", 1e9},   {V_BANDWIDTH, "TB/s", 1e12},  {V_BANDWIDTH, "KiB/s", 0x1p10},
	{V_BANDWIDTH, "MiB/s", 0x1p20}, {V_BANDWIDTH, "GiB/s", 0x1p30}, {V_BANDWIDTH, "TiB/s", 0x1p40},
	{V_TIME, "s", 1},             {V_TIME, "ms", 1e-3},         {V_TIME, "us", 1e-6},
	{V_TIME, "ns", 1e-9},
	{V_SIZE, "B", 1},             {V_SIZE, "KB", 1e3},          {V_SIZE, "MB", 1e6},
	{V_SIZE, "GB", 1e9},          {V_SIZE, "TB", 1e12},         {V_SIZE, "KiB", 0x1p10},
	{V_SIZE, "MiB", 0x1p20},      {V_SIZE, "GiB", 0x1p30},      {V_SIZE, "TiB", 0x1p40},
	{V_RATE, "FLOP/s", 1},        {V_RATE, "GFLOP/s", 1e9},     {V_RATE, "TFLOP/s", 1e12},
};

/* "GB/s, MB/s, ..." : the units of a kind, for messages. */
static const char *unit_list(ValKind kind, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < countof(units) && len < size; i++)
		if (units[i].kind == kind)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", units[i].name);
	return buf;
}

static const char *kind_name(ValKind k)
{
	switch (k) {
	case V_BANDWIDTH: return "a bandwidth";
	case V_TIME: return "a time";
	case V_SIZE: return "a size";
	case V_FRACTION: return "a fraction in (0, 1]";
	case V_RATE: return "a rate of floating-point operations";
	case V_TEXT: return "text";
	}
	unreachable();
}

static bool fail(char *err, size_t errlen, const char *path, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static bool fail(char *err, size_t errlen, const char *path, int line, const char *fmt, ...)
{
	int n = line > 0 ? snprintf(err, errlen, "%s:%d: error: ", path, line) : snprintf(err, errlen, "%s: error: ", path);
	if (n < 0 || (size_t)n >= errlen)
		return false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Store a text value: without surrounding quotes. */
static bool parse_text(const char *path, int line, const char *v, char *out, size_t size, char *err, size_t errlen)
{
	size_t n = strlen(v);
	if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
		v++;
		n -= 2;
	}
	if (n == 0)
		return fail(err, errlen, path, line, "an empty name");
	if (n >= size)
		return fail(err, errlen, path, line, "the name is longer than %zu characters", size - 1);
	memcpy(out, v, n);
	out[n] = '\0';
	return true;
}

/* A number with a unit of `kind` (none for a fraction), in base units. */
static bool parse_quantity(const char *path, int line, const char *key, const char *v, ValKind kind, double *out,
                           char *err, size_t errlen)
{
	char list[160];
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (end == v || errno == ERANGE || !isfinite(x) || !isdigit((unsigned char)v[0]))
		return fail(err, errlen, path, line, "%s expects %s%s%s, got '%s'", key, kind_name(kind),
		            kind == V_FRACTION ? "" : " such as 10 ", kind == V_FRACTION ? "" : unit_list(kind, list, sizeof list),
		            v);
	const char *u = end;
	while (*u == ' ' || *u == '\t')
		u++;
	if (kind == V_FRACTION) {
		if (*u)
			return fail(err, errlen, path, line, "%s takes a plain number, got '%s'", key, v);
		if (!(x > 0 && x <= 1))
			return fail(err, errlen, path, line, "%s must be in (0, 1], got %g", key, x);
		*out = x;
		return true;
	}
	if (!*u)
		return fail(err, errlen, path, line, "%s needs a unit (%s)", key, unit_list(kind, list, sizeof list));
	for (size_t i = 0; i < countof(units); i++)
		if (strcmp(u, units[i].name) == 0) {
			if (units[i].kind != kind)
				return fail(err, errlen, path, line, "%s expects %s (%s), got the unit '%s'", key, kind_name(kind),
				            unit_list(kind, list, sizeof list), u);
			if ((kind == V_BANDWIDTH || kind == V_RATE) && x <= 0)
				return fail(err, errlen, path, line, "%s must be positive, got '%s'", key, v);
			*out = x * units[i].factor;
			if (kind == V_SIZE && *out > 0x1p62)
				return fail(err, errlen, path, line, "%s is too large: '%s'", key, v);
			/* what a machine can be: the placement's arithmetic stays in range (docs/profiling.md) */
			static const struct {
				ValKind kind;
				double lo, hi;
				const char *range;
			} physical[] = {
				{V_BANDWIDTH, 1e6, 1e15, "1 MB/s to 1000 TB/s"},
				{V_TIME, 0, 1, "0 to 1 s"},
				{V_RATE, 1e6, 1e19, "1 MFLOP/s to 10^19 FLOP/s"},
			};
			for (size_t k = 0; k < countof(physical); k++)
				if (physical[k].kind == kind && !(*out >= physical[k].lo && *out <= physical[k].hi))
					return fail(err, errlen, path, line, "%s = %s is outside what autotmc models (%s)", key, v,
					            physical[k].range);
			return true;
		}
	return fail(err, errlen, path, line, "%s: unknown unit '%s' (%s)", key, u, unit_list(kind, list, sizeof list));
}

/* [compute]'s flops.OP = rate, flops_bf16.OP = rate or bandwidth.OP = fraction: one op's own figure. */
static bool parse_op_key(const char *path, int line, const char *key, const char *val, HwModel *hw, char *err,
                         size_t errlen)
{
	bool flops = key[0] == 'f', bf16 = strncmp(key, "flops_bf16.", 11) == 0;
	const char *name = key + (bf16 ? 11 : flops ? 6 : 10);
	int op = -1;
	for (int i = 0; i < NUM_OPS && op < 0; i++)
		if (strcmp(op_info[i].name, name) == 0)
			op = i;
	if (op < 0)
		return fail(err, errlen, path, line, "%s: no op is called '%s' (the names of ops.def, as in a profile)", key,
		            name);
	double *slot = bf16 ? &hw->op_flops_bf16[op] : flops ? &hw->op_flops[op] : &hw->op_bandwidth[op];
	if (*slot > 0)
		return fail(err, errlen, path, line, "%s is given twice in [compute]", key);
	if (!*val)
		return fail(err, errlen, path, line, "%s has no value", key);
	return parse_quantity(path, line, key, val, flops ? V_RATE : V_FRACTION, slot, err, errlen);
}

bool hw_parse(const char *path, const char *text, HwModel *hw, char *err, size_t errlen)
{
	memset(hw, 0, sizeof *hw);
	snprintf(hw->path, sizeof hw->path, "%s", path);
	hw->async_fraction = 1;
	bool seen[countof(keys)] = {false};
	int section_line[NSECTIONS] = {0};
	Section sec = SEC_TOP;
	int lineno = 0;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		lineno++;
		char buf[1024];
		if (len >= sizeof buf)
			return fail(err, errlen, path, lineno, "line longer than %zu characters", sizeof buf - 1);
		memcpy(buf, p, len);
		buf[len] = '\0';
		p = nl ? nl + 1 : p + len;
		/* a comment runs from '#' outside quotes to the end of the line */
		bool quoted = false;
		for (char *c = buf; *c; c++) {
			if (*c == '"')
				quoted = !quoted;
			else if (*c == '#' && !quoted) {
				*c = '\0';
				break;
			}
		}
		char *l = trim(buf);
		if (!*l)
			continue;
		if (*l == '[') {
			char *close = strchr(l, ']');
			if (!close || *trim(close + 1))
				return fail(err, errlen, path, lineno, "a section header is [fast], [slow], [link], [compute] or [ranks]");
			*close = '\0';
			char *name = trim(l + 1);
			Section s = NSECTIONS;
			for (int i = SEC_FAST; i < NSECTIONS; i++)
				if (strcmp(name, section_names[i]) == 0)
					s = (Section)i;
			if (s == NSECTIONS)
				return fail(err, errlen, path, lineno, "unknown section [%s] (fast, slow, link, compute or ranks)", name);
			if (section_line[s])
				return fail(err, errlen, path, lineno, "a second [%s] section (the first is on line %d)", name,
				            section_line[s]);
			section_line[s] = lineno;
			sec = s;
			continue;
		}
		char *eq = strchr(l, '=');
		if (!eq)
			return fail(err, errlen, path, lineno, "expected 'key = value' or a [section], got '%s'", l);
		*eq = '\0';
		char *key = trim(l), *val = trim(eq + 1);
		if (!*key)
			return fail(err, errlen, path, lineno, "a value without a key");
		if (sec == SEC_COMPUTE && (strncmp(key, "flops.", 6) == 0 || strncmp(key, "flops_bf16.", 11) == 0 ||
		                           strncmp(key, "bandwidth.", 10) == 0)) {
			if (!parse_op_key(path, lineno, key, val, hw, err, errlen))
				return false;
			continue;
		}
		size_t k = countof(keys);
		for (size_t i = 0; i < countof(keys); i++)
			if (keys[i].sec == sec && strcmp(keys[i].name, key) == 0)
				k = i;
		if (k == countof(keys)) {
			char known[256] = "";
			size_t n = 0;
			for (size_t i = 0; i < countof(keys); i++)
				if (keys[i].sec == sec)
					n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", keys[i].name);
			if (sec == SEC_TOP)
				return fail(err, errlen, path, lineno,
				            "unknown key '%s' before any section (only name; tiers go in [fast] and [slow])", key);
			return fail(err, errlen, path, lineno, "unknown key '%s' in [%s] (%s)", key, section_names[sec], known);
		}
		if (seen[k])
			return fail(err, errlen, path, lineno, "%s is given twice in [%s]", key, section_names[sec]);
		seen[k] = true;
		if (!*val)
			return fail(err, errlen, path, lineno, "%s has no value", key);
		HwTier *tier = sec == SEC_FAST ? &hw->fast : sec == SEC_SLOW ? &hw->slow : NULL;
		double x = 0;
		if (keys[k].kind == V_TEXT) {
			char *out = tier ? tier->name : hw->name;
			if (!parse_text(path, lineno, val, out, sizeof hw->name, err, errlen))
				return false;
			continue;
		}
		if (!parse_quantity(path, lineno, key, val, keys[k].kind, &x, err, errlen))
			return false;
		if (tier && strcmp(key, "read_bandwidth") == 0)
			tier->read_bw = x;
		else if (tier && strcmp(key, "write_bandwidth") == 0)
			tier->write_bw = x;
		else if (tier && strcmp(key, "latency") == 0)
			tier->latency = x;
		else if (tier && strcmp(key, "capacity") == 0)
			tier->capacity = (int64_t)x;
		else if (strcmp(key, "fast_to_slow") == 0)
			hw->to_slow_bw = x;
		else if (strcmp(key, "slow_to_fast") == 0)
			hw->to_fast_bw = x;
		else if (sec == SEC_LINK && strcmp(key, "latency") == 0)
			hw->link_latency = x;
		else if (strcmp(key, "async_fraction") == 0)
			hw->async_fraction = x;
		else if (strcmp(key, "flops") == 0)
			hw->flop_rate = x;
		else if (strcmp(key, "flops_bf16") == 0)
			hw->flop_rate_bf16 = x;
		else if (sec == SEC_COMPUTE && strcmp(key, "launch") == 0)
			hw->launch = x;
		else if (sec == SEC_RANKS && strcmp(key, "bandwidth") == 0)
			hw->ranks_bw = x;
		else if (sec == SEC_RANKS && strcmp(key, "latency") == 0)
			hw->ranks_latency = x;
		else
			unreachable();
	}
	for (int s = SEC_FAST; s < NSECTIONS; s++) {
		if (!section_line[s] && s > SEC_SLOW)
			continue;
		if (!section_line[s])
			return fail(err, errlen, path, 0, "no [%s] section (a hw file describes a fast and a slow tier)",
			            section_names[s]);
		for (size_t i = 0; i < countof(keys); i++)
			if (keys[i].sec == (Section)s && keys[i].required && !seen[i])
				return fail(err, errlen, path, section_line[s], "[%s] has no %s", section_names[s], keys[i].name);
	}
	return true;
}

bool hw_bandwidth(const char *what, const char *text, double *out, char *err, size_t errlen)
{
	return parse_quantity(what, 0, what, text, V_BANDWIDTH, out, err, errlen);
}

/* A hw file is a few dozen lines; anything larger is not one. */
enum { HW_MAX_BYTES = 1 << 20 };

bool hw_load(const char *path, HwModel *hw, char *err, size_t errlen)
{
	size_t len;
	const char *kind;
	char *text = read_regular_file(path, HW_MAX_BYTES, &len, &kind);
	if (!text) {
		char why[128];
		snprintf(err, errlen, "cannot read the hw file %s: %s", path,
		         read_failure(kind, errno, "larger than a hw file can be (1 MiB)", why, sizeof why));
		return false;
	}
	bool ok = strlen(text) == len ? hw_parse(path, text, hw, err, errlen)
	                              : fail(err, errlen, path, 0, "a NUL byte: this is not a hw file");
	free(text);
	return ok;
}

const char *hw_find(const char *name, Arena *a, char *err, size_t errlen)
{
	size_t n = strlen(name);
	if (strchr(name, '/') || (n > 3 && strcmp(name + n - 3, ".hw") == 0)) {
		if (access(name, R_OK) == 0)
			return name;
		snprintf(err, errlen, "cannot read the hw file %s: %s", name, strerror(errno));
		return NULL;
	}
	const char *dirs[4];
	int nd = 0;
	const char *env = getenv("AUTOTM_HW");
	if (env && env[0])
		dirs[nd++] = env;
	const char *exe = exe_dir();
	if (exe) {
		dirs[nd++] = arena_printf(a, "%s/hw", exe);
		dirs[nd++] = arena_printf(a, "%s/../share/autotm/hw", exe);
	}
	dirs[nd++] = AUTOTM_HWDIR;
	for (int i = 0; i < nd; i++) {
		const char *p = arena_printf(a, "%s/%s.hw", dirs[i], name);
		if (access(p, R_OK) == 0)
			return p;
	}
	snprintf(err, errlen, "no hw file '%s': neither %s.hw in $AUTOTM_HW, next to autotmc, nor in %s", name, name,
	         AUTOTM_HWDIR);
	return NULL;
}

/* Whether node n computes on bf16 data: an input in bf16 (its products then run on bf16 units). */
static bool node_bf16(const Node *n)
{
	for (int k = 0; k < n->nin; k++)
		if (n->in[k]->dtype == DT_BF16)
			return true;
	return false;
}

double hw_flop_rate(const HwModel *hw, const Node *n)
{
	bool bf16 = node_bf16(n);
	if (bf16 && hw->op_flops_bf16[n->op] > 0)
		return hw->op_flops_bf16[n->op];
	if (hw->op_flops[n->op] > 0)
		return hw->op_flops[n->op];
	return bf16 && hw->flop_rate_bf16 > 0 ? hw->flop_rate_bf16 : hw->flop_rate;
}

double *hw_roofline_times(const HwModel *hw, const Graph *g, Arena *a)
{
	if (!(hw->flop_rate > 0))
		ICE("%s has no [compute] section", hw->path);
	double *t = arena_array(a, (size_t)g->nodes.n + 1, sizeof(double));
	for (int i = 0; i < g->nodes.n; i++) {
		const Node *n = g->nodes.v[i];
		double rate = hw_flop_rate(hw, n);
		double eff = hw->op_bandwidth[n->op] > 0 ? hw->op_bandwidth[n->op] : 1;
		Roofline r = {.flop_rate = rate, .fast_read = hw->fast.read_bw * eff, .fast_write = hw->fast.write_bw * eff,
		              .slow_read = hw->slow.read_bw, .slow_write = hw->slow.write_bw, .async_factor = 1};
		CostModel *roof = costmodel_roofline(&r, a);
		t[n->id] = hw->launch + roof->kernel_time(roof, n, 0);
	}
	return t;
}
