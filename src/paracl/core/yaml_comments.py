"""The comments of params.yaml, by dotted key.

Why: params.yaml carries a comment on every key (what it does, its unit, its source in
a paper), while `help=` in paracl.core.params covers only some fields. The generated
configuration reference (paracl.report) takes a key's help from params.py and, where
that has none, from this comment, so the page says what the key does without a second
copy of the text to drift.

A key's comment is the `# ...` after its value and the comment-only lines that follow it
indented past the key's own column (the params.yaml style); comment lines above a key
belong to no key. YAML syntax is not parsed here: only `key:` lines are read, which is
all params.yaml uses.
"""

from __future__ import annotations

import re
from pathlib import Path

KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w-]*):(?P<rest>.*)$")


def _inline_comment(rest: str) -> str:
    """The comment after a value: the first ` #` outside quotes and flow brackets."""
    depth, quote = 0, ""
    for i, ch in enumerate(rest):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "#" and depth <= 0 and (i == 0 or rest[i - 1] == " "):
            return rest[i + 1 :].strip()
    return ""


def key_comments(path: Path) -> dict[str, str]:
    """{"section.key": "its comment"} for every key of the file that has one."""
    comments: dict[str, str] = {}
    stack: list[tuple[int, str]] = []  # (indent, key) of the enclosing keys
    current, column = None, 0  # the last key line, and where its comment column starts
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.lstrip()
        if stripped.startswith("#"):
            indent = len(line) - len(stripped)
            if current is not None and indent > column:
                comments[current] = f"{comments.get(current, '')} {stripped[1:].strip()}".strip()
            else:
                current = None
            continue
        match = KEY.match(line)
        if not match:
            current = None
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"]))
        current, column = ".".join(k for _, k in stack), indent
        if text := _inline_comment(match["rest"]):
            comments[current] = text
    return comments
