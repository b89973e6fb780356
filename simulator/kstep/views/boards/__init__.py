"""Each mechanism's board and charts as rows of boxes and per-frame columns, one module per
mechanism.  Standard library only: interactive mode builds them in the browser (Pyodide)."""
