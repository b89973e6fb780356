// SPDX-License-Identifier: GPL-2.0
/* params: see params.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

const char *prog, *where;

void bad(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: %s: ", prog, where);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

unsigned long number(const char *value, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(value, &end, 10);
	if (errno || end == value || *end || value[0] == '-' || n < lo || n > hi)
		bad("%s is not a number from %lu to %lu", value, lo, hi);
	return n;
}

int choice(const char *value, const char *const *names, int n)
{
	for (int k = 0; k < n; k++)
		if (!strcmp(value, names[k]))
			return k;
	bad("%s is not one of the choices", value);
}

int item(const char *rest, int count, const char **field)
{
	char *dot;
	long k;

	errno = 0;
	k = strtol(rest, &dot, 10);
	if (errno || dot == rest || *dot != '.' || k < 0 || k >= count)
		bad("no such item (declare the count first)");
	*field = dot + 1;
	return k;
}

void read_key_values(const char *path, void (*set)(void *arg, const char *key, const char *value), void *arg)
{
	char line[8192], key[4096];
	int lineno = 0;
	FILE *f = fopen(path, "r");

	where = path;
	if (!f)
		bad("cannot open: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *eq, *nl = strchr(line, '\n');

		lineno++;
		if (nl)
			*nl = 0;
		else if (!feof(f))
			bad("line %d is longer than %zu characters", lineno, sizeof(line) - 2);
		if (!line[0])
			continue;
		snprintf(key, sizeof(key), "%s:%d", path, lineno);
		where = key;
		eq = strchr(line, '=');
		if (!eq)
			bad("not key=value");
		*eq = 0;
		set(arg, line, eq + 1);
	}
	fclose(f);
	where = path;
}
