/* SPDX-License-Identifier: GPL-2.0 */
/* The contention tracepoints, with no tracer to report to. */
#ifndef LAB_TRACE_EVENTS_LOCK_H
#define LAB_TRACE_EVENTS_LOCK_H

#define LCB_F_SPIN	(1U << 0)

#define trace_contention_begin(lock, flags)	do { } while (0)
#define trace_contention_end(lock, ret)		do { } while (0)

#endif /* LAB_TRACE_EVENTS_LOCK_H */
