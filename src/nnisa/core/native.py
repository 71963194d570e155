"""Numba kernels that run without importing numba: lazy JIT plus an ahead-of-time (AOT) module.

``import numba`` and numba's first dispatcher call cost ~0.85 s per process on a 2-core machine
(its typing and lowering registries are loaded on first use), more than the whole simulation of
PIMCOMP-NN's ResNet-18 once loaded.  A kernel module that wants its Python callers to start fast
decorates its kernels with :func:`kernel` instead of ``numba.njit`` (same options):

* the decorator imports nothing; the first call picks, per argument types,
  1. the function of the **native module** — the kernels compiled ahead of time by numba's
     ``pycc`` into one C extension (``nnisa_native``) by :func:`build`, which ``make install``
     / ``python -m nnisa.warmup`` run after the warm-up jobs, for exactly the signatures those
     jobs JIT-compiled;
  2. otherwise the ordinary numba dispatcher (``njit(**options)``, numba's on-disk cache);
* a kernel that calls another kernel works in both worlds: to numba a :class:`Kernel` types
  as its dispatcher (``_numba_type_``) and inlines like one (``targetoptions``, ``py_func``).

The native module is used only while it is **fresh**: its manifest records a key over the
source files its kernels can depend on (``core/`` and the kernels' own target: path, size,
mtime), so an edited checkout falls back to the JIT until the next warm-up rebuilds it; ``NNISA_NATIVE=0`` disables it.  Arguments are checked
against the exported signature (dtype, dimensions, layout, read-only, scalar kind) before a
native call, and anything else goes to the JIT, so the native path never converts an argument
the JIT would have typed differently.  Both paths run the same source; the tests compare them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

#: the extension module's name (its ``PyInit_`` symbol); one per installation
MODULE = "nnisa_native"
MANIFEST = "nnisa_native.json"
_PACKAGE = Path(__file__).resolve().parent.parent
#: every kernel defined with :func:`kernel`, by qualified name
REGISTRY: dict[str, "Kernel"] = {}
#: folders searched instead of :func:`native_dirs` (tests)
_SEARCH: list[Path] = []
#: set by :func:`use_jit`: every kernel takes the JIT (the warm-up records its signatures so)
_JIT_ONLY = [False]


def native_dirs() -> list[Path]:
    """Where the native module is looked for / written: inside the package (an editable or
    writable install), else the user's cache."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nnisa" / "native"
    return [_PACKAGE / "_native", cache]


def source_dirs(modules) -> list[str]:
    """The sources a kernel's compiled code can depend on, as paths relative to the package:
    ``core/`` and the target or area each kernel module lives in (``targets/pim``), by the
    layering rule that kernels use only their own area's and ``core``'s constants; a module
    outside the package (a test's kernels) adds its own file (absolute)."""
    dirs = {"core"}
    for m in modules:
        parts = m.__name__.split(".")
        if parts[0] != _PACKAGE.name:
            dirs.add(str(Path(m.__file__).resolve()))
            continue
        parts = parts[1:]
        dirs.add("/".join(parts[:2] if parts[0] == "targets" else parts[:1]))
    return sorted(dirs)


def source_key(dirs: list[str]) -> str:
    """A key over the Python sources in ``dirs`` (relative path, size, mtime): a native module
    built from other sources must not run."""
    h = hashlib.sha1(f"{sys.version_info[:2]}".encode())
    entries = []
    for top in dirs:
        if top.endswith(".py"):  # one file outside the package
            st = os.stat(top) if os.path.exists(top) else None
            entries.append(f"{top}:{st and st.st_size}:{st and st.st_mtime_ns}")
            continue
        for root, sub, files in os.walk(_PACKAGE / top):
            sub[:] = [d for d in sub if d not in ("__pycache__", "_native")]
            for f in files:
                if f.endswith(".py"):
                    st = os.stat(os.path.join(root, f))
                    entries.append(f"{os.path.relpath(os.path.join(root, f), _PACKAGE)}:{st.st_size}:{st.st_mtime_ns}")
    for e in sorted(entries):
        h.update(e.encode())
    return h.hexdigest()


