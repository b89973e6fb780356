/* SPDX-License-Identifier: GPL-2.0 */
/* include/linux/types.h: the fixed-size types and struct list_head, which the kernel defines here. */
#ifndef LAB_REGIONS_TYPES_H
#define LAB_REGIONS_TYPES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef uint32_t u32;
typedef uint64_t u64;

struct list_head {
	struct list_head *next, *prev;
};

#endif
