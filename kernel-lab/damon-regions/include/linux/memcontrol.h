/* SPDX-License-Identifier: GPL-2.0 */
/*
 * include/linux/memcontrol.h: damon.h reaches mm.h, list.h and the kernel's helper macros through
 * it. Of all that, the region functions need PAGE_SIZE (DAMON_MIN_REGION) and these macros.
 */
#ifndef LAB_REGIONS_MEMCONTROL_H
#define LAB_REGIONS_MEMCONTROL_H

#include <linux/list.h>

#define PAGE_SIZE		4096UL

#define min(a, b)		((a) < (b) ? (a) : (b))
#define max(a, b)		((a) > (b) ? (a) : (b))
/* include/linux/math.h: abs() of an unsigned int converts it to int first */
#define abs(x)			__builtin_choose_expr(sizeof(x) <= sizeof(int), __builtin_abs((int)(x)), \
					__builtin_labs((long)(x)))
#define swap(a, b)		do { typeof(a) __tmp = (a); (a) = (b); (b) = __tmp; } while (0)
#define ALIGN(x, a)		(((x) + ((typeof(x))(a) - 1)) & ~((typeof(x))(a) - 1))
#define ALIGN_DOWN(x, a)	ALIGN((x) - ((a) - 1), (a))

#endif
