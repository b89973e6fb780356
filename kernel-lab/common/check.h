/* SPDX-License-Identifier: GPL-2.0 */
/*
 * LAB_CHECK(expr): the tools/testing/vma habit -- a failed check says where and what,
 * "file:line:function(): expr is FALSE", and the program exits with status 1.
 */
#ifndef LAB_CHECK_H
#define LAB_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define LAB_CHECK(expr)							\
do {									\
	if (!(expr)) {							\
		fflush(stdout);						\
		fprintf(stderr, "%s:%d:%s(): %s is FALSE\n",		\
			__FILE__, __LINE__, __func__, #expr);		\
		exit(1);						\
	}								\
} while (0)

#endif /* LAB_CHECK_H */
