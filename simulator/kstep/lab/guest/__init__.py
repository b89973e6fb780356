"""Real kernels: Debian's Linux 6.12 images fetched (``kernels``), booted under qemu-system with the
probe initramfs (``qemu``), their KTAP output read (``ktap``) and judged beside the model's
prediction (``probes``, ``vma_locks``, ``plots``), and what the host needs for it (``doctor``)."""
