"""compiler.control: early returns, `continue`, `break` and loop `else:` become structured code
that reads as written by hand and computes the same values with the same side effects."""

import itertools
import linecache
import os
import random

import gast
import pytest

from adjoint.compiler import annotations as anno
from adjoint.compiler import control, syntax
from adjoint.compiler.context import Context
from adjoint.compiler.source import get_source

# ---- the corpus: every function takes two ints and a list that records side effects ----------


def early_return(n, m, log):
    if n > 0:
        return n
    return -n


def elif_returns(n, m, log):
    if n > m:
        log.append("gt")
        return n - m
    elif n == m:
        return 0
    log.append("lt")
    return m - n


def sometimes_returns(n, m, log):
    if n > 0:
        if m > 2:
            return 1
        n = n + m
        log.append(n)
    log.append("after")
    return n * 2


def falls_off_the_end(n, m, log):
    if n > m:
        return n


def bare_and_valued(n, m, log):
    if n < 0:
        return
    log.append(n)
    if m < 0:
        return None
    return n + m


def only_bare_returns(n, m, log):
    if n < 0:
        return
    log.append(n)
    if m > n:
        log.append(m)
        return
    log.append("end")


def dead_code(n, m, log):
    log.append(1)
    return n
    log.append(2)
    return m


def both_arms_return(n, m, log):
    if n % 2:
        log.append("odd")
        return 1
    else:
        return 2
    log.append("never")


def return_in_for(n, m, log):
    total = 0
    for i in range(n):
        log.append(i)
        if i * m > 6:
            return total
        total += i
    return -total


def return_in_while(n, m, log):
    i = 0
    while i < n:
        i += 1
        if i == m:
            log.append("found")
            return i * 10
        log.append(i)
    return i


def return_in_nested_loops(n, m, log):
    for i in range(n):
        for j in range(m):
            log.append((i, j))
            if i + j == 4:
                return i * j
        log.append(i)
    return None


def return_through_breaking_loop(n, m, log):
    """A return in an inner loop leaves the outer loop, which has its own `break`."""
    for i in range(n):
        if i == 4:
            break
        for j in range(m):
            if i * j == 2:
                return (i, j)
            log.append(j)
        log.append(i)
    return None


def for_else_without_break(n, m, log):
    for i in range(n):
        log.append(i)
    else:
        log.append("else")
    return n


def for_else_with_break(n, m, log):
    for i in range(n):
        if i == m:
            log.append("break")
            break
        log.append(i)
    else:
        log.append("else")
        return -1
    return m


def while_else_with_break(n, m, log):
    i = 0
    while i < n:
        i += 1
        if i * i > m:
            break
    else:
        log.append("else")
    log.append(i)
    return i


def continue_at_top(n, m, log):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        s += i
        log.append(i)
    return s


def continue_nested(n, m, log):
    s = 0
    for i in range(n):
        if i > 1:
            if i % m == 0 if m else i > 3:
                continue
            s += 10
        s += i
        log.append(s)
    return s


def continue_in_while(n, m, log):
    i, s = 0, 0
    while i < n:
        i += 1
        if i == m:
            continue
        s += i
    log.append(s)
    return s


def break_and_continue(n, m, log):
    s = 0
    for i in range(n):
        if i == 1:
            continue
        if i > m:
            break
        s += i
        log.append(i)
    return s


def nested_break_continue(n, m, log):
    s = 0
    for i in range(n):
        if i == 2:
            continue
        for j in range(n):
            if j > i:
                break
            if j == m:
                continue
            s += i * j
            log.append((i, j))
        s += 1
    return s


def returns_deep_in_ifs_in_loop(n, m, log):
    acc = 0
    for i in range(n):
        if i > 1:
            if m > 0:
                if i * m > 8:
                    log.append("deep")
                    return acc
                acc += m
            else:
                acc -= 1
        acc += i
    return acc


