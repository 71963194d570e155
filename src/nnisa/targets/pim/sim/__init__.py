"""The PIM simulator: functional values (fast and reference interpreters), the timing and energy models,
traces, and the ``simulate()`` entry point (:mod:`.simulate`)."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["energy", "functional", "functional_bench", "functional_fast", "functional_ref", "functional_report",
           "machine", "memory", "semantics", "simulate", "stream", "timing", "timing_engine", "timing_report",
           "timing_rob", "timing_units", "trace", "weights"]
