"""``toy``: a sixth target in one folder — the worked example of docs/architecture.md.

A four-register accumulator machine with 16-bit instructions: ``isa.py`` (the table),
``files.py`` (the file formats), ``sim.py`` (values, cycles, energy, a timeline) and
``target.py`` (the face).  Registered by one line (``tests/contract/conftest.py``), it passes the
contract suite like the five real targets.
"""
