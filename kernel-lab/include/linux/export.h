/* SPDX-License-Identifier: GPL-2.0 */
/* A static binary has no modules to export a symbol to. */
#ifndef LAB_LINUX_EXPORT_H
#define LAB_LINUX_EXPORT_H

#define EXPORT_SYMBOL(sym)

#endif /* LAB_LINUX_EXPORT_H */
