"""YAML parsing for configs: safe types only, and a key may appear once per mapping.

PyYAML keeps the last of two equal keys silently, so a feature with two ``top_k:`` lines (or
a file with two ``features:`` blocks) would lose one without a word. :class:`UniqueKeyLoader`
refuses it; :func:`load_yaml` turns parse errors into SpecError.

Example:
    >>> load_yaml("a: 1\\nb: [2, 3]\\n", what="The spec")
    {'a': 1, 'b': [2, 3]}
    >>> load_yaml("a: 1\\na: 2\\n", what="The spec")
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: The spec: key `a` appears twice in one mapping (line 1 and \
line 2). Received: a=1 and a=2; keep one of them.
"""

from __future__ import annotations

from typing import Any

import yaml

from beam_prep.config.build import shown
from beam_prep.errors import SpecError

_MERGE_TAG = "tag:yaml.org,2002:merge"

#: Most nodes a document's aliases (``*name``) may add once expanded. A real spec or
#: training config has none to hundreds; a "billion laughs" document (each level aliasing the one
#: before ten times) reaches 10**9 nodes in a few lines and would exhaust memory the moment
#: anything walks it (a ``repr`` in an error message, the JSON of the manifest).
MAX_EXPANDED_NODES = 100_000


class AliasBombError(yaml.YAMLError):
    """The document expands beyond :data:`MAX_EXPANDED_NODES` through aliases."""

    def __init__(self, nodes: int, line: int) -> None:
        super().__init__(f"expands to more than {nodes} nodes")
        self.nodes = nodes
        self.line = line


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """Nodes of ``root`` with every alias expanded (shared nodes counted per use), capped.

    Iterative and memoised per node: linear in the distinct nodes, whatever the expansion.
    """
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    on_path: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if not done:
            if key in on_path:  # a recursive alias: SafeLoader builds it as a cycle
                sizes[key] = 1
                continue
            on_path.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        on_path.discard(key)
        sizes[key] = min(limit + 1, 1 + sum(sizes.get(id(c), 1) for c in children))
    return sizes[id(root)]


def _distinct_nodes(root: yaml.Node) -> int:
    """Nodes of ``root`` as written (an alias counts once: it is the node it names)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in node.value for n in pair)
    return len(seen)


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """Two equal keys in one YAML mapping.

    Attributes:
        key: The key.
        first_line: 1-based line of its first occurrence.
        line: 1-based line of the repeated one.
        values: The two values (as parsed).
    """

    def __init__(self, key: Any, first_line: int, line: int, values: tuple[Any, Any],
                 mark: Any) -> None:
        super().__init__(None, None, f"found duplicate key {key!r}", mark)
        self.key = key
        self.first_line = first_line
        self.line = line
        self.values = values


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that raises :class:`DuplicateKeyError` on a repeated key.

    Merge keys (``<<: *anchor``) may still be overridden, as YAML intends.

    Example:
        >>> yaml.load("{x: 1, y: 2}", Loader=UniqueKeyLoader)
        {'x': 1, 'y': 2}
    """

    def construct_document(self, node: yaml.Node) -> Any:
        """Refuses a document whose aliases add more than :data:`MAX_EXPANDED_NODES` nodes
        (a large document without aliases is not a bomb: its size is its text's)."""
        limit = _distinct_nodes(node) + MAX_EXPANDED_NODES
        if _expanded_size(node, limit) > limit:
            raise AliasBombError(MAX_EXPANDED_NODES, node.start_mark.line + 1)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Checks keys for repeats, then builds the mapping as SafeLoader does."""
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, tuple[int, yaml.Node]] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue  # SafeLoader reports unhashable keys itself
                line = key_node.start_mark.line + 1
                if key in seen:
                    first_line, first_value = seen[key]
                    values = (self.construct_object(first_value, deep=True),
                              self.construct_object(value_node, deep=True))
                    raise DuplicateKeyError(key, first_line, line, values, key_node.start_mark)
                seen[key] = (line, value_node)
        return super().construct_mapping(node, deep=deep)


def _where(mark: Any, source: str | None) -> str:
    """``path:line:col`` of a YAML mark (1-based), or ``line L, column C`` without a path."""
    if source is None:
        return f"line {mark.line + 1}, column {mark.column + 1}"
    return f"{source}:{mark.line + 1}:{mark.column + 1}"


def syntax_error_line(e: yaml.YAMLError, source: str | None) -> str:
    """One line for a YAML syntax error: where (``path:line:col``), the problem, its context.

    PyYAML's own text spans several lines and names a ``"<unicode string>"`` for parsed text.

    Example:
        >>> try:
        ...     yaml.safe_load("a: [1, 2\\nb: 3\\n")
        ... except yaml.YAMLError as e:
        ...     print(syntax_error_line(e, "conf.yaml"))
        conf.yaml:2:2: expected ',' or ']', but got ':' (while parsing a flow sequence \
started at conf.yaml:1:4)
    """
    problem_mark = getattr(e, "problem_mark", None)
    context_mark = getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None)
    if problem_mark is None or problem is None:  # not a MarkedYAMLError: its first line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return f"{source}: {first[:300]}" if source else first[:300]
    line = f"{_where(problem_mark, source)}: {problem}"
    context = getattr(e, "context", None)
    if context:
        started = f" started at {_where(context_mark, source)}" if context_mark else ""
        line += f" ({context}{started})"
    return line if len(line) <= 600 else line[:597] + "..."


def load_yaml(text: str, *, what: str, source: str | None = None) -> Any:
    """Parses YAML text with :class:`UniqueKeyLoader`.

    Args:
        text: The document.
        what: The document in messages, e.g. ``"The spec"``.
        source: The file the text was read from; messages then point at ``path:line:col``.

    Raises:
        SpecError: Invalid YAML, or a key repeated in a mapping (naming the key and lines).
    """
    named = f"{what} {source}" if source else what
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except DuplicateKeyError as e:
        first, second = e.values
        key = str(e.key) if len(str(e.key)) <= 80 else str(e.key)[:77] + "..."
        raise SpecError(
            f"{named}: key `{key}` appears twice in one mapping (line {e.first_line} and "
            f"line {e.line}). Received: {key}={shown(first)} and {key}={shown(second)}; keep "
            "one of them.") from None
    except AliasBombError as e:
        raise SpecError(
            f"{named}: its aliases (`*name` repeating an `&name` anchor) expand to more than "
            f"{e.nodes:,} values. Received: a document of {len(text):,} characters that "
            "expands beyond that (a 'billion laughs' document?); write the values out, or "
            "use fewer nested aliases.") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{what} is not valid YAML: {syntax_error_line(e, source)}. Fix the "
                        "document there.") from None
    except RecursionError:  # PyYAML composes and constructs nested nodes recursively
        raise SpecError(
            f"{named}: its lists or mappings nest too deeply to be read (hundreds of levels, "
            f"e.g. '[[[[...'). Received: a document of {len(text):,} characters. Write a "
            "flat document (a spec or config needs a few levels).") from None
