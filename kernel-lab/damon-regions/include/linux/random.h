/* SPDX-License-Identifier: GPL-2.0 */
/*
 * include/linux/random.h over kstep's SplitMix64 (common/splitmix64.h): get_random_u32() is the
 * upper half of one output, as simulator/kstep/models/damon/rand.py draws it, so damon_rand() gives
 * the model's numbers for the model's seed. get_random_u32_below() is drivers/char/random.c's
 * __get_random_u32_below(): Lemire's multiply-and-reject.
 */
#ifndef LAB_REGIONS_RANDOM_H
#define LAB_REGIONS_RANDOM_H

#include <linux/types.h>
#include "splitmix64.h"

extern struct splitmix64 lab_random;
extern unsigned long lab_random_draws;	/* get_random_u32() calls, rejections included */

static inline u32 get_random_u32(void)
{
	lab_random_draws++;
	return splitmix64_next(&lab_random) >> 32;
}

static inline u32 get_random_u32_below(u32 ceil)
{
	u32 rand = get_random_u32();
	u64 mult;

	if (!ceil)
		return rand;
	mult = (u64)ceil * rand;
	if ((u32)mult < ceil) {
		u32 bound = -ceil % ceil;

		while ((u32)mult < bound)
			mult = (u64)ceil * get_random_u32();
	}
	return mult >> 32;
}

#endif
