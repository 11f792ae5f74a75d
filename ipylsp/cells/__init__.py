"""The cells' session, on the kernel's side of the service: a notebook's executed cells, their
document (`session.CellSession`: the history, the window, the attribution of problems back
to cells, the editors' marks) and what the kernel knows that no server does
(`session.KernelView`, a `Reader`: callables into the live shell, attached by the surface
that has one).

Owns no servers and checks nothing itself: the document goes to the service as text, one
virtual `FileCheck` in `Service.check_files` beside the files a cell wrote, and a `Report`
comes back; nothing of the session (its callables, its history) crosses into the service.
Imports the model, the analysis, `ipylsp.private` and the facade's exported names; never a
room of the service nor the io layer's machinery below the facade (`tests/test_layers.py`),
and never IPython, Jupyter or mcp: `ipython/` attaches the kernel, `agent/` and `server/`
hold sessions of their own.
"""
