"""The robustness suite's helpers live in harness.py (importable by name from its tests)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
