"""The kernel lab's Python side: ``replay`` checks what C ports and real kernels observed against the
models, ``guest`` boots Debian's Linux 6.12 under QEMU with the probes and reads their results, and
``source`` is the Linux 6.12 source (the function index, the committed excerpts, the unpacked tree
and the Debian packages they come from)."""
