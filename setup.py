"""Package discovery for the polyglot layout: the core lives in python/, each backend in
backends/<x>/polykern_<x>/. Metadata, extras and entry points are in pyproject.toml."""
import glob
import os

from setuptools import find_packages, setup

package_dir = {"": "python"}
packages = find_packages("python")
for init in sorted(glob.glob(os.path.join("backends", "*", "polykern_*", "__init__.py"))):
    root = os.path.dirname(os.path.dirname(init))
    for pkg in find_packages(root):
        package_dir[pkg] = os.path.join(root, *pkg.split("."))
        packages.append(pkg)

setup(package_dir=package_dir, packages=packages)