# --------------------------------------------------------------------------- argument checks
def _scalar_kind(v: Any) -> str | None:
    """numba's type name for a scalar argument as its typeof would see it (None: not a scalar)."""
    t = type(v)
    if t is bool or t is np.bool_:
        return "bool"
    if t is int:
        return "int64"
    if t is float:
        return "float64"
    if isinstance(v, np.generic):
        return v.dtype.name
    return None


def _matches(spec: list, args: tuple) -> bool:
    """Whether ``args`` have exactly the types of one exported signature."""
    if len(spec) != len(args):
        return False
    for s, a in zip(spec, args):
        if s[0] == "A":
            if not isinstance(a, np.ndarray) or a.dtype.str != s[1] or a.ndim != s[2]:
                return False
            fl = a.flags
            if (s[3] == "C" and not fl.c_contiguous) or (s[3] == "F" and not fl.f_contiguous):
                return False
            if not fl.writeable and not s[4]:  # a read-only array where the kernel may write
                return False
        else:
            if _scalar_kind(a) != s[1]:
                return False
    return True


def _spec_of(t) -> list | None:
    """The JSON-able check of one numba argument type (None: not exportable)."""
    from numba import types
    from numba.np.numpy_support import as_dtype

    if isinstance(t, types.Array):
        if t.layout not in ("C", "F", "A"):  # (numba's typeof types every array as aligned)
            return None
        return ["A", as_dtype(t.dtype).str, t.ndim, t.layout, not t.mutable]
    if isinstance(t, types.Boolean):
        return ["S", "bool"]
    if isinstance(t, (types.Integer, types.Float)):
        return ["S", as_dtype(t).name]
    return None


# --------------------------------------------------------------------------- the native module
_LOCK = threading.RLock()  # one load of the module / one dispatcher per kernel, whichever thread asks first


def _native() -> dict[str, list[tuple[list, Callable]]]:
    """The fresh native module's exports by kernel name (empty: none built, stale or disabled)."""
    with _LOCK:
        return _native_cached()


@functools.cache
def _native_cached() -> dict[str, list[tuple[list, Callable]]]:
    if _JIT_ONLY[0] or os.environ.get("NNISA_NATIVE", "1") == "0":
        return {}
    for d in _SEARCH or native_dirs():
        man = d / MANIFEST
        if not man.is_file():
            continue
        try:
            meta = json.loads(man.read_text())
        except (OSError, ValueError):
            continue
        if "dirs" not in meta or meta.get("key") != source_key(meta["dirs"]):
            continue
        path = d / meta["file"]
        try:
            loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
            spec = importlib.util.spec_from_file_location(MODULE, path, loader=loader)
            mod = importlib.util.module_from_spec(spec)
            loader.exec_module(mod)
        except (ImportError, OSError):
            continue
        return {name: [(e["args"], getattr(mod, e["export"])) for e in exports]
                for name, exports in meta["kernels"].items()}
    return {}


def native_status() -> str:
    """One line: whether a fresh native module is in use (benchmarks and tests say it)."""
    n = _native()
    if n:
        return f"native kernels: {sum(len(v) for v in n.values())} signature(s) of {len(n)} kernel(s)"
    return "native kernels: none fresh (numba JIT)"


