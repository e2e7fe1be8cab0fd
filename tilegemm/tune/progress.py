"""The tuner's progress on stderr: a tqdm bar per phase where tqdm is installed, else its report lines.

The tuner reports in lines; those starting `[tune i/n]` (ranking by the model) or
`[tune measure i/n]` (timing) advance the bar of their phase, and the others
(the summaries) are written above it. In a notebook, tqdm draws a widget where
ipywidgets is installed.
"""
import re
import sys

STEP = re.compile(r"\[tune(?: (?P<phase>\w+))? (?P<done>\d+)/(?P<total>\d+)\] (?P<what>.*)")


def stderr_progress():
    """The reporter `tune(progress=True)` uses: bars with tqdm, lines without."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return lambda line: print(line, file=sys.stderr, flush=True)
    return ProgressBars(tqdm)


class ProgressBars:
    """A reporter drawing one tqdm bar per phase of the tuner's report lines."""

    def __init__(self, tqdm):
        self.tqdm = tqdm
        self.bar = None

    def __call__(self, line):
        step = STEP.fullmatch(line)
        if step is None:
            self.tqdm.write(line, file=sys.stderr)
            return
        desc = f"tune: {step['phase'] or 'model'}"
        if self.bar is None or self.bar.desc != desc:
            self.close()
            self.bar = self.tqdm(total=int(step["total"]), desc=desc, file=sys.stderr)
        self.bar.set_postfix_str(step["what"], refresh=False)
        self.bar.update(1)
        if int(step["done"]) == int(step["total"]):
            self.close()

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
