"""One py_test per pytest file, generated from a glob so new test files need no BUILD edits."""

load("@rules_python//python:defs.bzl", "py_test")

_MAIN = Label("//tests/bazel:pytest_main.py")

def pytest_file_tests(
        files,
        deps = [],
        data = [],
        overrides = {},
        tags = [],
        exec_properties = None,
        target_compatible_with = None,
        size = "medium"):
    """Declares py_test <stem> for each file in `files` (e.g. glob(["test_*.py"])).

    Args:
      files: the pytest files of this package.
      deps: deps of every test (pytest, hypothesis and numpy are added).
      data: data of every test.
      overrides: basename -> dict of extra/replacement attributes for one file:
        "deps", "data", "tags", "args" are appended; "size", "timeout", "shard_count",
        "flaky", "env" replace.
      tags: tags of every test.
      exec_properties: exec_properties of every test (e.g. {"test.Pool": "gpu"}).
      target_compatible_with: of every test (e.g. a select() on a runtime being enabled).
      size: default test size.
    """
    for f in files:
        base = f.split("/")[-1]
        if not base.endswith(".py"):
            fail("not a Python file: " + f)
        o = overrides.get(base, {})
        extra = {}
        for k in ["timeout", "shard_count", "flaky", "env"]:
            if k in o:
                extra[k] = o[k]
        py_test(
            name = base[:-len(".py")],
            srcs = [f, _MAIN],
            main = _MAIN,
            args = ["$(rootpath %s)" % f] + o.get("args", []),
            deps = deps + o.get("deps", []) + [
                Label("@pypi//pytest"),
                Label("@pypi//hypothesis"),
                Label("@pypi//numpy"),
            ],
            data = data + o.get("data", []),
            size = o.get("size", size),
            tags = tags + o.get("tags", []),
            exec_properties = exec_properties,
            target_compatible_with = target_compatible_with,
            legacy_create_init = 0,
            **extra
        )
