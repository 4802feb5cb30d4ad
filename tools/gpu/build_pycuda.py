"""Build a pycuda wheel from its unpacked sdist, compiling the C++ files in parallel.

    python3 tools/gpu/build_pycuda.py SRC_DIR WHEEL_DIR --cuda-root DIR [--jobs N] [--configure-arg=--OPT=VAL]

pycuda builds one big extension (``_driver``: Boost.Python subset + the wrapper) whose ~45 C++
files distutils compiles one after another; this runs them on N threads instead (each file is
still one compiler process). It writes pycuda's ``siteconf.py`` for the given CUDA toolkit (curand
off: polykern does not use it and it needs curand.h), then runs ``setup.py bdist_wheel`` in this
process. If the distutils internals differ from what the patch expects, the build goes serial.
"""
from __future__ import annotations

import argparse
import os
import runpy
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def patch_parallel_compile(jobs: int) -> bool:
    """Make distutils' CCompiler.compile build its objects on ``jobs`` threads. False if not applied."""
    import setuptools  # noqa: F401  (installs setuptools' distutils)
    try:
        from distutils import ccompiler
    except ImportError:
        from setuptools._distutils import ccompiler  # type: ignore[no-redef]
    cls = ccompiler.CCompiler
    if not all(hasattr(cls, a) for a in ("_setup_compile", "_get_cc_args", "_compile")):
        return False

    def compile(self, sources, output_dir=None, macros=None, include_dirs=None, debug=False,
                extra_preargs=None, extra_postargs=None, depends=None):
        macros, objects, extra_postargs, pp_opts, build = self._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = self._get_cc_args(pp_opts, debug, extra_preargs)
        todo = [(obj, build[obj]) for obj in objects if obj in build]

        def one(item):
            obj, (src, ext) = item
            self._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for _ in pool.map(one, todo):  # re-raises the first CompileError
                pass
        return objects

    cls.compile = compile
    return True


def configure(src: str, cuda_root: str, extra) -> None:
    """Write siteconf.py through pycuda's own configure.py (the documented way)."""
    cmd = [sys.executable, "configure.py", f"--cuda-root={cuda_root}", "--no-cuda-enable-curand", *extra]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=src, check=True)
    with open(os.path.join(src, "siteconf.py")) as f:
        print(f.read(), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("src")
    p.add_argument("wheel_dir")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--cuda-root", required=True)
    p.add_argument("--configure-arg", action="append", default=[],
                   help="extra configure.py option, e.g. --configure-arg=--cudadrv-lib-dir=DIR")
    a = p.parse_args()
    src, wheel_dir = os.path.abspath(a.src), os.path.abspath(a.wheel_dir)
    configure(src, a.cuda_root, a.configure_arg)
    applied = patch_parallel_compile(a.jobs)
    print(f"parallel compile: {'on, ' + str(a.jobs) + ' jobs' if applied else 'off (distutils changed)'}",
          flush=True)
    os.chdir(src)
    sys.path.insert(0, src)
    sys.argv = ["setup.py", "bdist_wheel", "--dist-dir", wheel_dir]
    runpy.run_path("setup.py", run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
