"""Loops in the pullback: a tape of what each iteration's adjoint reads, replayed backwards.

Used by `reverse` for every `for` and `while` loop. The forward loop appends, at the end of
each iteration (before the `ssa` back-edge copies), a tuple of the values defined in that
iteration which the adjoint reads; the pullback loops over the tape in reverse. Nothing is
recorded when the adjoint reads nothing from the iteration: an iteration count is kept. A row
of an array the loop walks is read again by its position (`x = xs[index]`) rather than taped,
and a pass after `reverse` that makes the pullback read less drops it from the tape
(`drop_unread`).

Cotangents that flow from one iteration into the previous one (the loop's carried names, and
the names defined before the loop that the body reads) are made nonzero before the pullback
loop and kept nonzero at the end of each iteration, so every iteration runs the same code.
Gradients into parts of an array or list defined outside the loop (`x[i]`, the rows of the
iterated sequence) are added in place into a buffer that the pullback owns, instead of
materialising a full-size cotangent per iteration.

Before (after `ssa`):              After, forward:               and pullback:
    h_1 = h                            h_1 = h                       h_1_bar = h_3_bar
    for t in range(n):                 tape = []                     W_bar = adj.zeros_like(W)
        h_matmul = W @ h_1             for t in range(n):            for h_1, h_2 in reversed(tape):
        h_2 = np.tanh(h_matmul)            h_matmul = W @ h_1            h_2_bar = h_1_bar
        h_1 = h_2                          h_2 = np.tanh(h_matmul)       h_matmul_bar = h_2_bar * (1 - h_2 ** 2)
    h_3 = h_1                              tape.append((h_1, h_2))       W_bar = W_bar + adj.matmul_lhs_bar(...)
                                           h_1 = h_2                     h_1_bar = adj.matmul_rhs_bar(...)
                                       h_3 = h_1                     h_bar = h_1_bar
"""

from __future__ import annotations

import dataclasses

import gast

from . import annotations as anno
from . import syntax



@dataclasses.dataclass
class LoopRecord:
    """One loop of the forward function, and what its pullback needs from each iteration."""

    loop: gast.AST  # the forward loop (its body receives the tape append)
    container: list  # the forward statement list holding the loop (receives the tape's start)
    adjoints: list  # the body's adjoint entries
    phis: dict  # carried name -> (name before the loop or None, name after the loop)
    sources: list  # (target name, sequence name, index expression) for the iterated items
    defined: set  # names the forward body defines, per iteration
    parent: "LoopRecord | None" = None
    tape: str | None = None
    counter: str | None = None
    recorded: tuple = ()
    buffers: dict = dataclasses.field(default_factory=dict)  # sequence name -> buffer name
    operands: set = dataclasses.field(default_factory=set)  # the names the body's adjoints may add to


@dataclasses.dataclass
class _Emission:
    """A loop whose pullback is being written: the buffers it owns in this attempt."""

    record: LoopRecord
    buffered: dict = dataclasses.field(default_factory=dict)  # name -> buffer name


def element_sources(target, iterable, index):
    """`(name, sequence, index expression)` for each loop target bound to an item of a
    sequence; None when the loop's iterable is not one adjoint can follow."""
    if isinstance(iterable, gast.Name):
        if isinstance(target, gast.Name):
            return [(target.id, iterable.id, index)]
        return None
    if syntax.is_atom(iterable):
        return []  # constants carry no gradient
    if not (isinstance(iterable, gast.Call) and isinstance(iterable.func, gast.Name)):
        return None
    kind, args = iterable.func.id, iterable.args
    if kind == "range":
        return []
    if kind == "enumerate" and isinstance(target, gast.Tuple) and len(target.elts) == 2:
        position = target.elts[0]
        if not isinstance(position, gast.Name):
            return None
        at = syntax.name(position.id)
        if len(args) > 1:
            at = syntax.binop(at, gast.Sub, args[1])
        return element_sources(target.elts[1], args[0], at)
    if kind == "zip" and isinstance(target, gast.Tuple) and len(target.elts) == len(args):
        parts = [element_sources(t, a, index) for t, a in zip(target.elts, args)]
        return None if any(p is None for p in parts) else [s for p in parts for s in p]
    if kind == "reversed" and len(args) == 1:
        return element_sources(target, args[0], syntax.binop(syntax.const(-1), gast.Sub, index))
    return None


