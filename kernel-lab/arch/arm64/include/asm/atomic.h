/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arm64 atomics: the kernel picks LSE (ldadd/swp/cas) or LL/SC (ldxr/stxr) at boot with
 * alternatives.  GCC's -moutline-atomics (Debian's default) does the same at program start:
 * every __atomic RmW calls a libgcc helper (__aarch64_swp2_relax, __aarch64_ldset4_acq, ...)
 * that tests HWCAP_ATOMICS once and then runs the LSE instruction or the LL/SC loop.  Run under
 * "qemu-aarch64 -cpu cortex-a57" to take the LL/SC paths.
 */
#ifndef LAB_ASM_ARM64_ATOMIC_H
#define LAB_ASM_ARM64_ATOMIC_H
#endif
