"""Memory models and the kernel's C litmus tests (issue 24, section 1).

``litmus`` parses a test, ``executions`` plays herd7's C front end (events, dependencies,
candidate rf and co), and each model module (``sc``, ``tso``, ``arm64``, ``power``, ``lkmm``) says which
candidates it allows; ``verdict.check(test, model)`` gathers the final states, the
Always/Sometimes/Never/DEADLOCK verdict and one witness execution per state. The LKMM is
not re-implemented: ``cat`` interprets the kernel's own linux-kernel.bell, linux-kernel.cat
and lock.cat, read from the linux-source-6.12 tree that ``make linux-source`` unpacks into the
user cache (``kernel_tree`` finds it). Each hardware model lists its axioms as data (``axioms``), so a
forbidden execution names the axiom it breaks and the cycle that breaks it; ``stepping`` turns a
test into an engine model the player animates (x86-TSO's store buffers operationally, the other
models by revealing one execution), and ``primitives`` says where 6.12 defines each primitive for
each architecture (the code pane's source). Everything but ``kernel_tree`` imports only the
standard library and the engine.
"""
