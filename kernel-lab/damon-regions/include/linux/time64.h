/* SPDX-License-Identifier: GPL-2.0 */
/* include/linux/time64.h: damon.h includes it; the region functions use none of it. */