def return_in_inner_loop_with_else(n, m, log):
    for i in range(n):
        for j in range(i):
            if j * i == m:
                return (i, j)
        else:
            log.append(i)
    log.append("none")
    return None


def break_in_inner_else(n, m, log):
    for i in range(n):
        for j in range(i):
            if j == m:
                break
        else:
            log.append(("else", i))
            if i > 2:
                break
        log.append(i)
    return len(log)


def continue_in_inner_else(n, m, log):
    s = 0
    for i in range(n):
        for j in range(m):
            s += j
        else:
            if i % 2:
                continue
        log.append(i)
        s += i
    return s


def always_breaks(n, m, log):
    for i in range(n):
        log.append(i)
        break
    while m > 0:
        m -= 1
        log.append(m)
        break
    return m


def while_true_return(n, m, log):
    i = n
    while True:
        i += 1
        log.append(i)
        if i > m:
            return i


def user_trailing_flag_break(n, m, log):
    i = 0
    done = False
    while i < 10:
        i += 1
        log.append(i)
        done = i >= n
        if done:
            break
    return i


class Recorder:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")

    def __exit__(self, *exc):
        self.log.append("exit")


def return_in_with(n, m, log):
    for i in range(n):
        with Recorder(log):
            if i == m:
                return i
            log.append(i)
    return -1


def nested_function(n, m, log):
    def helper(k):
        if k > 2:
            return k * 2
        return k

    for i in range(n):
        if helper(i) > m:
            return helper(i)
    return [x for x in range(m) if x % 2] and (lambda y: y + 1)(m)


def return_in_elif_break(n, m, log):
    s = 0
    for i in range(n):
        if i == m:
            break
        elif i > 5:
            s += 100
        else:
            log.append(i)
            continue
        s += i
    return s


def three_levels(n, m, log):
    count = 0
    for i in range(n):
        j = 0
        while j < m:
            for k in range(3):
                count += 1
                if i + j + k == 5:
                    log.append((i, j, k))
                    return count
            j += 1
    return -count


def continue_and_return(n, m, log):
    s = 0
    for i in range(n):
        if i % 2:
            continue
        if s > m:
            return s
        s += i
    return -s


def match_return(n, m, log):
    for i in range(n):
        match i % 3:
            case 0:
                log.append("zero")
            case 1 if m > 2:
                return i
            case _:
                continue
        log.append(i)
    return m


def loop_else_returns(n, m, log):
    for i in range(n):
        if i == m:
            break
    else:
        return "no break"
    log.append(i)
    return i


def sometimes_continue_sometimes_break(n, m, log):
    s = 0
    for i in range(n):
        if i > 0:
            if i == m:
                continue
            if i > 6:
                break
        s += i
        log.append(s)
    return s


def raises_sometimes(n, m, log):
    for i in range(n):
        if i == 3:
            return 12 // m
        log.append(i)
    return 1 // (n - 5)


def try_around_loop(n, m, log):
    try:
        for i in range(n):
            if i == m:
                break
            log.append(i)
    finally:
        log.append("finally")
    return n


def side_effect_in_return(n, m, log):
    for i in range(n):
        if i == m:
            return log.append(("returned", i))
        log.append(i)
    return log.append("end")


def while_else_continue_outer(n, m, log):
    s = 0
    for i in range(n):
        k = 0
        while k < i:
            k += 1
            if k == m:
                break
        else:
            continue
        s += k
        log.append(s)
    return s


CORPUS = [
    early_return, elif_returns, sometimes_returns, falls_off_the_end, bare_and_valued,
    only_bare_returns, dead_code, both_arms_return, return_in_for, return_in_while,
    return_in_nested_loops, return_through_breaking_loop, for_else_without_break, for_else_with_break,
    while_else_with_break,
    continue_at_top, continue_nested, continue_in_while, break_and_continue, nested_break_continue,
    returns_deep_in_ifs_in_loop, return_in_inner_loop_with_else, break_in_inner_else,
    continue_in_inner_else, always_breaks, while_true_return, user_trailing_flag_break,
    return_in_with, nested_function, return_in_elif_break, three_levels, continue_and_return,
    match_return, loop_else_returns, sometimes_continue_sometimes_break, raises_sometimes,
    try_around_loop, side_effect_in_return, while_else_continue_outer,
]
GRID = list(itertools.product(range(-2, 9), range(-2, 9)))


