"""Mutation testing of tilegemm's core: plant one small bug at a time and check that a test fails.

Each mutant changes one site of one module (an operator, a comparison, a
constant, a boolean, min/max, or a removed raise, call, state update or
return value); it is run against the tests that cover that module (`MODULES`),
stopping at the first failure. A mutant is *killed* when a test fails or the run
times out, *survives* when every test passes. The edit is made on the source
text, so comments, docstrings and line numbers stay as they are.

Every run works in a private copy of the repository's tracked files (the
worktree is never modified) with its own compile cache, and writes a record of
every mutant and its fate (default benchmarks/mutation/mutation-<date>.json). See
scripts/mutation.sh.
"""
import argparse
import ast
import concurrent.futures
import datetime
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Core modules and the tests that cover each (pytest -x stops at the first failure).
LOWERING_TESTS = ["tests/docs", "tests/lower/test_driver.py", "tests/lower/test_plan.py",
                  "tests/lower/test_wgmma_pipelining.py", "tests/lower/test_epilogue_lowering.py",
                  "tests/lower/test_sm100.py", "tests/lower/test_examples_compile.py"]

# The tests of the designs tg.matmul ranks (the model budgets them from their traced graphs), and of its call.
DESIGN_TESTS = ["tests/ops/test_designs.py", "tests/ops/test_small_m_designs.py",
                "tests/ops/test_matmul_blockscaled.py"]
MATMUL_TESTS = ["tests/ops/test_matmul.py", "tests/ops/test_matmul_epilogue.py", "tests/ops/test_scale_padding.py"]


MODULES = {
    "tilegemm/model/budget.py": ["tests/model"],
    "tilegemm/model/config.py": ["tests/model"],
    "tilegemm/model/traffic.py": ["tests/model"],
    "tilegemm/model/designs.py": ["tests/model"],
    "tilegemm/model/from_graph.py": ["tests/model"] + DESIGN_TESTS,
    "tilegemm/model/layouts.py": ["tests/model"],
    "tilegemm/ops/designs.py": DESIGN_TESTS + ["tests/ops/test_stream_k.py"] + MATMUL_TESTS,
    "tilegemm/ops/dispatch.py": MATMUL_TESTS + ["tests/ops/test_batched.py", "tests/ops/test_matmul_fp8.py",
                                                "tests/ops/test_tuning.py"],
    "tilegemm/lower/cache.py": ["tests/lower/test_driver.py"],
    "tilegemm/lang/verify.py": ["tests/lang"],
    "tilegemm/lang/rules/*.py": ["tests/lang"],
    "tilegemm/interpret/barriers.py": ["tests/interpret"],
    "tilegemm/interpret/races.py": ["tests/interpret"],
    "tilegemm/interpret/memory.py": ["tests/interpret"],
    "tilegemm/interpret/clocks.py": ["tests/interpret"],
    "tilegemm/interpret/ops/copies.py": ["tests/interpret"],
    "tilegemm/interpret/ops/sync.py": ["tests/interpret"],
    "tilegemm/runtime/launch.py": ["tests/runtime"],
    "tilegemm/runtime/arrays.py": ["tests/runtime"],
    "tilegemm/lower/sm90.py": LOWERING_TESTS,
}

BINARY = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
          ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.LShift: ast.RShift, ast.RShift: ast.LShift,
          ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.BitXor: ast.BitAnd}
COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
           ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
SWAPPED_CALLS = {"min": "max", "max": "min"}


@dataclass(frozen=True)
class Mutant:
    """One edit of one module: the source span [start, end) (byte offsets) replaced by `replacement`."""
    module: str
    line: int
    start: int
    end: int
    replacement: str
    description: str


def mutants_of(module):
    """Every mutant of `module` (a path relative to the repository), in source order."""
    source = (ROOT / module).read_bytes()
    tree = ast.parse(source)
    line_starts = [0]
    for line in source.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    skip = {id(n) for fstring in ast.walk(tree) if isinstance(fstring, ast.JoinedStr) for n in ast.walk(fstring)}
    skip |= {id(n) for node in ast.walk(tree) for n in _unmutated_parts(node)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skip or not hasattr(node, "lineno"):
            continue
        for replacement, description in _edits(node):
            start = line_starts[node.lineno - 1] + node.col_offset
            end = line_starts[node.end_lineno - 1] + node.end_col_offset
            original = source[start:end].decode()
            # keep the line count: a multi-line node's lines are kept as blank lines inside the replacement
            padding = "\n" * original.count("\n")
            text = f"({replacement}{padding})" if isinstance(node, ast.expr) else replacement + padding
            found.append(Mutant(module, node.lineno, start, end, text, description))
    return sorted(found, key=lambda m: (m.start, m.end, m.description))


def _unmutated_parts(node):
    """Nodes never mutated: docstrings, annotations, decorators, `__all__`, and the `__main__` block."""
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node):
        yield from ast.walk(node.body[0])
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        for decorator in node.decorator_list:
            yield from ast.walk(decorator)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for arg in node.args.args + node.args.kwonlyargs + node.args.posonlyargs:
            if arg.annotation is not None:
                yield from ast.walk(arg.annotation)
        if node.returns is not None:
            yield from ast.walk(node.returns)
    if isinstance(node, ast.AnnAssign):
        yield from ast.walk(node.annotation)
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
        yield from ast.walk(node)
    if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
        yield from ast.walk(node)


