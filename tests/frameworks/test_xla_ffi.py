"""tilegemm.jax.xla_ffi on jax's CPU backend: a handler written in Python reads the call frame XLA passes (buffers,
int64 attributes, the device from the API table's last function) and writes its outputs in place; an exception in
it reaches the caller as an XLA error carrying its message."""
import numpy as np
import pytest

pytest.importorskip("jax.numpy")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from tilegemm.jax import xla_ffi  # noqa: E402

seen = []


def probe(call):
    """Records what it reads, refuses offset 13, and writes input 0 plus the `offset` attribute to its output."""
    offset = call.attributes["offset"]
    seen.append((call.inputs, call.outputs, call.attributes, call.device_ordinal()))
    if offset == 13:
        raise ValueError("13 is refused")
    call.outputs[0].numpy()[...] = call.inputs[0].numpy() + offset


PROBE = xla_ffi.handler(probe)   # XLA keeps only its address: it must live as long as the process
xla_ffi.register("tilegemm_test_probe", "cpu", PROBE)


def run_probe(x, y, **attributes):
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.jit(lambda x, y: jax.ffi.ffi_call("tilegemm_test_probe", out)(x, y, **attributes))(x, y)


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16, jnp.float32, jnp.int32])
def test_a_handler_reads_the_call_frame_and_writes_its_output_in_place(dtype):
    seen.clear()
    x, y = jnp.arange(24).reshape(4, 6).astype(dtype), jnp.zeros((3,), jnp.float32)
    out = run_probe(x, y, offset=np.int64(5))
    assert np.array_equal(np.asarray(out), np.asarray(x) + 5)
    (inputs, outputs, attributes, ordinal), = seen
    assert [(a.shape, a.dtype) for a in inputs] == [((4, 6), np.dtype(dtype)), ((3,), np.dtype(np.float32))]
    assert [(a.shape, a.dtype) for a in outputs] == [((4, 6), np.dtype(dtype))]
    assert attributes == {"offset": 5} and ordinal == 0


def test_an_exception_in_the_handler_is_an_xla_error_with_its_message():
    x = jnp.ones((2, 8), jnp.float32)
    with pytest.raises(jax.errors.JaxRuntimeError, match="ValueError: 13 is refused"):
        jax.block_until_ready(run_probe(x, x, offset=np.int64(13)))


def test_an_attribute_that_is_not_an_int64_is_refused_by_name():
    x = jnp.ones((2, 8), jnp.float32)
    with pytest.raises(jax.errors.JaxRuntimeError, match="attribute 'offset' is not an int64 scalar"):
        jax.block_until_ready(run_probe(x, x, offset=np.float32(1.5)))