def forward(rev, loop, record: LoopRecord, body_forward, adjoints, counter) -> None:
    """Complete `record` with the forward loop (without its tape yet) and the body's adjoints."""
    body = body_forward or [gast.Pass()]  # `for _ in range(n): pass` stays a loop
    new = gast.For(target=loop.target, iter=loop.iter, body=body, orelse=[], type_comment=None) \
        if isinstance(loop, gast.For) else gast.While(test=loop.test, body=body, orelse=[])
    anno.copy_origin(loop, new)
    gast.copy_location(new, loop)
    if counter is not None:  # `for k, x in enumerate(xs)`: the position routes x's cotangent
        new.target = syntax.tuple_([syntax.store(counter), new.target], syntax.STORE)
        new.iter = syntax.call(rev.ctx.reach("enumerate", enumerate), [new.iter])
    record.loop, record.adjoints = new, adjoints
    record.defined |= set().union(*(syntax.stored_names(s) for s in body_forward))
    if isinstance(new, gast.For):
        record.defined |= syntax.stored_names(new.target)


def emit(rev, record: LoopRecord) -> list:
    """The pullback of one loop (see the module docstring)."""
    cot = rev.cot
    live_exit = set(cot.live)
    local = record.defined - set(record.phis)
    # The names defined before the loop that the body adds to are kept nonzero across iterations;
    # they are guessed nonzero from the start (the body's operands), so that the body is usually
    # written once. A guessed name nothing adds to changes no code (it is never consumed in the
    # body, and no other cotangent depends on it), and is dropped: what remains is the least
    # fixpoint that writing the body again until nothing grows would reach.
    guessed = record.operands - record.defined - live_exit
    persistent = live_exit | guessed
    for _ in range(50):  # each round can only add names
        cot.live = set(persistent)
        emission = _Emission(record)
        rev.emitting.append(emission)
        outer_reached, cot.reached = cot.reached, set()
        code = rev.emit_block(record.adjoints) + _element_adjoints(rev, record)
        idle = guessed - cot.reached
        cot.reached |= outer_reached
        rev.emitting.pop()
        persistent -= idle
        grown = persistent | (cot.live - local - idle)
        if grown == persistent:
            break
        persistent = grown | guessed
    code += [cot.zeros(name) for name in sorted(persistent - cot.live)]
    cot.live = set(persistent)
    if not code:
        return []
    before = [cot.zeros(name, record.phis.get(name, (None, name))[1]) for name in sorted(persistent - live_exit)]
    before += [syntax.assign(buffer, syntax.call(f"{rev.alias}.buffer_like", [syntax.name(name)]))
               for name, buffer in emission.buffered.items()]
    after = [cot.accumulate(name, syntax.call(f"{rev.alias}.from_buffer", [syntax.name(buffer), syntax.name(name)]))
             for name, buffer in emission.buffered.items()]
    reads = set().union(*(syntax.load_names(s) for s in code))
    rederived = _rederived_items(rev, record, reads)
    code = rederived + code
    # what inner pullback loops unpack from their own tapes is not read from this one
    unpacked = set().union(*(syntax.stored_names(s.target) for s in syntax.statements(code) if isinstance(s, gast.For)))
    unpacked |= set().union(*(syntax.stored_names(s) for s in rederived))
    reads = reads.union(*(syntax.load_names(s) for s in rederived)) & record.defined - unpacked
    record.recorded = tuple(sorted(reads))
    if record.recorded:
        record.tape = record.tape or rev.ctx.namer.new("tape")
        items = [syntax.store(n) for n in record.recorded]
        target = items[0] if len(items) == 1 else syntax.tuple_(items, syntax.STORE)
        header = syntax.call(rev.ctx.reach("reversed", reversed), [syntax.name(record.tape)])
        produced = record.tape
    else:
        record.counter = record.counter or rev.ctx.namer.new("steps")
        target = syntax.store("_")
        header = syntax.call(rev.ctx.reach("range", range), [syntax.name(record.counter)])
        produced = record.counter
    if record.parent is not None:
        record.parent.defined.add(produced)
    loop = gast.For(target=target, iter=header, body=code, orelse=[], type_comment=None)
    return before + [loop] + after


