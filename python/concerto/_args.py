"""Command-line options of ``concerto optimize`` as keyword arguments of :func:`concerto.optimize`,
for adapters that take the command line's options (the Inductor pass, the JAX helpers)."""

from __future__ import annotations

#: ``--flag`` -> (keyword, type) of every option :func:`concerto.optimize` takes.
OPTIONS = {
    "--hardware": ("hardware", str),
    "--time-limit": ("time_limit", float),
    "--work-limit": ("work_limit", int),
    "--memory-budget": ("memory_budget", str),
    "--contention": ("contention", float),
    "--seed": ("seed", int),
    "--threads": ("threads", int),
    "--solver": ("solver", str),
    "--gpus-per-node": ("gpus_per_node", int),
    "--step": ("step", int),
    "--profile": ("profile", str),
}


def kwargs_from_args(args) -> dict | None:
    """``("--work-limit", "500")`` -> ``{"work_limit": 500}``; ``None`` when an option is not
    one :func:`concerto.optimize` takes (the caller then runs the command line). ``--flag=v``
    and ``--flag v`` both work; a value that does not parse raises ``ValueError`` naming it."""
    out: dict = {}
    items = list(args)
    i = 0
    while i < len(items):
        flag = str(items[i])
        value = None
        if "=" in flag:
            flag, value = flag.split("=", 1)
        if flag not in OPTIONS:
            return None
        if value is None:
            if i + 1 >= len(items):
                raise ValueError(f"{flag} needs a value")
            value = str(items[i + 1])
            i += 1
        key, kind = OPTIONS[flag]
        try:
            out[key] = kind(value)
        except ValueError as e:
            raise ValueError(f"{flag} {value!r}: {e}") from None
        i += 1
    return out
