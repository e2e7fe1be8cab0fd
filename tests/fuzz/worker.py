"""Runs fuzz cases in one process and appends one JSON line per case; exits at the first fault.

    python -m tests.fuzz.worker RESULTS.jsonl GOOD_COUNT INDEX...
"""
import json
import sys
import traceback

from .cases import BAD, GOOD, bad_cases, good_cases


def all_cases(good_count):
    return bad_cases() + good_cases(good_count)


def run_one(torch, tg, kind, fn):
    """(outcome, detail): refused / wrong_error_type / silent for bad calls, correct / silent / refused_legal /
    error for good ones, fault when the GPU is unusable afterwards."""
    result, error = None, None
    try:
        result = fn(torch, tg)
        torch.cuda.synchronize()
    except tg.TileGemmError as e:
        error = ("tg", f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
    except Exception as e:  # noqa: BLE001  (classified below: any non-tg error is a finding)
        error = ("other", f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
    try:
        torch.cuda.synchronize()
        torch.ones(1, device="cuda").add_(1).item()
    except Exception as e:  # noqa: BLE001
        return "fault", f"{error[1] if error else 'no error'}; afterwards the GPU failed: {type(e).__name__}: {e}"
    if kind == BAD:
        if error is None:
            return "silent", "the bad call was accepted"
        return ("refused", error[1]) if error[0] == "tg" else ("wrong_error_type", error[1])
    if error is not None:
        return ("refused_legal" if error[0] == "tg" else "error"), error[1]
    return ("correct", "") if result.ok else ("silent", "; ".join(result.lines()[:3]))


def main(argv):
    path, good_count, indices = argv[0], int(argv[1]), [int(i) for i in argv[2:]]
    import torch
    import tilegemm as tg
    cases = all_cases(good_count)
    with open(path, "a") as out:
        for index in indices:
            name, kind, fn = cases[index]
            try:
                outcome, detail = run_one(torch, tg, kind, fn)
            except Exception:  # noqa: BLE001  (a failure of the harness itself)
                outcome, detail = "error", traceback.format_exc(limit=3)
            out.write(json.dumps(dict(index=index, name=name, kind=kind, outcome=outcome, detail=detail)) + "\n")
            out.flush()
            if outcome == "fault":
                return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
