// SPDX-License-Identifier: GPL-2.0
/*
 * splitmix64-check: compare the C generator with vectors given on stdin, one per line:
 *
 *	next SEED V1 V2 ...		the first outputs of next() from SEED
 *	below SEED N V1 V2 ...		the first below(N) draws from SEED
 *
 * tests/labcheck.py writes them from Python's prng.VECTORS and prng.BELOW_VECTORS.  Exit 0 when
 * every value matches, 1 at the first difference (both values named), 2 on a malformed line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "splitmix64.h"

static int lineno;

static void bad_input(const char *what, const char *word)
{
	fprintf(stderr, "splitmix64-check: line %d: %s: '%s'\n", lineno, what, word);
	exit(2);
}

static uint64_t parse_u64(const char *word)
{
	char *end;
	unsigned long long v;

	if (!word)
		bad_input("missing number", "");
	errno = 0;
	v = strtoull(word, &end, 10);
	if (errno || *end || *word == '-' || end == word)
		bad_input("not an unsigned 64-bit decimal", word);
	return v;
}

int main(void)
{
	char *line = NULL;
	size_t size = 0;
	int vectors = 0, values = 0;

	while (getline(&line, &size, stdin) != -1) {
		char *kind, *word;
		struct splitmix64 r;
		uint64_t n = 0;
		int i = 0;

		lineno++;
		kind = strtok(line, " \t\r\n");
		if (!kind)
			continue;
		if (strcmp(kind, "next") && strcmp(kind, "below"))
			bad_input("expected 'next' or 'below'", kind);
		splitmix64_seed(&r, parse_u64(strtok(NULL, " \t\r\n")));
		if (!strcmp(kind, "below")) {
			n = parse_u64(strtok(NULL, " \t\r\n"));
			if (n == 0)
				bad_input("below(n) needs n >= 1", "0");
		}
		while ((word = strtok(NULL, " \t\r\n"))) {
			uint64_t want = parse_u64(word);
			uint64_t got = n ? splitmix64_below(&r, n) : splitmix64_next(&r);

			if (got != want) {
				fprintf(stderr, "splitmix64-check: line %d: %s draw %d is %" PRIu64
					" in C, %" PRIu64 " in Python\n", lineno, kind, i, got, want);
				return 1;
			}
			i++;
			values++;
		}
		if (i == 0)
			bad_input("no expected values", kind);
		vectors++;
	}
	if (vectors == 0) {
		fprintf(stderr, "splitmix64-check: no vectors on stdin\n");
		return 2;
	}
	printf("splitmix64-check: %d vectors, %d values match\n", vectors, values);
	return 0;
}
