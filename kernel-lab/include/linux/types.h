/* SPDX-License-Identifier: GPL-2.0 */
/* The kernel's fixed-size types (include/linux/types.h) and atomic_t. */
#ifndef LAB_LINUX_TYPES_H
#define LAB_LINUX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int16_t s16;
typedef off_t loff_t;	/* ssize_t comes from <sys/types.h> */

/* kernel/locking/lock_events.h declares the debugfs reader of the lock event counts. */
struct file;

typedef struct {
	int counter;
} atomic_t;

#define ATOMIC_INIT(i)	{ (i) }

#endif /* LAB_LINUX_TYPES_H */