class Kernel:
    """A numba kernel compiled on first use (see the module docstring)."""

    def __init__(self, py_func: Callable, options: dict):
        self.py_func = py_func
        self.targetoptions = dict(options)  # what numba's inliner reads from a dispatcher
        self.name = f"{py_func.__module__}.{py_func.__qualname__}"
        self._jit = None
        self._exports: list | None = None
        functools.update_wrapper(self, py_func)
        REGISTRY[self.name] = self

    @property
    def dispatcher(self):
        """The numba dispatcher (imports numba; compiles or loads from its cache on call)."""
        if self._jit is None:
            with _LOCK:
                if self._jit is None:
                    from numba import njit
                    self._jit = njit(**self.targetoptions)(self.py_func)
        return self._jit

    @property
    def _numba_type_(self):  # numba's typeof: a Kernel called from a kernel types as its dispatcher
        return self.dispatcher._numba_type_

    def native_for(self, args: tuple) -> Callable | None:
        """The native function for these arguments, None when there is none."""
        if self._exports is None:
            self._exports = _native().get(self.name, [])
        for spec, fn in self._exports:
            if _matches(spec, args):
                return fn
        return None

    def __call__(self, *args):
        fn = self.native_for(args)
        return self.dispatcher(*args) if fn is None else fn(*args)

    def __repr__(self) -> str:
        return f"<nnisa kernel {self.name}>"


def kernel(fn: Callable | None = None, **options) -> Any:
    """``numba.njit`` for kernels whose callers must not import numba (same options)."""
    if fn is None:
        return lambda f: Kernel(f, options)
    return Kernel(fn, options)


def use_jit(flag: bool = True) -> None:
    """Make every kernel take the JIT from now on (``flag``), or look for the native module
    again (``NNISA_NATIVE=0`` in the environment still disables it)."""
    _JIT_ONLY[0] = bool(flag)
    _forget()


def use_native(k: "Kernel", args: tuple) -> bool:
    """Whether a call of ``k`` on ``args`` should be made where a numpy path exists too: a fresh
    native export matches them, or :func:`use_jit` forced the JIT (the warm-up records its
    signatures so).  A kernel is then never JIT-compiled on the spot in a user's process."""
    return _JIT_ONLY[0] or k.native_for(args) is not None


def _forget() -> None:
    """Look for the native module again on the next call."""
    _native_cached.cache_clear()
    for k in REGISTRY.values():
        k._exports = None


# --------------------------------------------------------------------------- building it
def build(echo: Callable[[str], Any] | None = print, *, kernels: list[Kernel] | None = None,
          folders: list[Path] | None = None) -> Path | None:
    """Compile every signature the kernels (default: all) were JIT-compiled for in this process
    into the native module (numba ``pycc``; needs a C compiler) and write it with its manifest
    into the first writable of ``folders`` (default :func:`native_dirs`); returns the folder,
    None when there was nothing to build or the build failed (said on ``echo``)."""
    todo = [(k, cres) for k in (REGISTRY.values() if kernels is None else kernels) if k._jit is not None
            for cres in k._jit.overloads.values()]
    if not todo:
        return None
    dirs = source_dirs({sys.modules[k.py_func.__module__] for k, _ in todo})
    key = source_key(dirs)
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pycc's pending deprecation: the JIT remains the fallback
            from numba.pycc import CC
    except ImportError as exc:  # numba without pycc (removed in a future release)
        if echo:
            echo(f"nnisa native kernels: not built ({exc}); the numba JIT is used")
        return None
    exported: dict[str, list[dict]] = {}
    for d in folders or native_dirs():
        try:
            d.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=d))
        except OSError:
            continue
        try:
            cc = CC(MODULE)
            cc.output_dir = str(tmp)
            cc.target_cpu = "host"  # built on the machine it runs on
            cc.verbose = False
            for n, (k, cres) in enumerate(todo):
                spec = [_spec_of(t) for t in cres.signature.args]
                if any(s is None for s in spec):
                    continue
                export = f"k{n}"
                cc.export(export, cres.signature)(k.py_func)
                exported.setdefault(k.name, []).append({"export": export, "args": spec})
            with warnings.catch_warnings(), _pycc_flags(all(k.targetoptions.get("nogil") for k, _ in todo)):
                warnings.simplefilter("ignore")
                cc.compile()
            built = next(tmp.glob(f"{MODULE}*.so"), None) or next(tmp.glob(f"{MODULE}*.pyd"), None)
            if built is None:
                raise OSError("pycc wrote no extension module")
            # a new file name per build: a running process keeps its module, and the manifest
            # (replaced last) always names the module it describes
            final = d / f"{MODULE}-{key[:12]}-{os.getpid()}{''.join(built.suffixes)}"
            os.replace(built, final)
            meta = {"key": key, "dirs": dirs, "file": final.name, "numba": _numba_version(), "kernels": exported}
            (tmp / MANIFEST).write_text(json.dumps(meta, indent=1))
            os.replace(tmp / MANIFEST, d / MANIFEST)
            for old in d.glob(f"{MODULE}-*"):
                if old != final:
                    old.unlink(missing_ok=True)
        except Exception as exc:  # noqa: BLE001 (a missing compiler, a numba limitation: the JIT stays)
            if echo:
                echo(f"nnisa native kernels: not built ({type(exc).__name__}: {str(exc)[:200]}); the numba JIT is used")
            return None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        _forget()
        if echo:
            echo(f"nnisa native kernels: {sum(len(v) for v in exported.values())} signature(s) of {len(exported)} "
                 f"kernel(s) compiled ahead of time into {d}")
        return d
    return None