def buffered_contribution(rev, name, index, cotangent):
    """`buffer = adj.scatter_add(buffer, index, cotangent)` when `name`'s cotangent can gather parts in a
    buffer of an enclosing pullback loop (`name` is defined outside it), else None."""
    owner = None
    for emission in reversed(rev.emitting):
        if name in emission.record.defined:
            break
        owner = emission
    if owner is None:
        return None
    buffer = owner.record.buffers.get(name)
    if buffer is None:
        buffer = owner.record.buffers[name] = rev.ctx.namer.new(f"{rev.cot.name(name)}_parts")
    owner.buffered[name] = buffer
    # `buffer = adj.scatter_add(buffer, ...)`: the buffer is updated in place, and also rebound,
    # so the code reads as a function of its inputs when it is transformed again
    return syntax.assign(buffer, syntax.call(f"{rev.alias}.scatter_add", [syntax.name(buffer), index, cotangent]))


def finish(rev, record: LoopRecord) -> None:
    """Write the tape (or the iteration count) into the forward loop, once the pullback is known."""
    body = record.loop.body
    at = len(body)
    while at and (syntax.is_break_check(body[at - 1]) or anno.get(body[at - 1], anno.PHI) == "back"):
        at -= 1
    if record.tape is not None:
        values = [syntax.name(n) for n in record.recorded]
        item = values[0] if len(values) == 1 else syntax.tuple_(values)
        start = syntax.assign(record.tape, syntax.list_([]))
        step = syntax.expression_statement(syntax.call(syntax.attr(record.tape, "append"), [item]))
    elif record.counter is not None:
        start = syntax.assign(record.counter, syntax.const(0))
        step = syntax.assign(record.counter, syntax.binop(syntax.name(record.counter), gast.Add, syntax.const(1)))
    else:
        return
    anno.copy_origin(record.loop, [start, step])
    _define_on_every_path(body, set(record.recorded))
    body.insert(at, step)
    position = next(i for i, s in enumerate(record.container) if s is record.loop)
    record.container.insert(position, start)


def _define_on_every_path(body, recorded: set) -> None:
    """Set the recorded names a branch arm does not define to None in that arm, so the tape's
    append can read them whichever way the branch went (the pullback takes the same way)."""
    for stmt in body:
        if isinstance(stmt, gast.If) and not syntax.is_break_check(stmt):
            _define_on_every_path(stmt.body, recorded)
            _define_on_every_path(stmt.orelse, recorded)
            defined = [recorded & set().union(*(syntax.stored_names(s) for s in arm)) for arm in (stmt.body, stmt.orelse)]
            for arm, own, other in ((stmt.body, defined[0], defined[1]), (stmt.orelse, defined[1], defined[0])):
                missing = sorted(other - own)
                if missing:
                    if arm and isinstance(arm[-1], gast.Pass):
                        arm.pop()
                    placeholder = gast.Assign(targets=[syntax.store(n) for n in missing], value=syntax.const(None), type_comment=None)
                    arm.append(anno.copy_origin(stmt, placeholder))
        elif isinstance(stmt, (gast.With, gast.Try)):
            for nested in syntax.bodies(stmt):
                _define_on_every_path(nested, recorded)


