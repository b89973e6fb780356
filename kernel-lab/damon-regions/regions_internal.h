/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel's region functions (mm/damon/core.c, mm/damon/vaddr.c) call beyond damon.h, in the
 * manner of tools/testing/vma/vma_internal.h: the slab allocator, error codes, RCU read-side marks
 * and a process's VMAs. Each stand-in counts its calls, so the harness can print the counts.
 */
#ifndef LAB_REGIONS_INTERNAL_H
#define LAB_REGIONS_INTERNAL_H

#include <errno.h>
#include <stdlib.h>
#include <linux/damon.h>

/* include/linux/slab.h: damon_region_cache is core.c's cache of struct damon_region */
struct kmem_cache {
	unsigned long allocs, frees;
};
#define GFP_KERNEL	0
static struct kmem_cache lab_region_cache;
static struct kmem_cache *damon_region_cache = &lab_region_cache;

static inline void *kmem_cache_alloc(struct kmem_cache *cache, int gfp)
{
	cache->allocs++;
	return malloc(sizeof(struct damon_region));
}

static inline void kmem_cache_free(struct kmem_cache *cache, void *object)
{
	cache->frees++;
	free(object);
}

/* include/linux/rcupdate.h: one thread, nothing to wait for; the marks must pair up */
static int lab_rcu_depth;
#define rcu_read_lock()		(lab_rcu_depth++)
#define rcu_read_unlock()	(lab_rcu_depth--)

/* include/linux/mm_types.h and mm.h: the VMAs of a process in address order, walked as the maple
 * tree's VMA iterator walks them */
struct vm_area_struct {
	unsigned long vm_start, vm_end;
};

struct mm_struct {
	struct vm_area_struct *vmas;
	unsigned int nr_vmas;
};

struct vma_iterator {
	struct mm_struct *mm;
	unsigned int next;
};

#define VMA_ITERATOR(name, mm_, addr)	struct vma_iterator name = { .mm = (mm_), .next = 0 }
#define for_each_vma(vmi, vma)						\
	while (((vma) = (vmi).next < (vmi).mm->nr_vmas ?		\
		&(vmi).mm->vmas[(vmi).next++] : NULL) != NULL)

#endif
