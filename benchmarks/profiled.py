"""Run a module under yappi (CPU time of every thread) for the benchmarks' ``--profile``.

    python -m benchmarks.profiled OUT.pstat MODULE [ARGS...]

SIGUSR1 clears the statistics and starts profiling; SIGUSR2 stops it and writes OUT.pstat (pstats
format).  yappi is a profiling tool installed by hand, not a dependency of the project.
"""
from __future__ import annotations

import runpy
import signal
import sys


def main() -> None:
    import yappi
    out, module = sys.argv[1], sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]
    yappi.set_clock_type("cpu")

    def start(*_) -> None:
        yappi.clear_stats()
        yappi.start(builtins=True, profile_threads=True)

    def dump(*_) -> None:
        yappi.stop()
        yappi.get_func_stats().save(out, type="pstat")
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, dump)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