def _rederived_items(rev, record, reads: set) -> list:
    """`x = xs[index]` for each item of an array the pullback reads, rather than taping it: a
    row of an array is a new view object per iteration, and the array itself, which adjoint
    never updates in place (see `inplace`), still holds it. Only for a sequence certainly an
    array (a differentiated number), not rebound in the loop, bound once or per iteration of
    an enclosing loop (whose tape then holds it), whose shape and items' shapes nothing
    reassigns (`xs.shape = ...`); a list's items are taped, as the list may change. `reads`:
    the names the loop's pullback reads."""
    code = []
    for name, sequence, index in record.sources:
        if name in reads and sequence in rev.varied and sequence in rev.numbers and sequence not in record.defined:
            enclosing, carried = record.parent, False
            while enclosing is not None and not carried:
                carried, enclosing = sequence in enclosing.defined, enclosing.parent
            if _kept(rev.node, (name, sequence), carried):
                item = gast.Subscript(value=syntax.name(sequence), slice=syntax.copy_node(index), ctx=gast.Load())
                code.append(anno.copy_origin(record.loop, syntax.assign(name, item)))
    return code


def _kept(function, names, rebound: bool) -> bool:
    """Whether no attribute of any of `names` is assigned in `function` (`x.shape = ...`
    changes a view in place), and `names[-1]` is bound at most once there unless `rebound`."""
    stores = 0
    for node in syntax.walk(function):
        if isinstance(node, gast.Name) and node.id == names[-1] and isinstance(node.ctx, gast.Store):
            stores += 1
        elif isinstance(node, gast.Attribute) and not isinstance(node.ctx, gast.Load) and syntax.root_name(node) in names:
            return False
    return rebound or stores <= 1


def drop_unread(node: gast.FunctionDef, pullback: gast.FunctionDef, reads: set[str] | None = None) -> None:
    """Drop from each loop's tape in the forward function `node` the values its `pullback` no
    longer reads anywhere (a pass after `reverse` made them unneeded); a tape keeps at least
    one value per iteration, which its pullback loop counts. `reads`: the names `pullback`
    reads, where the caller knows them."""
    reads = syntax.load_names(pullback) if reads is None else reads
    appends = {}
    started = set()
    for stmt in syntax.statements(node.body):
        if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.List) and not stmt.value.elts:
            started |= syntax.stored_names(stmt)
        call = stmt.value if isinstance(stmt, gast.Expr) else None
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and call.func.attr == "append":
            tape = syntax.root_name(call.func)
            appends[tape] = None if tape in appends else call  # (a tape is appended to once)
    for stmt in syntax.statements(pullback.body):
        tape = _replayed_tape(stmt)
        append = appends.get(tape) if tape in started else None
        if append is None or not isinstance(stmt.target, gast.Tuple) or not isinstance(append.args[0], gast.Tuple):
            continue
        pairs = list(zip(stmt.target.elts, append.args[0].elts))
        if len(stmt.target.elts) != len(append.args[0].elts) or not all(isinstance(t, gast.Name) for t, _ in pairs):
            continue
        kept = [(t, v) for t, v in pairs if t.id in reads] or pairs[:1]
        if len(kept) < len(pairs):
            stmt.target = kept[0][0] if len(kept) == 1 else syntax.tuple_([t for t, _ in kept], syntax.STORE)
            append.args[0] = kept[0][1] if len(kept) == 1 else syntax.tuple_([v for _, v in kept])


def _replayed_tape(stmt) -> str | None:
    """`tape` for a pullback loop `for ... in reversed(tape)`."""
    if not isinstance(stmt, gast.For) or not isinstance(stmt.iter, gast.Call) or len(stmt.iter.args) != 1:
        return None
    replayed = stmt.iter.args[0]
    return replayed.id if isinstance(replayed, gast.Name) else None


def _element_adjoints(rev, record) -> list:
    code = []
    for name, sequence, index in record.sources:
        if name in rev.cot.live and sequence in rev.varied:
            contribution = buffered_contribution(rev, sequence, index, rev.cot.load(name))
            code.append(contribution)
        rev.cot.live.discard(name)
    return code
