"""Faster construction for the frozen, slotted dataclasses built for every message.

The ``__init__`` that :func:`dataclasses.dataclass` writes for a frozen class stores each field with
``object.__setattr__(self, "name", value)`` (the class's own ``__setattr__`` refuses assignment): a generic call
per field, on top of the Python-level ``__init__`` call itself. The model builds several records per message
published and delivered (the message, its metadata, the entry, the receipt, the received message); on the client
surface their construction was a quarter of the time.

:func:`fast_frozen_init` builds the instance in ``__new__`` instead: it is allocated as a *twin* class (same
``__slots__``, no ``__setattr__`` override), its fields are stored by plain assignment, and it becomes an
instance of the class itself; ``__init__`` is ``object.__init__``, which does nothing. What callers see does not
change: signature and defaults, ``__post_init__``, equality, hashing, ``repr``, ``dataclasses.replace``, copying,
pickling and immutability (assignment still raises ``FrozenInstanceError``) are the dataclass's own, and the
instance's type is the class.
"""

from __future__ import annotations

from dataclasses import _FIELD, MISSING, fields, is_dataclass  # type: ignore[attr-defined]
from typing import Any, TypeVar

__all__ = ["fast_frozen_init"]

T = TypeVar("T")


def fast_frozen_init(cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` the faster construction described in the module docstring.

    Supports what the model's records use: positional-or-keyword fields with or without a plain ``default``, and
    ``init=False`` fields that ``__post_init__`` sets (with ``object.__setattr__``, as usual). Anything else
    (``default_factory``, ``kw_only``, ``InitVar``, ``ClassVar``, a base class) is refused when the class is
    defined, so that a new field cannot silently change meaning. Do not subclass a decorated class: the instance
    is allocated with the class's own slot layout.
    """
    params = getattr(cls, "__dataclass_params__", None)
    slots = cls.__dict__.get("__slots__")
    if not is_dataclass(cls) or params is None or not params.frozen or slots is None or cls.__bases__ != (object,):
        raise TypeError(
            f"fast_frozen_init needs a @dataclass(frozen=True, slots=True) class without bases, not {cls!r}."
        )
    pseudo = [f.name for f in cls.__dataclass_fields__.values() if f._field_type is not _FIELD]  # type: ignore[attr-defined]
    if pseudo:  # InitVar / ClassVar: fields() hides them, so they would fail only at construction
        raise TypeError(f"fast_frozen_init does not support {cls.__name__}.{pseudo[0]} (InitVar or ClassVar).")
    twin = type(f"_Mutable{cls.__name__}", (), {"__slots__": tuple(slots), "__module__": cls.__module__})
    closure: dict[str, Any] = {"_twin": twin, "_allocate": object.__new__}
    signature: list[str] = []
    body: list[str] = ["        self = _allocate(_twin)"]
    init_names: list[str] = []
    for f in fields(cls):
        if not f.init:
            continue
        if f.default_factory is not MISSING or f.kw_only:
            raise TypeError(f"fast_frozen_init does not support {cls.__name__}.{f.name} (default_factory or kw_only).")
        if f.default is MISSING:
            signature.append(f.name)
        else:
            closure[f"_default_{f.name}"] = f.default
            signature.append(f"{f.name}=_default_{f.name}")
        body.append(f"        self.{f.name} = {f.name}")
        init_names.append(f.name)
    body.append("        self.__class__ = cls")
    if hasattr(cls, "__post_init__"):
        body.append("        self.__post_init__()")
    body.append("        return self")
    # the twin and the defaults are closure variables of a factory: cheaper to read than globals
    source = (
        f"def _make({', '.join(closure)}):\n"
        f"    def __new__(cls, {', '.join(signature)}):\n" + "\n".join(body) + "\n"
        "    return __new__\n"
    )
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # generated from the class's own field names, as dataclasses does
    new = namespace["_make"](**closure)
    new.__qualname__ = f"{cls.__qualname__}.__new__"
    new.__doc__ = cls.__init__.__doc__

    def __reduce__(self: Any) -> tuple[Any, tuple[Any, ...]]:
        """Copy and pickle by calling the class with the init fields (``__new__`` needs them)."""
        return (cls, tuple(getattr(self, name) for name in init_names))

    cls.__new__ = staticmethod(new)  # type: ignore[method-assign]
    cls.__init__ = object.__init__  # type: ignore[method-assign]
    cls.__reduce__ = __reduce__  # type: ignore[method-assign]
    return cls
