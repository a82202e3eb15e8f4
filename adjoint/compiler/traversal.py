"""Reading and copying gast trees: walks, the names a node reads or assigns, deep copies.

A transform walks its trees many times over (the passes ask which names each statement reads
and assigns again and again), so these skip what `gast.walk` visits in vain: the fields that
never hold a node (a name's `id`, a constant's `value`), and a name's context when only names
are wanted. `Transformer` is `gast.NodeTransformer`, dispatching faster. `syntax` offers all of
them to the passes.
"""

from __future__ import annotations

import gast

_AST, _Name, _Load, _Store, _FunctionDef, _Lambda = gast.AST, gast.Name, gast.Load, gast.Store, gast.FunctionDef, gast.Lambda
# as gast declares its fields (`_field_types`): an optional string (a type comment, a keyword's
# name) is no node either, and the hottest node classes have one (`Name`, `Assign`, `Constant`)
_LEAF_TYPES = (str, int, bool, object, list[str], str | None, int | None)
_child_fields_of: dict[type, tuple[str, ...]] = {}
_fields_of_class: dict[type, tuple[tuple[str, bool], ...]] = {}


def _child_fields(cls) -> tuple[str, ...]:
    """The fields of node class `cls` that may hold nodes (none for a value that is no node)."""
    fields = _child_fields_of.get(cls)
    if fields is None:
        declared = getattr(cls, "_field_types", {})
        fields = _child_fields_of[cls] = tuple(
            f for f in cls._fields if declared.get(f) not in _LEAF_TYPES
        ) if issubclass(cls, gast.AST) else ()
    return fields


def _fields_of(cls) -> tuple[tuple[str, bool], ...]:
    """Each field of node class `cls`, and whether it may hold nodes."""
    fields = _fields_of_class.get(cls)
    if fields is None:
        children = _child_fields(cls)
        fields = _fields_of_class[cls] = tuple((f, f in children) for f in cls._fields)
    return fields


def _add_children(node, todo: list) -> None:
    """Append the nodes directly inside `node` to `todo`, in field order."""
    fields = _child_fields_of.get(type(node))
    for field in _child_fields(type(node)) if fields is None else fields:
        value = getattr(node, field, None)
        if type(value) is list:
            todo.extend([v for v in value if isinstance(v, gast.AST)])
        elif isinstance(value, gast.AST):
            todo.append(value)


def child_nodes(node) -> list:
    """The nodes directly inside `node`, in field order (as `gast.iter_child_nodes`)."""
    found = []
    _add_children(node, found)
    return found


def walk(node) -> list:
    """Every node inside `node`, itself first, breadth first: `gast.walk`'s order, as a list.

    >>> [type(n).__name__ for n in walk(gast.parse("x").body[0])]
    ['Expr', 'Name', 'Load']
    """
    found = [node]
    append, extend, fields_of = found.append, found.extend, _child_fields_of
    for current in found:  # (grows while it is read: breadth first)
        cls = type(current)
        if cls is _Name:  # the commonest node, read without the loop below: a context, maybe an annotation
            if current.ctx is not None:
                append(current.ctx)
            if current.annotation is not None:
                append(current.annotation)
            continue
        fields = fields_of.get(cls)
        if fields is None:
            fields = _child_fields(cls)
        if not fields:  # a context, an operator, a constant
            continue
        state = current.__dict__  # (where a node keeps its fields)
        for field in fields:  # `_add_children`, inlined: walks are the passes' hottest loop
            value = state.get(field)
            if value is None:
                continue
            if type(value) is list:
                extend(value if None not in value else [v for v in value if isinstance(v, _AST)])
            elif isinstance(value, _AST):
                append(value)
    return found


def all_statements(body: list) -> list:
    """Every statement in `body`, at any depth: in nested functions and classes too, with the
    `except` handlers and `match` cases that hold some (no expression is walked, so no lambda
    is entered: none holds a statement).

    >>> [type(n).__name__ for n in all_statements(gast.parse("def f():\\n    if a:\\n        pass").body)]
    ['FunctionDef', 'If', 'Pass']
    """
    found = list(body)
    for current in found:  # (grows while it is read)
        for field in _STATEMENT_LISTS:
            value = getattr(current, field, None)
            if type(value) is list:
                found += value
    return found