def _edits(node):
    """(replacement source, description) of each mutation of `node` itself."""
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        yield _unparse_with(node, op=BINARY[type(node.op)]()), _op_change(node.op, BINARY[type(node.op)])
    elif isinstance(node, ast.AugAssign) and type(node.op) in BINARY:
        yield _unparse_with(node, op=BINARY[type(node.op)]()), _op_change(node.op, BINARY[type(node.op)]) + "="
        yield "pass", "removed augmented assignment"
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in COMPARE:
                ops = list(node.ops)
                ops[i] = COMPARE[type(op)]()
                yield _unparse_with(node, ops=ops), _op_change(op, COMPARE[type(op)])
    elif isinstance(node, ast.BoolOp):
        swapped = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield _unparse_with(node, op=swapped), _op_change(node.op, type(swapped))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        yield ast.unparse(node.operand), f"dropped unary {'not' if isinstance(node.op, ast.Not) else '-'}"
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield repr(not node.value), f"{node.value} -> {not node.value}"
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        yield repr(node.value + 1), f"{node.value} -> {node.value + 1}"
    elif isinstance(node, ast.Constant) and isinstance(node.value, float):
        changed = node.value * 2 if node.value else 1.0
        yield repr(changed), f"{node.value!r} -> {changed!r}"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SWAPPED_CALLS:
        other = SWAPPED_CALLS[node.func.id]
        yield ast.unparse(ast.Call(ast.Name(other), node.args, node.keywords)), f"{node.func.id} -> {other}"
    elif isinstance(node, ast.Raise):
        yield "pass", "removed raise"
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        yield "pass", "removed call"
    elif isinstance(node, ast.Assign) and all(isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets):
        yield "pass", "removed state update"
    elif isinstance(node, ast.Return) and node.value is not None and not _is_none(node.value):
        yield "return None", "return None instead of a value"


def _unparse_with(node, **fields):
    """The source of `node` with some fields replaced (the node itself is left unchanged)."""
    copy = type(node)(**{name: fields.get(name, getattr(node, name)) for name in node._fields})
    return ast.unparse(copy)


def _op_change(op, new_type):
    symbols = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
               ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
               ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
               ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.And: "and", ast.Or: "or"}
    return f"{symbols[type(op)]} -> {symbols[new_type]}"


def _is_none(node):
    return isinstance(node, ast.Constant) and node.value is None


def core_modules(patterns=None):
    """{module path: test paths} for the modules matching `patterns` (default: every core module)."""
    selected = {}
    for pattern, tests in MODULES.items():
        for path in sorted(ROOT.glob(pattern)):
            module = str(path.relative_to(ROOT))
            if path.name != "__init__.py" and (not patterns or any(fnmatch.fnmatch(module, p) or module == p
                                                                   for p in patterns)):
                selected[module] = tests
    return selected


# ----------------------------------------------------------------------------- running

