/* SPDX-License-Identifier: GPL-2.0 */
/*
 * case_lines: how the identity harnesses (fork-pte-batch, fork-copy, contpte) read their cases on stdin, one
 * line at a time, each a word and then decimal numbers; and their one error, a line on stderr naming
 * the harness and the input line ("fork-copy: stdin line 4: what"), then exit status 2.
 */
#ifndef LAB_CASE_LINES_H
#define LAB_CASE_LINES_H

#include <stdbool.h>
#include <stddef.h>

/* The harness's name, for bad_case(); set it first. */
extern const char *case_prog;

void __attribute__((noreturn)) bad_case(const char *what);

/* The next line: its first word into @key (shorter than @key_size), then its numbers into @v, at most
 * @max of them; their count, or -1 at the end of the input. */
int case_line(char *key, size_t key_size, unsigned long long *v, int max);

/* The next line, which must be there and be @key, then at most @max numbers, into @v; their count. */
int case_words(const char *key, unsigned long long *v, int max);

#endif