_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def load_names(node) -> set[str]:
    """Every name read inside `node`.

    >>> sorted(load_names(gast.parse("y = f(x, y=z)").body[0]))
    ['f', 'x', 'z']
    """
    names = set()
    todo = [node]
    append, fields_of = todo.append, _child_fields_of
    for current in todo:  # (grows while it is read: every node once)
        cls = type(current)
        if cls is _Name:  # its context is a leaf: skip it
            if type(current.ctx) is _Load:
                names.add(current.id)
            if current.annotation is not None:
                append(current.annotation)
            continue
        fields = fields_of.get(cls)
        if fields is None:
            fields = _child_fields(cls)
        if fields:  # its parts, inlined: what is no node (None, a string) has none, and is skipped when reached
            state = current.__dict__
            for field in fields:
                value = state.get(field)
                if type(value) is list:
                    todo += value
                elif value is not None:
                    append(value)
    return names


def name_nodes(node) -> list | None:
    """The `Name` nodes inside `node` (their annotations not entered), or None where a function
    or lambda is in it (whose names are its own: the caller walks it its own way).

    >>> [n.id for n in name_nodes(gast.parse("y = f(x)").body[0])], name_nodes(gast.parse("f = lambda: x"))
    (['y', 'f', 'x'], None)
    """
    names = []
    todo = [node]
    append, fields_of = todo.append, _child_fields_of
    for current in todo:
        cls = type(current)
        if cls is _Name:
            names.append(current)
            continue
        if cls is _FunctionDef or cls is _Lambda:
            return None
        fields = fields_of.get(cls)
        if fields is None:
            fields = _child_fields(cls)
        if fields:  # (as in `load_names`)
            state = current.__dict__
            for field in fields:
                value = state.get(field)
                if type(value) is list:
                    todo += value
                elif value is not None:
                    append(value)
    return names


def copy_node(node):
    """A deep copy of a node (or list of nodes). Annotations are shared, not copied: passes
    replace an annotation's value rather than change it."""
    return _copy(node, None)


def substitute(node, mapping):
    """A copy of `node` with names replaced: to a string (renamed, any context) or to an
    expression (loads only).

    >>> from adjoint.compiler.syntax import name, parse, unparse
    >>> unparse(substitute(parse("y = x + 1").body[0], {"y": "z", "x": name("w")}))
    'z = w + 1'
    """
    return _copy(node, mapping)


_POSITION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _copy(node, mapping):
    """`copy_node`, replacing the names in `mapping` on the way (see `substitute`)."""
    cls = type(node)
    if cls is list:
        return [_copy(n, mapping) for n in node]
    fields = _fields_of_class.get(cls)
    if fields is None:
        if not isinstance(node, _AST):
            return node
        fields = _fields_of(cls)
    state = node.__dict__
    if cls is _Name and mapping is not None:
        if state["id"] in mapping:
            return _replacement(node, mapping[state["id"]])
        mapping = None  # (a parameter's annotation keeps its names)
    new = cls.__new__(cls)
    if not state and not fields:  # a context or an operator, as most are: nothing to copy
        return new
    copied = new.__dict__  # (where a node's constructor puts its fields too)
    for field, holds_nodes in fields:
        value = state.get(field)
        if value is not None:
            if holds_nodes:
                value = [_copy(v, mapping) for v in value] if type(value) is list else _copy(value, mapping)
            elif type(value) is list:
                value = list(value)
        copied[field] = value
    if "lineno" in state:  # (nodes passes build have no position)
        for attribute in _POSITION:
            if attribute in state:
                copied[attribute] = state[attribute]
    annotations = state.get("_adjoint")
    if annotations is not None:
        copied["_adjoint"] = dict(annotations)
    return new


def _replacement(node, replacement):
    if isinstance(replacement, str):
        new = _Name.__new__(_Name)  # (as `gast.Name(id=replacement, ctx=<a copy of node's>)` makes it)
        fields = new.__dict__
        fields["id"], fields["ctx"], fields["annotation"], fields["type_comment"] = (
            replacement, _copy(node.ctx, None), None, None)
        return new
    if not isinstance(node.ctx, gast.Load):
        raise ValueError(f"cannot store into the expression substituted for {node.id}")
    return _copy(replacement, None)


def default_values(function) -> list:
    """The default value expressions of a function's or lambda's parameters, keyword-only too."""
    return list(function.args.defaults) + [d for d in function.args.kw_defaults if d is not None]


