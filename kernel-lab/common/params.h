/* SPDX-License-Identifier: GPL-2.0 */
/*
 * params: the kernel lab's parameter files, one key=value a line, as kstep.lab writes them for a
 * port (fork-batch, damon), and their errors: one line on stderr, "PROG: WHERE: what", exit 2.
 */
#ifndef LAB_PARAMS_H
#define LAB_PARAMS_H

/* The program's name and what is being read (a file, "file:line", "usage"), for bad(). */
extern const char *prog, *where;

void __attribute__((noreturn, format(printf, 1, 2))) bad(const char *fmt, ...);

/* A decimal number from lo to hi; a sign, a suffix or anything out of range is bad(). */
unsigned long number(const char *value, unsigned long lo, unsigned long hi);

/* The index of value among names[0..n). */
int choice(const char *value, const char *const *names, int n);

/* "N.field" of a list declared with count items: the index, and the field in *field. */
int item(const char *rest, int count, const char **field);

/* Calls set(arg, key, value) for every non-empty line of path, with where = "path:line". */
void read_key_values(const char *path, void (*set)(void *arg, const char *key, const char *value), void *arg);

#endif
