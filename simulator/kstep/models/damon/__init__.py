"""DAMON (mm/damon/) of Linux 6.12.117: the region operations as plain functions over immutable values.

core.py, vaddr.py and damos.py are the kernel's functions, in its order and with its C arithmetic.
"""
