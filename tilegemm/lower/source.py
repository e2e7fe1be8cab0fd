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
        writer or of the `readers` writers reads, until none is left; a block keeps at least one line."""
        names = set(names)
        while True:
            text = "\n".join(self.lines + [ln for r in readers for ln in r.lines])
            dead = {n for n in names if len(re.findall(rf"\b{re.escape(n)}\b", text)) == 1}
            drop = [i for i, ln in enumerate(self.lines)
                    if ln.lstrip().split(" = ", 1)[0] in dead and not self._only_line_of_block(i)]
            if not drop:
                return
            for i in reversed(drop):
                del self.lines[i]
            names -= dead

    def _only_line_of_block(self, i):
        depth = _depth(self.lines[i])
        before = next((ln for ln in reversed(self.lines[:i]) if ln.strip() and not ln.lstrip().startswith("#")), "")
        after = next((ln for ln in self.lines[i + 1:] if ln.strip() and not ln.lstrip().startswith("#")), "")
        return before.rstrip().endswith(":") and _depth(before) < depth and _depth(after) < depth

    def text(self):
        return "\n".join(self.lines) + "\n"


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
