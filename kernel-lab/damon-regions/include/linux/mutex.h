/* SPDX-License-Identifier: GPL-2.0 */
/*
 * include/linux/mutex.h and completion.h: struct damon_ctx holds a mutex and a completion for its
 * kdamond thread; the region functions run on one thread and take neither.
 */
#ifndef LAB_REGIONS_MUTEX_H
#define LAB_REGIONS_MUTEX_H

struct mutex {
	int locked;
};

struct completion {
	unsigned int done;
};

#endif
