"""Frozen records: what `@dataclass(frozen=True)` gives, made at a fraction of its cost.

A record is a class of annotated fields given `__init__` (positional or by name, with defaults
and `field(default_factory=...)`, then `__post_init__` when the class has one), `__repr__`,
`__eq__` and `__hash__` over its fields in order, and assignment refused, as a frozen dataclass
has them. Two costs are left out, which the command line paid for every class it imports on
CPython 3.11: dataclasses compiles each of those methods apart (six compiles a class), and it
imports `inspect` (with `ast`, `dis` and `tokenize`). A record compiles its `__init__` alone (the
fields set in one instance dict), its other methods are shared functions over its field names,
and `dataclasses` is imported only when something asks for dataclasses' view of a record:
`dataclasses.fields`, `replace`, `asdict` and `is_dataclass` find its `__dataclass_fields__`,
made on first use by `dataclasses` itself, so a record is a dataclass to all of them.

`replace` and `field_names` here do what `dataclasses.replace` and `fields` do, without that import.
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")


class FrozenInstanceError(AttributeError):
    """Assignment to a record's field (a record is frozen, as dataclasses' FrozenInstanceError says)."""


class _Factory:
    """A field's default made anew for each record: `field(default_factory=dict)`."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], T]) -> T:
    """A field whose default is made by `default_factory` for each record (a dict, a list)."""
    return _Factory(default_factory)  # type: ignore[return-value]  # stands in for the value until __init__ makes it


_MISSING = object()


def _is_field(annotation: object) -> bool:
    """An annotation that makes a field: any but a ClassVar (as dataclasses reads a string one)."""
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return not text.replace("typing.", "").startswith("ClassVar")


class _DataclassFields:
    """`__dataclass_fields__` of a record, made by dataclasses when first asked for: a dataclass
    of the same fields and defaults, whose fields the record then holds as its own."""

    def __get__(self, instance: object, owner: type) -> dict[str, Any]:
        import dataclasses

        names: tuple[str, ...] = owner.__record_fields__  # type: ignore[attr-defined]
        defaults: dict[str, object] = owner.__record_defaults__  # type: ignore[attr-defined]
        namespace: dict[str, object] = {"__annotations__": {n: owner.__annotations__[n] for n in names}, "__module__": owner.__module__}
        for name, default in defaults.items():
            namespace[name] = dataclasses.field(default_factory=default.make) if isinstance(default, _Factory) else default
        twin: type = dataclasses.dataclass(frozen=True)(type(owner.__name__, (), namespace))
        found: dict[str, Any] = getattr(twin, "__dataclass_fields__")  # noqa: B009
        type.__setattr__(owner, "__dataclass_fields__", found)
        type.__setattr__(owner, "__dataclass_params__", getattr(twin, "__dataclass_params__"))  # noqa: B009
        return found


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[T]) -> type[T]:
    """Make `cls` a frozen record of its annotated fields (a method the class defines itself is kept)."""
    for base in cls.__mro__[1:]:
        if "__record_fields__" in base.__dict__ or "__dataclass_fields__" in base.__dict__:
            raise TypeError(f"{cls.__qualname__}: found it based on {base.__qualname__}, expected a record of its own fields (records inherit none)")
    annotations: dict[str, object] = cls.__dict__.get("__annotations__") or getattr(cls, "__annotations__", {})
    names = tuple(name for name, annotation in annotations.items() if _is_field(annotation))
    defaults: dict[str, object] = {}
    env: dict[str, object] = {"__record_object__": object}  # the generated __init__'s globals
    params = []
    values = []
    for name in names:
        default = cls.__dict__.get(name, _MISSING)
        if default is _MISSING:
            if defaults:
                raise TypeError(f"{cls.__qualname__}: found field {name!r} without a default after one with a default, expected the defaults last")
            params.append(name)
            value = name
        else:
            defaults[name] = default
            env[f"__record_default_{name}__"] = default
            if isinstance(default, _Factory):
                delattr(cls, name)  # as dataclasses does: the class holds no shared default
                params.append(f"{name}=__record_default_{name}__")
                value = f"__record_default_{name}__.make() if {name} is __record_default_{name}__ else {name}"
            else:
                params.append(f"{name}=__record_default_{name}__")
                value = name
        values.append(f"{name!r}: {value}")
    # the fields in one new instance dict (a frozen dataclass sets them one by one: the same record,
    # half the compile and twice as fast to make)
    body = [f"  __record_object__.__setattr__(self, '__dict__', {{{', '.join(values)}}})"]
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    for name in ("__setattr__", "__delattr__"):
        if name in cls.__dict__:
            raise TypeError(f"{cls.__qualname__}: found {name} defined, expected none on a frozen record")
    made: dict[str, Any] = {}
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body), env, made)  # the one compile  # noqa: S102
    methods = {"__init__": made["__init__"], **_methods(cls, names)}
    for name, function in methods.items():
        if name not in cls.__dict__ or (name == "__hash__" and cls.__dict__[name] is None):  # a method the class defines is its own
            function.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, function)
    cls.__record_fields__ = names  # type: ignore[attr-defined]
    cls.__record_defaults__ = defaults  # type: ignore[attr-defined]
    cls.__match_args__ = names  # type: ignore[attr-defined, misc]
    cls.__dataclass_fields__ = _DataclassFields()  # type: ignore[attr-defined]
    return cls


def _methods(cls: type, names: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    """`__repr__`, `__eq__`, `__hash__` and the refusal to assign, over the fields in order, as a
    frozen dataclass has them (equal: the same class and equal fields; the hash of the fields' tuple)."""
    values: Callable[[object], tuple[object, ...]] = attrgetter(*names) if len(names) > 1 else lambda self: tuple(getattr(self, n) for n in names)
    held = frozenset(names)
    own: Any = cls  # super()'s first argument, typed as mypy takes it

    def __repr__(self: object) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(values(self))

    def __setattr__(self: object, name: str, value: object) -> None:
        if type(self) is cls or name in held:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(own, self).__setattr__(name, value)

    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in held:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(own, self).__delattr__(name)

    return {"__repr__": __repr__, "__eq__": __eq__, "__hash__": __hash__, "__setattr__": __setattr__, "__delattr__": __delattr__}


def field_names(value: object) -> tuple[str, ...]:
    """A record's fields, in order (a record or its class)."""
    names: tuple[str, ...] = (value if isinstance(value, type) else type(value)).__record_fields__  # type: ignore[attr-defined]
    return names


def is_record(value: object) -> bool:
    """Whether `value` is a record (an instance; its class is not)."""
    return not isinstance(value, type) and hasattr(type(value), "__record_fields__")


def replace(record: T, /, **changes: Any) -> T:
    """A copy of a record with some fields changed, as `dataclasses.replace` makes it (the record
    positional only: a field may be called anything, `record` and `value` too)."""
    for name in field_names(record):
        if name not in changes:
            changes[name] = getattr(record, name)
    made: T = type(record)(**changes)
    return made
