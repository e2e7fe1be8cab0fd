"""Writing Python source text: indented lines, blocks, and unique readable names."""
import contextlib
import keyword
import re


class SourceWriter:
    """Accumulates indented lines of Python source."""

    def __init__(self, indent=0):
        self.lines = []
        self.depth = indent

    def line(self, text="", comment=None):
        """Appends one line at the current depth, with an optional trailing `# comment`."""
        pad = "    " * self.depth
        if comment:
            text = f"{text}  # {comment}" if text else f"# {comment}"
        self.lines.append(pad + text if text else "")

    def comment(self, text):
        self.line("", comment=text)

    @contextlib.contextmanager
    def block(self, header, comment=None):
        """Writes `header` (ending in ':') and indents the lines written inside the `with`."""
        self.line(header, comment)
        self.depth += 1
        start = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == start:
                self.line("pass")
            self.depth -= 1

    def extend(self, other):
        """Appends another writer's lines, re-indented to this writer's depth."""
        pad = "    " * self.depth
        self.lines.extend(pad + ln if ln else "" for ln in other.lines)

    def drop_unread(self, names, readers=()):
        """Removes the assignments `name = ...` of `names` (side-effect-free values) that no other line of this
        writer or of the `readers` writers reads (comments do not read), until none is left, with the comment
        line just before one when nothing else follows that comment; a block keeps at least one line."""
        names = set(names)
        while True:
            text = "\n".join(_code(ln) for ln in self.lines + [ln for r in readers for ln in r.lines])
            dead = {n for n in names if len(re.findall(rf"\b{re.escape(n)}\b", text)) == 1}
            drop = {i for i, ln in enumerate(self.lines)
                    if ln.lstrip().split(" = ", 1)[0] in dead and not self._only_line_of_block(i)}
            if not drop:
                return
            drop |= {i - 1 for i in drop if self._comment_of(i - 1, i, drop)}
            for i in sorted(drop, reverse=True):
                del self.lines[i]
            names -= dead

    def _comment_of(self, c, i, drop):
        """True when line `c` is a comment on line `i` alone: a comment line at its depth that no line outside
        `drop` continues (the next is a comment, a line of an outer block, or the end)."""
        if c < 0 or not self.lines[c].lstrip().startswith("#") or _depth(self.lines[c]) != _depth(self.lines[i]):
            return False
        after = next((ln for j, ln in enumerate(self.lines[i + 1:], i + 1) if ln.strip() and j not in drop), "")
        return after.lstrip().startswith("#") or _depth(after) < _depth(self.lines[i]) or not after

    def _only_line_of_block(self, i):
        depth = _depth(self.lines[i])
        before = next((ln for ln in reversed(self.lines[:i]) if ln.strip() and not ln.lstrip().startswith("#")), "")
        after = next((ln for ln in self.lines[i + 1:] if ln.strip() and not ln.lstrip().startswith("#")), "")
        return before.rstrip().endswith(":") and _depth(before) < depth and _depth(after) < depth

    def text(self):
        return "\n".join(self.lines) + "\n"


def _code(line):
    """A line without its comment (a comment line, or the `  # ...` that SourceWriter.line appends)."""
    return "" if line.lstrip().startswith("#") else line.split("  # ", 1)[0]


def _depth(line):
    return len(line) - len(line.lstrip(" "))


_IDENT = re.compile(r"[^0-9a-zA-Z_]")


class Names:
    """Hands out Python identifiers that are unique within one generated module."""

    def __init__(self, reserved=()):
        self.used = set(reserved)

    def fresh(self, hint):
        """`hint` made into a valid identifier, suffixed with a number if already taken."""
        base = _IDENT.sub("_", str(hint)) or "v"
        if base[0].isdigit():
            base = "v" + base
        if keyword.iskeyword(base):
            base += "_"
        name, n = base, 1
        while name in self.used:
            name = f"{base}_{n}"
            n += 1
        self.used.add(name)
        return name
