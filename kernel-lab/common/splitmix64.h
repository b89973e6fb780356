/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SplitMix64, kstep's one pseudo-random generator, in C.
 *
 * Bit for bit the generator of simulator/kstep/engine/prng.py (Sebastiano Vigna's splitmix64,
 * public domain): next() and the rejection-sampling below(n), so a seed means the same run in
 * Python and in every build of the lab.  tests/labcheck.py feeds Python's VECTORS and
 * BELOW_VECTORS to splitmix64-check on each architecture.
 */
#ifndef LAB_SPLITMIX64_H
#define LAB_SPLITMIX64_H

#include <stdint.h>

#define SPLITMIX64_GOLDEN_GAMMA 0x9E3779B97F4A7C15ULL

struct splitmix64 {
	uint64_t state;
};

static inline void splitmix64_seed(struct splitmix64 *r, uint64_t seed)
{
	r->state = seed;
}

static inline uint64_t splitmix64_next(struct splitmix64 *r)
{
	uint64_t z;

	r->state += SPLITMIX64_GOLDEN_GAMMA;
	z = r->state;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/*
 * An unbiased integer in [0, n), n >= 1: draws at or above the largest multiple of n below
 * 2^64 are rejected, the rest reduced modulo n.  2^64 mod n is (-n) mod n in 64-bit arithmetic;
 * when it is 0 every draw is accepted.
 */
static inline uint64_t splitmix64_below(struct splitmix64 *r, uint64_t n)
{
	uint64_t rem = (0 - n) % n;
	uint64_t x;

	for (;;) {
		x = splitmix64_next(r);
		if (rem == 0 || x < 0 - rem)
			return x % n;
	}
}

#endif /* LAB_SPLITMIX64_H */
