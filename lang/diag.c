/*
 * diag.c - printing diagnostics with the source line and a caret.
 *
 * Messages quote names and numbers from the user's file, which may be of
 * any length: a run of more than MAX_WORD name characters is shown as its
 * first MAX_WORD and "...", and a message is cut at MAX_MESSAGE bytes. A
 * long source line is shown as a window of WIDTH bytes around the caret.
 */
#include "diag.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

enum {
	MAX_WORD = 64,      /* name characters shown of one name or number */
	MAX_MESSAGE = 1024, /* bytes shown of one message */
	WIDTH = 100,        /* bytes shown of a long source line */
};

static FILE *diag_out;
static int nerrors;
static DiagHandler *handler;

void diag_set_stream(FILE *f)
{
	diag_out = f;
}

static FILE *out(void)
{
	return diag_out ? diag_out : stderr;
}

int diag_error_count(void)
{
	return nerrors;
}

/* The end of the line that starts at s: its LF, CR or CRLF, or end. */
static const char *line_end(const char *s, const char *end)
{
	while (s < end && *s != '\n' && *s != '\r')
		s++;
	return s;
}

const char *srcfile_line(const SrcFile *f, int line, int *len)
{
	const char *s = f->text, *end = f->text + f->len;
	if (line < 1) {
		*len = 0;
		return "";
	}
	for (int l = 1; l < line; l++) {
		const char *e = line_end(s, end);
		if (e == end) {
			*len = 0;
			return "";
		}
		s = e + (e[0] == '\r' && e + 1 < end && e[1] == '\n' ? 2 : 1);
	}
	const char *e = line_end(s, end);
	*len = e - s > INT_MAX ? INT_MAX : (int)(e - s);
	return s;
}

/* Length of the valid UTF-8 sequence at s (1 for ASCII or an invalid byte). */
static int utf8_len(const unsigned char *s, int avail)
{
	int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (n <= 1 || n > avail || (n == 2 && s[0] < 0xc2))
		return 1;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 1;
	return n;
}

/* Print the source line of loc with a caret and tildes under the span. */
static void show_source(SrcLoc loc)
{
	if (!loc.file || loc.first_line < 1)
		return;
	int len;
	const char *s = srcfile_line(loc.file, loc.first_line, &len);
	FILE *o = out();
	int col = loc.first_column < 1 ? 1 : loc.first_column;
	int last = loc.last_line == loc.first_line ? loc.last_column : len;
	/*
	 * Show at most WIDTH bytes of a long line, around the caret, cut at
	 * character boundaries and marked "..." where cut.
	 */
	int from = 0;
	if (len > WIDTH && col > WIDTH / 2) {
		from = col - WIDTH / 2;
		if (from > len - WIDTH)
			from = len - WIDTH > 0 ? len - WIDTH : 0;
		while (from > 0 && ((unsigned char)s[from] & 0xc0) == 0x80)
			from--;
	}
	int to = from + WIDTH < len ? from + WIDTH : len;
	while (to < len && ((unsigned char)s[to] & 0xc0) == 0x80)
		to--;
	bool cut_end = to < len;
	const char *lead = from > 0 ? "..." : "";
	s += from;
	len = to - from;
	col -= from;
	last -= from;
	char num[32];
	int w = snprintf(num, sizeof num, "%d", loc.first_line);
	if (w < 4)
		w = 4;
	fprintf(o, " %*d | %s", w, loc.first_line, lead);
	for (int i = 0; i < len;) {
		/* keep the line printable whatever bytes it holds: control bytes and
		   bytes that are not valid UTF-8 are shown as '?' */
		int n = utf8_len((const unsigned char *)s + i, len - i);
		unsigned char c = (unsigned char)s[i];
		if (n > 1)
			fwrite(s + i, 1, (size_t)n, o);
		else
			fputc(c == '\t' || (c >= 0x20 && c < 0x7f) ? c : '?', o);
		i += n > 1 ? n : 1;
	}
	fprintf(o, "%s\n %*s | %s", cut_end ? "..." : "", w, "", lead[0] ? "   " : "");
	for (int i = 0; i < col - 1 && i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c & 0xc0) != 0x80) /* one column per UTF-8 character */
			fputc(c == '\t' ? '\t' : ' ', o);
	}
	for (int i = len; i < col - 1; i++)
		fputc(' ', o);
	fputc('^', o);
	if (last > len)
		last = len;
	for (int i = col + 1; i <= last; i++)
		if (((unsigned char)s[i - 1] & 0xc0) != 0x80)
			fputc('~', o);
	fputc('\n', o);
}

static bool is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Print a message with long names and numbers elided, at most MAX_MESSAGE bytes. */
static void print_message(FILE *o, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0) {
		fputs(fmt, o);
		return;
	}
	char *msg = xmalloc((size_t)n + 1);
	vsnprintf(msg, (size_t)n + 1, fmt, ap);
	int shown = 0;
	for (int i = 0; i < n;) {
		int j = i;
		while (j < n && is_word_char(msg[j]))
			j++;
		if (j == i) { /* one other character, all bytes of it */
			j = i + 1;
			while (j < n && ((unsigned char)msg[j] & 0xc0) == 0x80)
				j++;
		}
		int take = j - i > MAX_WORD ? MAX_WORD : j - i;
		if (shown + take > MAX_MESSAGE) {
			fputs("...", o);
			break;
		}
		fwrite(msg + i, 1, (size_t)take, o);
		shown += take;
		if (take < j - i)
			fputs("...", o);
		i = j;
	}
	free(msg);
}

void diag_vprint(const char *severity, SrcLoc loc, const char *fmt, va_list ap)
{
	FILE *o = out();
	if (strcmp(severity, "error") == 0)
		nerrors++;
	if (loc.file)
		fprintf(o, "%s:%d:%d: %s: ", loc.file->name, loc.first_line, loc.first_column, severity);
	else
		fprintf(o, "autotmc: %s: ", severity);
	print_message(o, fmt, ap);
	fputc('\n', o);
	show_source(loc);
}

void diag_print(const char *severity, SrcLoc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vprint(severity, loc, fmt, ap);
	va_end(ap);
}

void note_at(SrcLoc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vprint("note", loc, fmt, ap);
	va_end(ap);
}

void error_plain(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vprint("error", (SrcLoc){0}, fmt, ap);
	va_end(ap);
}

void diag_push(DiagHandler *h)
{
	h->prev = handler;
	handler = h;
}

void diag_pop(DiagHandler *h)
{
	if (handler != h)
		ICE("diagnostic handlers popped out of order");
	handler = h->prev;
}

void diag_abort(void)
{
	DiagHandler *h = handler;
	if (!h)
		ICE("error reported with no handler installed");
	handler = h->prev;
	longjmp(h->jb, 1);
}

void error_at(SrcLoc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vprint("error", loc, fmt, ap);
	va_end(ap);
	diag_abort();
}
