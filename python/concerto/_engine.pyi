"""Type stubs of ``concerto._engine``, the Rust engine (see ``concerto``)."""

import os
from typing import Any

__version__: str

GraphArg = str | os.PathLike[str] | dict[str, Any]

class Report:
    """The result of :func:`optimize`."""

    optimized_ns: int
    """Simulated makespan of concerto's plan (ns)."""
    program_order_ns: int
    """The program order's (the recorded order of a trace, the module's order of HLO) (ns)."""
    lower_bound_ns: int
    """The proven lower bound (ns)."""
    bound_kind: str
    """Which bound binds."""
    rows: list[tuple[str, int, int, int]]
    """Per scheduler: (name, makespan ns, exposed communication ns, peak memory bytes)."""
    @property
    def plan(self) -> dict[str, Any]:
        """Concerto's plan in the plan file format (``concerto optimize --plan``)."""
    def plan_json(self) -> str:
        """The plan file's text."""
    def to_json(self) -> str:
        """Exactly ``concerto optimize --json``'s output."""

def optimize(
    graph: GraphArg,
    hardware: str = "h100",
    time_limit: float | None = None,
    work_limit: int | None = None,
    memory_budget: int | str | None = None,
    contention: float | None = None,
    seed: int = 0,
    threads: int = 1,
    solver: str = "pumpkin",
    gpus_per_node: int = 8,
    step: int | None = None,
    profile: str | os.PathLike[str] | None = None,
    profile_strict: bool = False,
    trip_counts: dict[str, int] | None = None,
    unknown_trip_count: int | None = None,
    unbounded_dim_size: int | None = None,
) -> Report:
    """Concerto's plan for a graph: ``concerto optimize`` in process. ``profile``: a
    ``jax.profiler`` trace of the HLO module ``graph`` names, whose kernels cost its ops
    (``--profile``); ``profile_strict``: an instruction of the profile the module lacks is an
    error (``--profile-strict``). For an HLO module: ``trip_counts`` gives the trip count of
    ``while`` loops by instruction name (``--trip-count NAME=N``), ``unknown_trip_count`` that
    of every loop whose count cannot be read, with a warning naming each
    (``--unknown-trip-count``), ``unbounded_dim_size`` the size of every unbounded dimension
    ``?`` (``--unbounded-dim-size``)."""

def simulate(
    graph: GraphArg,
    plan: str | dict[str, Any],
    hardware: str = "h100",
    contention: float | None = None,
    gpus_per_node: int = 8,
    step: int | None = None,
    trip_counts: dict[str, int] | None = None,
    unknown_trip_count: int | None = None,
    unbounded_dim_size: int | None = None,
) -> dict[str, Any]:
    """A stream plan simulated: ``concerto simulate --json`` (the import options as in
    :func:`optimize`)."""

def solve(
    instance: str | os.PathLike[str],
    solver: str = "pumpkin",
    time_limit: float | None = None,
    work_limit: int | None = None,
    seed: int = 0,
    threads: int = 1,
) -> dict[str, Any]:
    """An RCPSP instance solved: ``concerto solve --json``, with ``starts`` by activity."""

def import_graph(
    path: str | os.PathLike[str],
    gpus_per_node: int = 8,
    step: int | None = None,
    trip_counts: dict[str, int] | None = None,
    unknown_trip_count: int | None = None,
    unbounded_dim_size: int | None = None,
) -> dict[str, Any]:
    """A file read into Concerto's native graph format (a trace's report under ``trace``,
    the importer's warnings under ``warnings``; the import options as in :func:`optimize`)."""

def solvers() -> list[tuple[str, str, bool]]:
    """(name, description, compiled in) of every solver this build knows."""
