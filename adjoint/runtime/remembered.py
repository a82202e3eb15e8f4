"""What the runtime remembers about your functions and classes between calls, so that generated
code calling them pays for a few identity checks instead of the whole dispatch each time.

`ByIdentity` holds one value per object (a function, a class), found by identity and dropped
when the object dies, so a class or closure made in a loop is not kept alive by the table.
What a value records about its object is checked again on every use by whoever reads it (a
rule registered since, a method monkeypatched): the table only remembers, it never decides.
"""

from __future__ import annotations

import abc
import inspect
import weakref

__all__ = ["ByIdentity", "class_attribute"]


class ByIdentity:
    """A value per object, keyed by identity, forgotten when the object is collected; objects
    that cannot be weakly referenced (a builtin function) are never remembered.

    >>> class Layer:
    ...     pass
    >>> table = ByIdentity()
    >>> table[Layer] = "seen"
    >>> table.get(Layer), table.get(int)
    ('seen', None)
    >>> del Layer
    >>> import gc; _ = gc.collect()
    >>> len(table)
    0
    """

    __slots__ = ("entries",)

    def __init__(self):
        # id(obj) -> (weak reference to obj, value): an id is reused only after its object died,
        # and its reference then no longer answers with the object
        self.entries: dict[int, tuple] = {}

    def get(self, obj, default=None):
        entry = self.entries.get(id(obj))
        return entry[1] if entry is not None and entry[0]() is obj else default

    def __setitem__(self, obj, value) -> None:
        key, entries = id(obj), self.entries

        def forget(reference, key=key):  # (holds the table and the key: no cycle through the entry)
            entry = entries.get(key)
            if entry is not None and entry[0] is reference:
                del entries[key]

        try:
            entries[key] = (weakref.ref(obj, forget), value)
        except TypeError:  # no weak references to it: not remembered
            pass

    def __len__(self) -> int:
        return len(self.entries)

    def clear(self) -> None:
        """Forget every object (what was remembered may no longer hold for any of them)."""
        self.entries.clear()


# ---- class attributes ----------------------------------------------------------------------------

_MISSING = object()
# class -> {name: (its __mro__ but itself, position of the owner in the __mro__, attribute)}: not
# the whole __mro__, which holds the class, and would keep it alive through its own entry
_attributes = ByIdentity()


def class_attribute(cls, name, default=None):
    """`inspect.getattr_static(cls, name, default)`: what the class holds under `name` (a plain
    function for a method, the `property` or `staticmethod` object itself), remembered per
    class and name, and checked on every call against the class dictionaries it was looked up
    in: the same `__mro__`, the same object in its owner's `__dict__`, and none in a class
    before it (or in any, if no class had it). A method monkeypatched, or shadowed in a
    subclass since, is seen.

    >>> class Base:
    ...     def forward(self, x):
    ...         return x
    >>> class Layer(Base):
    ...     pass
    >>> class_attribute(Layer, "forward") is Base.__dict__["forward"]
    True
    >>> Layer.forward = property(lambda self: None)
    >>> type(class_attribute(Layer, "forward")).__name__
    'property'
    """
    known = _attributes.get(cls)
    found = known.get(name) if known is not None else None
    if found is not None:
        bases, position, attribute = found
        mro = cls.__mro__
        if mro[1:] == bases and (position == len(mro) or mro[position].__dict__.get(name, _MISSING) is attribute):
            for klass in mro[:position]:
                if name in klass.__dict__:
                    break
            else:
                return default if attribute is _MISSING else attribute
    attribute = inspect.getattr_static(cls, name, _MISSING)
    mro = cls.__mro__
    # (a metaclass of its own may give a class another `__dict__`, or change what is found on
    # it: such classes are looked up afresh every time)
    if all(type(klass) in _PLAIN_METACLASSES for klass in mro):
        owners = [position for position, klass in enumerate(mro) if name in klass.__dict__]
        position = owners[0] if owners else len(mro)
        if position == len(mro) or mro[position].__dict__[name] is attribute:
            if known is None:
                _attributes[cls] = known = {}  # (a class that cannot be weakly referenced: not kept)
            known[name] = (mro[1:], position, attribute)
    return default if attribute is _MISSING else attribute


_PLAIN_METACLASSES = (type, abc.ABCMeta)
