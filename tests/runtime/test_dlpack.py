"""The ctypes DLPack reader and exporter (no GPU needed: the exported pointers are never dereferenced)."""
import gc
import weakref

import numpy as np

import tilegemm as tg
from tilegemm.runtime import dlpack


class Owner:
    """Stands for the memory's owner, to watch its lifetime."""


def test_numpy_capsule_gives_pointer_shape_and_element_strides():
    base = np.zeros((4, 8), np.float16)
    info = dlpack.read(base[1:, 2:].T.__dlpack__())
    assert info.ptr == base.ctypes.data + (8 + 2) * 2
    assert (info.device_type, info.shape, info.strides, info.dtype) == (dlpack.CPU, (6, 3), (1, 8), np.float16)


def test_exported_capsule_reads_back():
    info = dlpack.read(dlpack.export(0x1000, 3, (2, 5), tg.bfloat16, Owner()))
    assert (info.ptr, info.device_type, info.device_id) == (0x1000, dlpack.CUDA, 3)
    assert (info.shape, info.strides, info.dtype) == ((2, 5), (5, 1), tg.bfloat16)


def test_unconsumed_capsule_releases_the_owner_when_collected():
    owner = Owner()
    alive = weakref.ref(owner)
    capsule = dlpack.export(0x1000, 0, (4,), np.float32, owner)
    del owner
    gc.collect()
    assert alive() is not None
    del capsule
    gc.collect()
    assert alive() is None
