"""The fuzz cases: calls no user should get a fault or a silent wrong answer from.

Every case is a function of torch (and the tilegemm module) run in a worker
process. A *bad call* must raise a tg error (tg.TileGemmError) before anything
runs; a *good shape* is a legal tg.matmul whose result must match a float64
reference with every element written (outputs are poisoned with NaN).
"""
import math
import random

import numpy as np

BAD = "bad"
GOOD = "good"


def _operands(torch, m, n, k, dtype="float16", seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = getattr(torch, dtype)
    return (torch.randn(m, k, device="cuda", generator=g).to(dt),
            torch.randn(k, n, device="cuda", generator=g).to(dt))


def _misaligned(torch, rows, cols, byte_offset, dtype="float16"):
    dt = getattr(torch, dtype)
    storage = torch.randn(rows * cols + 16, device="cuda").to(dt)
    start = byte_offset // storage.element_size()
    return storage[start:start + rows * cols].view(rows, cols)


def _not_arrays(torch):
    """Things that are not arrays, each with a name."""
    return {"list": [[1.0] * 64] * 64, "tuple": (1.0, 2.0), "None": None, "int": 3, "float": 2.5, "str": "a",
            "dict": {"a": 1}, "bytes": b"\0" * 128, "torch.Size": torch.Size([64, 64]),
            "numpy object array": np.empty((2, 2), dtype=object)}


def _bad_operands(torch, tg):
    """(name, operand) pairs that are arrays of the wrong kind for a 64x64 @ 64x64 f16 product."""
    f16 = torch.float16
    ops = {
        "meta tensor": torch.empty(64, 64, device="meta", dtype=f16),
        "float32": torch.randn(64, 64, device="cuda"),
        "float64": torch.randn(64, 64, device="cuda", dtype=torch.float64),
        "int32": torch.ones(64, 64, device="cuda", dtype=torch.int32),
        "bool": torch.ones(64, 64, device="cuda", dtype=torch.bool),
        "complex64": torch.ones(64, 64, device="cuda", dtype=torch.complex64),
        "float8_e4m3fn": torch.randn(64, 64, device="cuda").to(torch.float8_e4m3fn),
        "1-D": torch.randn(64, device="cuda").to(f16),
        "4-D": torch.randn(2, 2, 64, 64, device="cuda").to(f16),
        "0-D": torch.tensor(1.0, device="cuda").to(f16),
        "strided columns": torch.randn(64, 128, device="cuda").to(f16)[:, ::2],
        "offset by 2 bytes": _misaligned(torch, 64, 64, 2),
        "offset by 8 bytes": _misaligned(torch, 64, 64, 8),
        "bfloat16 beside float16": torch.randn(64, 64, device="cuda").to(torch.bfloat16),
        "tg.ShapeDtype": tg.ShapeDtype((64, 64), tg.float16),
        "numpy float32": np.ones((64, 64), np.float32),
    }
    return ops


NOT_ARRAYS = ("list", "tuple", "None", "int", "float", "str", "dict", "bytes", "torch.Size", "numpy object array")
BAD_OPERANDS = ("meta tensor", "float32", "float64", "int32", "bool", "complex64", "float8_e4m3fn", "1-D", "4-D",
                "0-D", "strided columns", "offset by 2 bytes", "offset by 8 bytes", "bfloat16 beside float16",
                "tg.ShapeDtype", "numpy float32")


def _example(name):
    import os
    from tilegemm.showcase import load_example
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return load_example(os.path.join(root, "examples", name + ".py"))


def _built(name, m, n, k):
    """`name`'s kernel (an example, or the flagship) built for m x n x k in f16."""
    if name == "flagship":
        from tilegemm.ops import hopper_matmul
        return hopper_matmul.build(m, n, k)
    return _example(name).build(m, n, k)


# The calls a bad operand is given to, all made for 64x64 @ 64x64 in f16.
ENTRIES = {
    "tg.matmul": lambda tg, a, b: tg.matmul(a, b),
    "tg.matmul(interpret=True)": lambda tg, a, b: tg.matmul(a, b, interpret=True),
    "the flagship kernel": lambda tg, a, b: _built("flagship", 64, 64, 64)(a, b),
    "hopper_v2_tma_wgmma": lambda tg, a, b: _built("hopper_v2_tma_wgmma", 64, 64, 64)(a, b),
}


def bad_cases():
    """(case id, kind, function(torch, tg)) for every bad call."""
    cases = []

    def add(name, fn):
        cases.append((f"bad: {name}", BAD, fn))

    for entry in ENTRIES:
        for position in ("a", "b"):
            for label in NOT_ARRAYS + BAD_OPERANDS:
                def fn(torch, tg, label=label, position=position, entry=entry):
                    a, b = _operands(torch, 64, 64, 64)
                    table = _not_arrays(torch) if label in NOT_ARRAYS else _bad_operands(torch, tg)
                    bad = table[label]
                    call = ENTRIES[entry]
                    return call(tg, bad, b) if position == "a" else call(tg, a, bad)
                add(f"{entry} with {position} = {label}", fn)
    # shapes no product has
    for (ma, ka), (kb, nb) in [((64, 64), (32, 64)), ((64, 0), (0, 64)), ((0, 64), (64, 64)), ((64, 36), (36, 64)),
                               ((64, 64), (64, 60)), ((64, 8), (16, 64)), ((1, 8), (8, 12)), ((64, 64), (64, 0))]:
        def fn(torch, tg, ma=ma, ka=ka, kb=kb, nb=nb):
            a = torch.randn(ma, ka, device="cuda").to(torch.float16)
            b = torch.randn(kb, nb, device="cuda").to(torch.float16)
            return tg.matmul(a, b)
        add(f"tg.matmul of [{ma}, {ka}] @ [{kb}, {nb}]", fn)
    # batches no product has (a 3-D a with a 2-D b shared by every entry is a legal batched call)
    for a_shape, b_shape in [((2, 64, 64), (3, 64, 64)), ((64, 64), (2, 64, 64)), ((2, 64, 64), (2, 32, 64))]:
        def fn(torch, tg, a_shape=a_shape, b_shape=b_shape):
            a = torch.randn(*a_shape, device="cuda").to(torch.float16)
            b = torch.randn(*b_shape, device="cuda").to(torch.float16)
            return tg.matmul(a, b)
        add(f"tg.matmul of {list(a_shape)} @ {list(b_shape)}", fn)
    # out= that does not fit, before and after the call's fast path exists
    outs = {
        "wrong shape": lambda torch: torch.empty(64, 32, device="cuda", dtype=torch.float16),
        "wrong dtype": lambda torch: torch.empty(64, 64, device="cuda", dtype=torch.float32),
        "on the host": lambda torch: torch.empty(64, 64, dtype=torch.float16),
        "strided": lambda torch: torch.empty(64, 128, device="cuda", dtype=torch.float16)[:, ::2],
        "misaligned": lambda torch: _misaligned(torch, 64, 64, 8),
        "a list": lambda torch: [[0.0] * 64] * 64,
        "meta": lambda torch: torch.empty(64, 64, device="meta", dtype=torch.float16),
    }
    for warm in (False, True):
        for label, make in outs.items():
            def fn(torch, tg, make=make, warm=warm):
                a, b = _operands(torch, 64, 64, 64)
                if warm:
                    tg.matmul(a, b)
                return tg.matmul(a, b, out=make(torch))
            add(f"tg.matmul out= {label}{' after a good call' if warm else ''}", fn)
    # arity, keywords and options
    calls = {
        "no arguments": lambda tg, a, b: tg.matmul(),
        "one argument": lambda tg, a, b: tg.matmul(a),
        "three arguments": lambda tg, a, b: tg.matmul(a, b, a),
        "unknown keyword": lambda tg, a, b: tg.matmul(a, b, alpha=2.0),
        "debug='yes'": lambda tg, a, b: tg.matmul(a, b, debug="yes"),
        "interpret=True on GPU tensors": lambda tg, a, b: tg.matmul(a, b, interpret=True),
    }
    for label, call in calls.items():
        add(f"tg.matmul {label}", lambda torch, tg, call=call: call(tg, *_operands(torch, 64, 64, 64)))
    # a kernel built for one shape, called with others (it used to retrace and return a partial result)
    kernel_calls = {
        "larger K": (200, 264, 200), "smaller K": (200, 264, 72), "fewer rows": (100, 264, 136),
        "more rows": (300, 264, 136), "more columns": (200, 272, 136), "K of a and b differ": None,
        "float16 kernel given bfloat16": "bf16", "three arrays": "three", "no arrays": "none",
        "unknown keyword": "kw", "seed without interpret": "seed", "interpret=True on GPU tensors": "interp",
        "a list": "list", "a meta tensor": "meta", "out= of the wrong shape": "out",
    }
    for label, variant in kernel_calls.items():
        def fn(torch, tg, variant=variant):
            kernel = _built("hopper_v4_tuned", 200, 264, 136)
            a, b = _operands(torch, 200, 264, 136)
            kernel(a, b)   # the kernel's own shape works
            if isinstance(variant, tuple):
                m, n, k = variant
                return kernel(*_operands(torch, m, n, k))
            if variant is None:
                return kernel(a, _operands(torch, 200, 264, 144)[1])
            other = {
                "bf16": lambda: kernel(a.to(torch.bfloat16), b.to(torch.bfloat16)),
                "three": lambda: kernel(a, b, b), "none": lambda: kernel(),
                "kw": lambda: kernel(a, b, tile_k=32), "seed": lambda: kernel(a, b, seed=1),
                "interp": lambda: kernel(a, b, interpret=True), "list": lambda: kernel([[1.0]], b),
                "meta": lambda: kernel(torch.empty(200, 136, device="meta", dtype=torch.float16), b),
                "out": lambda: kernel(a, b, out=torch.empty(8, 8, device="cuda", dtype=torch.float16)),
            }
            return other[variant]()
        add(f"hopper_v4_tuned built for 200x264x136, {label}", fn)
    return cases


def good_shapes(count, seed=0):
    """`count` random legal (M, N, K, dtype) for tg.matmul: M from 1, N and K multiples of 8 from 8, up to
    several thousand, log-uniform so small and ragged sizes are common; plus the corners."""
    rng = random.Random(seed)
    corners = [(1, 8, 8), (1, 8, 16), (1, 3000, 3000), (1, 8192, 8192), (2, 8, 8), (3, 24, 40), (127, 8, 8),
               (129, 8200, 8), (8, 4104, 1032)]
    shapes = [(m, n, k, "float16") for m, n, k in corners] + [(m, n, k, "bfloat16") for m, n, k in corners[:4]]

    def draw(low, high, multiple):
        value = int(math.exp(rng.uniform(math.log(low), math.log(high))))
        return max(multiple, value - value % multiple)
    while len(shapes) < count:
        shapes.append((draw(1, 5000, 1), draw(8, 5000, 8), draw(8, 5000, 8), rng.choice(["float16", "bfloat16"])))
    return shapes


def good_cases(count):
    """(case id, kind, function(torch, tg)) for legal tg.matmul calls, each checked against float64."""
    cases = []
    for m, n, k, dtype in good_shapes(count):
        def fn(torch, tg, m=m, n=n, k=k, dtype=dtype):
            from tilegemm.testing import compare
            a, b = _operands(torch, m, n, k, dtype, seed=m * 7 + n * 3 + k)
            c = tg.matmul(a, b, debug=tg.Debug(poison_outputs=True))
            torch.cuda.synchronize()
            expected = (a.double() @ b.double()).cpu().numpy()
            got = c.float().cpu().numpy()
            return compare(got, expected, k=k, dtype=getattr(tg, dtype))
        cases.append((f"good: {m}x{n}x{k} {dtype}", GOOD, fn))
    return cases