def build_in_fresh_process(targets: list[str], echo: Callable[[str], Any] | None = print) -> bool:
    """Build the native module in a new process that runs only ``targets``' warm-up jobs (on the
    JIT) first, so that the module holds exactly their signatures whatever else the calling
    process compiled.  Its lines go to ``echo``; True when it built."""
    import subprocess

    code = "import sys; from nnisa.core.native import _build_main; sys.exit(_build_main(sys.argv[1:]))"
    got = subprocess.run([sys.executable, "-c", code, *targets], capture_output=True, text=True)
    for line in (got.stdout + got.stderr).splitlines():
        if echo and line.startswith("nnisa native kernels"):
            echo(line)
    if got.returncode not in (0, 1) and echo:
        echo(f"nnisa native kernels: not built (the build process ended with {got.returncode}); "
             f"the numba JIT is used")
    return got.returncode == 0


def _build_main(targets: list[str]) -> int:
    """:func:`build_in_fresh_process`'s child: the targets' warm-up jobs, then :func:`build`."""
    from .target import get_target

    use_jit()
    for name in targets:
        get_target(name).warm_up()
    use_jit(False)
    return 0 if build() is not None else 1


@contextlib.contextmanager
def _pycc_flags(release_gil: bool):
    """While pycc compiles: every export gets its own copy of pycc's compile flags, and (when
    ``release_gil``) those flags release the GIL as the JIT's ``nogil=True`` does.

    * pycc passes one flags object to every export, and numba's inliner turns that object's SSA
      off when it inlines an ``inline="always"`` kernel: every export compiled after one such
      kernel lost SSA, and a variable assigned two global constants (``st = ST_OK`` … ``st =
      ST_BAIL``) then failed to type (``No conversion from Literal[int](1) to Literal[int](0)``);
      which exports failed depended on their order.
    * pycc's wrappers keep the GIL (it has no ``nogil`` option); releasing it lets a native scan
      run beside the thread that decompresses its input.  Only when every kernel is ``nogil``."""
    from numba.pycc import compiler

    base_flags, base_compile = compiler.Flags, compiler.compile_extra

    class NoGilFlags(base_flags):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.release_gil = True

    def compile_with_own_flags(typingctx, targetctx, func, args, return_type, flags, *a, **kw):
        return base_compile(typingctx, targetctx, func, args, return_type, flags.copy(), *a, **kw)

    if release_gil:
        compiler.Flags = NoGilFlags
    compiler.compile_extra = compile_with_own_flags
    try:
        yield
    finally:
        compiler.Flags, compiler.compile_extra = base_flags, base_compile


def _numba_version() -> str:
    import numba
    return numba.__version__
