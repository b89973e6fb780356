"""The kernel lab's Python side: ``replay`` checks what C ports and real kernels observed against the
models, and ``guest`` boots Debian's Linux 6.12 under QEMU with the probes and reads their results.
The Linux source they build on is :mod:`kstep.source`, outside the lab, so that views may read it."""