def walk_local(node) -> list:
    """Like `walk`, without entering the bodies of nested functions and lambdas (their names are
    their own); a nested function's defaults and decorators are entered. Depth first."""
    found, todo = [], [node]
    pop, append, extend, fields_of = todo.pop, todo.append, todo.extend, _child_fields_of
    while todo:
        current = pop()
        found.append(current)
        cls = type(current)
        if (cls is _FunctionDef or cls is _Lambda) and current is not node:
            extend(default_values(current))
            extend(getattr(current, "decorator_list", []))
            continue
        fields = fields_of.get(cls)
        if fields is None:
            fields = _child_fields(cls)
        if fields:  # `_add_children`, inlined (as in `walk`)
            state = current.__dict__
            for field in fields:
                value = state.get(field)
                if value is None:
                    continue
                if type(value) is list:
                    extend(value if None not in value else [v for v in value if isinstance(v, _AST)])
                elif isinstance(value, _AST):
                    append(value)
    return found


def stored_names(node) -> set[str]:
    """Every name `node` assigns, nested functions' own names excluded.

    >>> sorted(stored_names(gast.parse("a, (b, *c) = f(d)").body[0]))
    ['a', 'b', 'c']
    """
    if isinstance(node, gast.FunctionDef):
        return {node.name}
    names = set()
    todo = [node]
    append, fields_of = todo.append, _child_fields_of
    for current in todo:
        cls = type(current)
        if cls is _Name:
            if type(current.ctx) is _Store:
                names.add(current.id)
            if current.annotation is not None:
                append(current.annotation)
        elif current is not node and (cls is _FunctionDef or cls is _Lambda):
            if cls is _FunctionDef:
                names.add(current.name)
                todo.extend(current.decorator_list)
            todo.extend(default_values(current))
        else:
            fields = fields_of.get(cls)
            if fields is None:
                fields = _child_fields(cls)
            if fields:  # (as in `load_names`)
                state = current.__dict__
                for field in fields:
                    value = state.get(field)
                    if type(value) is list:
                        todo += value
                    elif value is not None:
                        append(value)
    return names


def free_names(function) -> set[str]:
    """The names a nested function or lambda reads from its enclosing scopes."""
    args = function.args
    params = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a}
    body = function.body if isinstance(function.body, list) else [gast.Expr(value=function.body)]
    local = set(params)
    reads = set()
    for stmt in body:
        local |= stored_names(stmt)
        reads |= scope_reads(stmt)
    return reads - local


def scope_reads(node) -> set[str]:
    """The names `node` reads in the scope it is in: its loads, but for a function or lambda
    (`node` itself too) the names it reads from outside (`free_names`) and its defaults' and
    decorators' loads.

    >>> sorted(scope_reads(gast.parse("y = f(lambda t, k=c: t + x)").body[0]))
    ['c', 'f', 'x']
    """
    names = set()
    todo = [node]
    append, fields_of = todo.append, _child_fields_of
    for current in todo:
        cls = type(current)
        if cls is _Name:
            if type(current.ctx) is _Load:
                names.add(current.id)
            if current.annotation is not None:
                append(current.annotation)
        elif cls is _FunctionDef or cls is _Lambda:
            names |= free_names(current)
            todo.extend(default_values(current))
            todo.extend(getattr(current, "decorator_list", []))
        else:
            fields = fields_of.get(cls)
            if fields is None:
                fields = _child_fields(cls)
            if fields:  # (as in `load_names`)
                state = current.__dict__
                for field in fields:
                    value = state.get(field)
                    if type(value) is list:
                        todo += value
                    elif value is not None:
                        append(value)
    return names


class Transformer(gast.NodeTransformer):
    """`gast.NodeTransformer`, with its `visit_<Kind>` methods looked up once per node class
    and only the fields that may hold nodes visited."""

    def visit(self, node):
        visitors = type(self).__dict__.get("_visitors")
        if visitors is None:
            visitors = {}
            type(self)._visitors = visitors  # (per class: subclasses visit differently)
        visitor = visitors.get(type(node))
        if visitor is None:
            visitor = getattr(type(self), "visit_" + type(node).__name__, type(self).generic_visit)
            visitors[type(node)] = visitor
        return visitor(self, node)

    def generic_visit(self, node):
        fields = _child_fields_of.get(type(node))
        for field in _child_fields(type(node)) if fields is None else fields:
            old = getattr(node, field, None)
            if type(old) is list:
                new_values = []
                for value in old:
                    if isinstance(value, gast.AST):
                        value = self.visit(value)
                        if value is None:
                            continue
                        if not isinstance(value, gast.AST):  # a list of nodes in its place
                            new_values.extend(value)
                            continue
                    new_values.append(value)
                old[:] = new_values
            elif isinstance(old, gast.AST):
                new = self.visit(old)
                if new is None:
                    delattr(node, field)
                else:
                    setattr(node, field, new)
        return node