def lowered(fn):
    ctx = Context(fn, get_source(fn), (0,))
    node = control.transform(ctx.source.node, ctx)
    return node, ctx


def recompiled(fn):
    """The lowered function, compiled from its unparsed text in `fn`'s globals."""
    node, ctx = lowered(fn)
    assert not ctx.problems
    text = syntax.unparse(node)
    namespace = dict(fn.__globals__)
    exec(compile(text, f"<control {fn.__name__}>", "exec"), namespace)
    return namespace[fn.__name__], text


def outcome(fn, n, m):
    log = []
    try:
        result = fn(n, m, log)
    except Exception as error:  # the same inputs must fail the same way
        result = type(error)
    return result, log


# ---- (c) same values, same side effects --------------------------------------------------------


@pytest.mark.parametrize("fn", CORPUS, ids=lambda f: f.__name__)
def test_same_values_and_side_effects(fn):
    new, text = recompiled(fn)
    for n, m in GRID:
        assert outcome(new, n, m) == outcome(fn, n, m), f"n={n}, m={m}\n{text}"


# ---- (a) the structure guarantees ---------------------------------------------------------------


def _statements(body):
    """Every statement of `body`, not entering nested functions or classes."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            yield from _statements(getattr(stmt, field, None) or [])


def _is_trailing_break(stmt):
    return (
        isinstance(stmt, gast.If) and isinstance(stmt.test, gast.Name) and not stmt.orelse
        and len(stmt.body) == 1 and isinstance(stmt.body[0], gast.Break)
    )


def _breaks_by_loop(body, loop=None):
    """`(break, innermost enclosing loop)` for every `break` in `body`."""
    for stmt in body:
        if isinstance(stmt, gast.Break):
            yield stmt, loop
        elif not isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
            inner = stmt if isinstance(stmt, (gast.For, gast.While)) else loop
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                yield from _breaks_by_loop(getattr(stmt, field, None) or [], inner)


@pytest.mark.parametrize("fn", CORPUS, ids=lambda f: f.__name__)
def test_structure(fn):
    node, _ = lowered(fn)
    *body, last = node.body
    assert isinstance(last, gast.Return)
    assert isinstance(last.value, gast.Name) or (isinstance(last.value, gast.Constant) and last.value.value is None)
    statements = list(_statements(body))
    assert not any(isinstance(s, (gast.Return, gast.Continue)) for s in statements)
    assert not any(isinstance(s, (gast.For, gast.While)) and s.orelse for s in statements)
    for brk, loop in _breaks_by_loop(body):
        assert _is_trailing_break(loop.body[-1]) and loop.body[-1].body[0] is brk
    for stmt in [s for s in statements if isinstance(s, gast.stmt)] + [last]:
        assert anno.get(stmt, anno.ORIGIN) is not None and hasattr(stmt, "lineno"), syntax.unparse(stmt)


def test_nested_definitions_keep_their_returns():
    node, _ = lowered(nested_function)
    helper = node.body[1]  # after `returned = False`
    assert isinstance(helper, gast.FunctionDef) and len([s for s in gast.walk(helper) if isinstance(s, gast.Return)]) == 2
    assert "lambda y: y + 1" in syntax.unparse(node)


# ---- (b) readable output ------------------------------------------------------------------------


def _text(fn):
    return syntax.unparse(lowered(fn)[0])


def test_early_return_needs_no_flag():
    assert _text(early_return) == (
        "def early_return(n, m, log):\n"
        "    if n > 0:\n"
        "        early_return = n\n"
        "    else:\n"
        "        early_return = -n\n"
        "    return early_return"
    )


def test_continue_moves_the_rest_into_the_other_arm():
    assert _text(continue_at_top) == (
        "def continue_at_top(n, m, log):\n"
        "    s = 0\n"
        "    for i in range(n):\n"
        "        if not i % 3 == 0:\n"
        "            s += i\n"
        "            log.append(i)\n"
        "    return s"
    )


def test_return_in_loop_uses_a_flag_and_the_trailing_break():
    assert _text(return_in_for) == (
        "def return_in_for(n, m, log):\n"
        "    returned = False\n"
        "    total = 0\n"
        "    for i in range(n):\n"
        "        log.append(i)\n"
        "        if i * m > 6:\n"
        "            returned = True\n"
        "            return_in_for = total\n"
        "        else:\n"
        "            total += i\n"
        "        if returned:\n"
        "            break\n"
        "    if not returned:\n"
        "        return_in_for = -total\n"
        "    return return_in_for"
    )


def test_loop_else_runs_unless_the_loop_broke():
    assert _text(while_else_with_break) == (
        "def while_else_with_break(n, m, log):\n"
        "    i = 0\n"
        "    broke = False\n"
        "    while i < n:\n"
        "        i += 1\n"
        "        if i * i > m:\n"
        "            broke = True\n"
        "        if broke:\n"
        "            break\n"
        "    if not broke:\n"
        "        log.append('else')\n"
        "    log.append(i)\n"
        "    return i"
    )


def test_continue_not_last_sets_skip_reset_every_iteration():
    text = _text(continue_nested)
    assert "for i in range(n):\n        skip = False\n" in text
    assert "if not skip:" in text


def test_straight_line_code_is_untouched():
    def plain(x):
        y = x * 2
        return y

    assert _text(plain) == "def plain(x):\n    y = x * 2\n    return y"


def test_lambda_result_is_out():
    node, _ = lowered(lambda x: x + 1)
    assert syntax.unparse(node.body[0]) == "out = x + 1"


def test_flags_do_not_shadow_user_names():
    def busy(returned, broke):
        for i in range(returned):
            if i == broke:
                return i
        return None

    text = _text(busy)
    assert "returned_1 = False" in text and "busy = i" in text


def test_new_statements_carry_the_origin_of_the_statement_they_replace():
    node, _ = lowered(return_in_for)
    lines = get_source(return_in_for).node.lineno
    loop = node.body[2]
    flag_set, result = loop.body[1].body
    origin = anno.get(flag_set, anno.ORIGIN)
    assert origin == anno.get(result, anno.ORIGIN) == flag_set.lineno == lines + 5  # `return total`
    assert anno.get(loop.body[-1], anno.ORIGIN) == loop.lineno  # `if returned: break`


def test_jump_out_of_try_is_reported():
    def leaves_try(x):
        for i in range(x):
            try:
                return i
            finally:
                pass
        return 0

    _, ctx = lowered(leaves_try)
    assert len(ctx.problems) == 1 and "`try`" in ctx.problems[0].message


def test_context_manager_exits_before_the_rest_is_skipped():
    log = []
    new, _ = recompiled(return_in_with)
    assert new(3, 1, log) == 1 and log == ["enter", 0, "exit", "enter", "exit"]


# ---- random programs: every mix of jumps, loops and `else:` clauses -----------------------------


class _ProgramWriter:
    """Writes a random function `p(n, m, log)` of nested ifs, loops (with `else:`) and jumps."""

    def __init__(self, rng):
        self.rng, self.lines, self.loops = rng, [], 0

    def program(self) -> str:
        self.lines = ["def p(n, m, log):", "    s = 0"]
        self.block(1, depth=0, loop_vars=[], in_loop=False)
        if self.rng.random() < 0.8:
            self.lines.append("    return s")
        return "\n".join(self.lines) + "\n"

    def block(self, indent, depth, loop_vars, in_loop):
        for _ in range(self.rng.randint(1 + (depth == 0), 3)):
            self.statement(indent, depth, loop_vars, in_loop)

    def statement(self, indent, depth, loop_vars, in_loop):
        pad, rng, choose = "    " * indent, self.rng, self.rng.choice
        kinds = {"effect": 3, "return": 1, "break": in_loop, "continue": 2 * in_loop}
        kinds.update({"if": 4, "for": 1.5, "while": 1, "with": 0.5, "match": 0.5} if depth < 3 else {})
        kind = rng.choices(list(kinds), list(kinds.values()))[0]
        nested = dict(indent=indent + 1, depth=depth + 1, loop_vars=loop_vars, in_loop=in_loop)
        if kind == "effect":
            operand = choose(["n", "m", *loop_vars])
            self.lines.append(pad + choose(["log.append(s)", "s += 1", f"s = (s * 3 + {operand}) % 101"]))
        elif kind == "return":
            self.lines.append(pad + choose(["return s", "return", f"return s * 10 + {choose(['n', *loop_vars])}"]))
        elif kind in ("break", "continue"):
            self.lines.append(pad + kind)
        elif kind == "if":
            self.lines.append(f"{pad}if {self.condition(loop_vars)}:")
            self.block(**nested)
            elif_ = f"elif {self.condition(loop_vars)}"
            for header in choose([[], ["else"], [elif_], [elif_, "else"]]):
                self.lines.append(f"{pad}{header}:")
                self.block(**nested)
        elif kind in ("with", "match"):
            headers = ["with Recorder(log):"] if kind == "with" else ["match s % 3:", "case 0:", "case 1 if n > m:", "case _:"]
            self.lines.append(pad + headers[0])
            for header in headers[1:] or [None]:
                if header:
                    self.lines.append(f"{pad}    {header}")
                self.block(**dict(nested, indent=indent + 1 + bool(header)))
        else:
            self.loop(kind, pad, nested, loop_vars)

    def loop(self, kind, pad, nested, loop_vars):
        self.loops += 1
        var, limit = f"{kind[0]}{self.loops}", self.rng.choice(["n", "m", "3"])
        if kind == "for":
            self.lines.append(f"{pad}for {var} in range({limit}):")
        else:
            self.lines += [f"{pad}{var} = 0", f"{pad}while {var} < {limit}:", f"{pad}    {var} += 1"]
        self.block(**dict(nested, loop_vars=loop_vars + [var], in_loop=True))
        if self.rng.random() < 0.4:
            self.lines.append(f"{pad}else:")
            self.block(**nested)

    def condition(self, loop_vars):
        left = self.rng.choice(["s", "n", "m", *loop_vars])
        return f"({left} + {self.rng.choice(['s', 'm', *loop_vars])}) % {self.rng.randint(2, 4)} == 0"


def _load(text, filename):
    """Define the function in `text` as if it came from a file (so `get_source` finds it)."""
    lines = text.splitlines(keepends=True)
    linecache.cache[filename] = (len(text), None, lines, filename)
    namespace = {"Recorder": Recorder}
    exec(compile(text, filename, "exec"), namespace)
    return namespace["p"]


# 60 programs drawn with seed `ADJOINT_RANDOM_SEED` (0 by default); set
# `ADJOINT_RANDOM_PROGRAMS=1000` (and other seeds) to check more.
@pytest.mark.parametrize("seed", [int(os.environ.get("ADJOINT_RANDOM_SEED", "0"))])
def test_random_programs(seed):
    writer = _ProgramWriter(random.Random(seed))
    for index in range(int(os.environ.get("ADJOINT_RANDOM_PROGRAMS", "60"))):
        text = writer.program()
        fn = _load(text, f"<random program {index}>")
        new, lowered_text = recompiled(fn)
        for n, m in itertools.product(range(-1, 6), range(-1, 5)):
            assert outcome(new, n, m) == outcome(fn, n, m), f"n={n}, m={m}\n{text}\n{lowered_text}"
        test_structure(fn)