class Sandbox:
    """A private copy of the repository's tracked files, where one module at a time is mutated and tested."""

    def __init__(self, tests_rev=None):
        self.dir = Path(tempfile.mkdtemp(prefix="tilegemm-mutation-"))
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        for name in files.decode().split("\0"):
            if name and (ROOT / name).is_file() and not (tests_rev and name.startswith("tests/")):
                (self.dir / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, self.dir / name)
        if tests_rev:  # the tests as they were at that revision, against today's code
            archive = subprocess.run(["git", "archive", tests_rev, "tests"], cwd=ROOT, capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(self.dir)], input=archive, check=True)

    def run_tests(self, tests, timeout):
        """(passed, seconds, failing test) of `pytest -x` on `tests` in the sandbox, with a fresh compile cache;
        the failing test is None when every test passed and "timeout" when the run took too long."""
        with tempfile.TemporaryDirectory(prefix="cache-", dir=self.dir) as cache:
            env = dict(os.environ, PYTHONPATH=str(self.dir), PYTHONDONTWRITEBYTECODE="1", TILEGEMM_CACHE_DIR=cache)
            present = [t for t in tests if (self.dir / t).exists()]   # --tests-rev: a file may not exist yet
            command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *present]
            start = time.perf_counter()
            try:
                done = subprocess.run(command, cwd=self.dir, env=env, capture_output=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return False, time.perf_counter() - start, "timeout"
            seconds = time.perf_counter() - start
            if done.returncode == 0:
                return True, seconds, None
            failed = [line.split()[1] for line in done.stdout.decode(errors="replace").splitlines()
                      if line.startswith(("FAILED ", "ERROR ")) and len(line.split()) > 1]
            return False, seconds, failed[0] if failed else f"pytest exit {done.returncode}"

    def run_mutant(self, mutant, tests, timeout):
        """The fate of `mutant` ('killed', 'survived' or 'timeout'), the seconds its tests took, the test that
        failed."""
        path = self.dir / mutant.module
        original = path.read_bytes()
        path.write_bytes(original[:mutant.start] + mutant.replacement.encode() + original[mutant.end:])
        try:
            passed, seconds, failed = self.run_tests(tests, timeout)
        finally:
            path.write_bytes(original)
        return ("survived" if passed else "timeout" if failed == "timeout" else "killed"), seconds, failed

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def sample(mutants, most):
    """At most `most` of `mutants`, evenly spread over the module (all of them when `most` is None)."""
    if most is None or len(mutants) <= most:
        return mutants
    return [mutants[i * len(mutants) // most] for i in range(most)]


def run(modules, budget_s, jobs, log, save, tests_rev=None, keep=(), most=None, only_kept=False):
    """Runs the mutants of `modules` ({module: tests}) until `budget_s` seconds have passed; returns the records,
    also passed to `save` after each module (so an interrupted run keeps what it found).

    Mutants of `keep` (records of an earlier run on the same code) whose fate cannot change are carried over
    instead of run (see `settled`); `only_kept` runs no mutant that `keep` lacks. Records of `keep` for modules
    outside `modules` are carried over as they are, so the record stays whole.
    """
    deadline = time.monotonic() + budget_s
    keep = list({_identity(r): r for r in keep}.values())   # a mutant in several records: the last one counts
    sandboxes = [Sandbox(tests_rev) for _ in range(jobs)]
    settled_records = {_identity(r): r for r in keep if settled(r, tests_rev)}
    kept = {_identity(r) for r in keep}
    free = list(sandboxes)
    records = [r for r in keep if r["module"] not in modules]
    try:
        for module, tests in modules.items():
            mutants = sample(mutants_of(module), most)
            records += [settled_records[_identity(asdict(m))] for m in mutants if _identity(asdict(m)) in settled_records]
            mutants = [m for m in mutants if _identity(asdict(m)) not in settled_records
                       and (not only_kept or _identity(asdict(m)) in kept)]
            if not mutants:
                save(records)
                continue
            passed, baseline, _ = sandboxes[0].run_tests(tests, timeout=None)
            if not passed:
                log(f"{module}: its tests fail without a mutant; skipped")
                continue
            timeout = 3 * baseline + 30
            log(f"{module}: {len(mutants)} mutants to run, tests {' '.join(tests)} take {baseline:.0f} s")

            def one(mutant):
                box = free.pop()
                try:
                    return mutant, box.run_mutant(mutant, tests, timeout)
                finally:
                    free.append(box)

            def collect(futures):
                for future in futures:
                    mutant, (fate, seconds, failed) = future.result()
                    records.append(dict(asdict(mutant), tests=tests, fate=fate, seconds=round(seconds, 1),
                                        killed_by=failed))
                    log(f"  {fate:8s} {mutant.module}:{mutant.line} {mutant.description}")

            with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
                running = set()
                for mutant in mutants:   # submitted one at a time, so none starts after the deadline
                    if time.monotonic() > deadline:
                        break
                    if len(running) == jobs:
                        done, running = concurrent.futures.wait(running, return_when="FIRST_COMPLETED")
                        collect(done)
                    running.add(pool.submit(one, mutant))
                collect(concurrent.futures.wait(running).done)
            save(records)
            if time.monotonic() > deadline:
                log("time budget spent")
                break
    finally:
        for box in sandboxes:
            box.remove()
    return records


def settled(record, tests_rev):
    """Whether an earlier run's verdict on a mutant still holds for a run with the tests of `tests_rev`.

    Without `tests_rev` the tests are today's, a superset of the earlier run's: a killed mutant stays killed. With
    an older `tests_rev` there are fewer tests: a survivor stays a survivor, and a mutant stays killed if the test
    that killed it already existed then.
    """
    if not tests_rev:
        return record["fate"] != "survived"
    if record["fate"] == "survived":
        return True
    return record["fate"] == "killed" and _test_exists(record["killed_by"], tests_rev)


def _test_exists(test_id, rev):
    """Whether the test `path::name[params]` was defined at git revision `rev`."""
    path, _, name = test_id.partition("::")
    shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True)
    return bool(name) and shown.returncode == 0 and f"def {name.split('[')[0]}(".encode() in shown.stdout


def _identity(record):
    """What identifies a mutant across runs of unchanged code: module, place and edit."""
    return record["module"], record["start"], record["end"], record["description"]


def summary(records):
    """{module: (killed, total)} and the overall fraction killed (timeouts count as killed)."""
    per_module = {}
    for r in records:
        killed, total = per_module.get(r["module"], (0, 0))
        per_module[r["module"]] = (killed + (r["fate"] != "survived"), total + 1)
    killed = sum(k for k, _ in per_module.values())
    total = sum(t for _, t in per_module.values())
    return per_module, (killed / total if total else None)


def report(records):
    """The score per module and the survivors, as markdown."""
    per_module, score = summary(records)
    lines = ["| module | killed | mutants | score |", "|---|---|---|---|"]
    lines += [f"| {m} | {k} | {t} | {k / t:.1%} |" for m, (k, t) in per_module.items()]
    if score is not None:
        lines.append(f"| **all** | {sum(k for k, _ in per_module.values())} | {len(records)} | **{score:.1%}** |")
    survivors = [r for r in records if r["fate"] == "survived"]
    if survivors:
        lines += ["", "Survivors:", ""]
        lines += [f"- {r['module']}:{r['line']} {r['description']}: `{_line(r)}`" for r in survivors]
    return "\n".join(lines)


def _line(record):
    """The source line a record mutated, as it is now in the repository."""
    lines = (ROOT / record["module"]).read_text().splitlines()
    return lines[record["line"] - 1].strip() if record["line"] <= len(lines) else "?"


def write_standing(score, date):
    """Sets `mutation_score` in benchmarks/standing.json with benchmarks/standing.py's writer (other keys kept)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import standing
    standing.update({"mutation_score": score}, "scripts/mutation.sh (CPU)", date, "CPU")


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("mutation: terminated"))   # still remove the copies
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("modules", nargs="*", help="modules (paths or globs) to mutate; default: every core module")
    p.add_argument("--list", action="store_true", help="list the modules, their tests and mutant counts, and stop")
    p.add_argument("--budget", type=float, default=6 * 3600, help="seconds after which no new mutant starts")
    p.add_argument("--sample", type=int, metavar="N", help="test at most N mutants per module, evenly spread")
    p.add_argument("--jobs", type=int, default=1, help="mutants tested at once (each in its own copy)")
    p.add_argument("--out", help="the JSON record to write (default benchmarks/mutation/mutation-<date>.json)")
    p.add_argument("--date", default=datetime.date.today().isoformat())
    p.add_argument("--standing", action="store_true", help="write the score to benchmarks/standing.json")
    p.add_argument("--report", metavar="JSON", nargs="+",
                   help="instead of running: report saved runs (of different modules) as one, written to --out "
                        "when given, and to benchmarks/standing.json with --standing")
    p.add_argument("--tests-rev", metavar="REV", help="test with the tests/ of git revision REV (e.g. the score "
                                                      "before a change to the tests)")
    p.add_argument("--only-recorded", action="store_true", help="with --retest: run no mutant its records lack")
    p.add_argument("--retest", metavar="JSON", action="append", default=[],
                   help="carry over the verdicts of a saved run that cannot change (see settled()); run the other "
                        "mutants (repeatable: runs of different modules)")
    args = p.parse_args()
    if args.report:
        runs = [json.loads(Path(path).read_text()) for path in args.report]
        records = list({_identity(r): r for saved in runs for r in saved["mutants"]}.values())
        print(report(records))
        if args.out:
            modules = {m: t for saved in runs for m, t in saved["modules"].items()}
            Path(args.out).write_text(json.dumps(dict(date=args.date, modules=modules, mutants=records), indent=1)
                                      + "\n")
        if args.standing:
            write_standing(summary(records)[1], args.date)
        return
    modules = core_modules(args.modules)
    if not modules:
        p.error(f"no core module matches {args.modules}; the core modules are {', '.join(MODULES)}")
    if args.list:
        for module, tests in modules.items():
            print(f"{len(mutants_of(module)):5d}  {module}  <- {' '.join(tests)}")
        return
    keep = [m for path in args.retest for m in json.loads(Path(path).read_text())["mutants"]]
    out = Path(args.out or ROOT / "benchmarks" / "mutation" / f"mutation-{args.date}.json")
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(records):
        out.write_text(json.dumps(dict(date=args.date, modules=modules, mutants=records), indent=1) + "\n")

    records = run(modules, args.budget, args.jobs, log=lambda text: print(text, flush=True), save=save,
                  tests_rev=args.tests_rev, keep=keep, most=args.sample, only_kept=args.only_recorded)
    print("\n" + report(records) + f"\n\nrecord: {out}")
    _, score = summary(records)
    if args.standing and score is not None:
        write_standing(score, args.date)


if __name__ == "__main__":
    main()
