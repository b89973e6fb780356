"""What a scenario file says, apart from the engine that runs it: the schema every mechanism's
files are validated against and the loader (``scenario``), the claims its text makes about its own
run (``expect``), the predict-then-reveal questions asked about a run (``questions``) and that own
run itself (``runs``).  The bundled files themselves are data, in :mod:`kstep.scenarios`."""
