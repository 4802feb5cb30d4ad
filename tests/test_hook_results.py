"""What a post-processing hook returns is checked where it is called (red-team pass over the plugin interface): text
that cannot be stored as UTF-8 (a lone surrogate, as os.fsdecode or errors="surrogateescape" make) is
a CompileError naming the hook, for every backend with a postproc hook, not a UnicodeEncodeError from
deep inside the codegen."""
import pytest

import polykern as pk
from polykern import Buffer, f32, hooks, i32, registry
from polykern.errors import CompileError


@pk.kernel
def scale(n: i32, a: f32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * y[i]


def append_a_file_read_with_surrogateescape(source, target):
    return source + "\n// " + b"caf\xe9".decode("utf-8", "surrogateescape") + "\n"


@pytest.fixture(autouse=True)
def _no_hooks():
    yield
    for name in registry.names(hooks.PREFIX):
        registry.remove(name)


@pytest.mark.parametrize("target", ["opencl", "webgpu", "cuda -fmt=cuda", "metal"])
def test_a_hook_returning_text_that_is_not_utf8_is_named(target):
    kind = target.split()[0]
    registry.register(f"polykern.hook.{kind}.postproc", append_a_file_read_with_surrogateescape)
    with pytest.raises(CompileError, match=rf"the polykern\.hook\.{kind}\.postproc hook "
                                           rf".*append_a_file_read_with_surrogateescape returned text that "
                                           rf"cannot be stored as UTF-8 \(a lone surrogate '\\udce9' at index "):
        pk.build([scale], targets=[target])
