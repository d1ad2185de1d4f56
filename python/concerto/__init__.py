"""Concerto: exact scheduling of distributed training steps, in process.

The engine is Rust (``concerto._engine``, built into this package by ``pip install ./python``);
every function releases the GIL while it works, and raises ``ValueError`` (bad input) or
``RuntimeError`` (a failing solve) with the message the ``concerto`` command line prints.
The options and defaults are the command line's::

    import concerto
    report = concerto.optimize("step.hlo", work_limit=20000)   # concerto optimize step.hlo --work-limit 20000
    report.optimized_ns, report.lower_bound_ns, report.bound_kind
    report.plan                  # the plan file (concerto optimize --plan) as a dict
    report.to_json()             # exactly concerto optimize --json

- :func:`optimize`: concerto's plan for a graph (a path: XLA HLO text, a compiled module, a
  native JSON graph, a PyTorch profiler trace; or a dict in the native graph format).
- :func:`simulate`: a stream plan simulated (``concerto simulate --json``).
- :func:`solve`: an RCPSP instance (PSPLIB ``.sm``, ``.rcp``, JSON) solved (``concerto solve --json``).
- :func:`import_graph`: a file read into the native graph format.
- :func:`solvers`: the solvers this build knows.
- :mod:`concerto.binary`: where the ``concerto`` command line is (:func:`concerto.binary.find`).

A source checkout on ``PYTHONPATH`` has no built engine: there ``import concerto`` still
works (for :mod:`concerto.binary`), and the engine's names raise ``AttributeError`` saying so.
"""

try:
    from ._engine import Report, __version__, import_graph, optimize, simulate, solve, solvers
except ImportError as _missing:  # a checkout on PYTHONPATH: the extension is not built here
    _ENGINE_ERROR = f"{_missing}"

    def __getattr__(name: str):
        raise AttributeError(
            f"concerto.{name}: the engine is not built into this package ({__path__[0]}: "
            f"{_ENGINE_ERROR}); install it with `pip install ./python`"
        )

__all__ = ["Report", "__version__", "import_graph", "optimize", "simulate", "solve", "solvers"]
