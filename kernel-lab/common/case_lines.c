// SPDX-License-Identifier: GPL-2.0
/* case_lines: see case_lines.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_lines.h"

/* the longest line: a page table's 512 entries as 20-digit words, or 512 folios as PFN and size */
#define LINE_CHARS	(1 << 14)

const char *case_prog;
static unsigned long line_no;

void bad_case(const char *what)
{
	fflush(stdout);
	fprintf(stderr, "%s: stdin line %lu: %s\n", case_prog, line_no, what);
	exit(2);
}

int case_line(char *key, size_t key_size, unsigned long long *v, int max)
{
	static char line[LINE_CHARS];
	char *tok, *end, *save;
	int got = 0;

	if (!fgets(line, sizeof(line), stdin))
		return -1;
	line_no++;
	if (!strchr(line, '\n') && !feof(stdin))
		bad_case("a line longer than a page table's entries");
	line[strcspn(line, "\n")] = 0;
	tok = strtok_r(line, " ", &save);
	if (!tok || strlen(tok) >= key_size)
		bad_case("a line is not the one the case format has next");
	strcpy(key, tok);
	while ((tok = strtok_r(NULL, " ", &save))) {
		if (got == max)
			bad_case("too many numbers");
		errno = 0;
		v[got++] = strtoull(tok, &end, 10);
		if (*tok < '0' || *tok > '9' || *end || errno)
			bad_case("not a decimal number");
	}
	return got;
}

int case_words(const char *key, unsigned long long *v, int max)
{
	char got_key[16];
	int got = case_line(got_key, sizeof(got_key), v, max);

	if (got < 0)
		bad_case("the input ends inside a case");
	if (strcmp(got_key, key))
		bad_case("a line is not the one the case format has next");
	return got;
}
