"""Streamlets written in Python: their ports, parameters and forms, and the descriptor the
Runnel verifier checks blueprints against.

Two ways to write one:

* a **function** decorated with :func:`streamlet`: its first argument is the record of the
  inlet ``in`` (annotated with its type), its return annotation the type of the outlet
  ``out``; further keyword arguments with annotations and defaults are parameters. It returns
  a record, ``None`` (nothing) or a list of records. With ``batch=True`` it takes a list of
  records and returns a list (or, annotated ``pyarrow.Table``, takes and returns tables).
* a **class** decorated with :func:`streamlet`, with :class:`Inlet`, :class:`Outlet` and
  :class:`Parameter` attributes and a ``process(self, record)`` method (``process(self,
  inlet, record)`` with several inlets; ``process_batch(self, records)`` for the batch
  form) that emits with ``self.<outlet>.emit(record, key=...)``. Optional ``setup(self)``
  runs once the parameters are set; ``snapshot(self)`` and ``restore(self, snapshot)`` make
  it stateful: the host checkpoints what ``snapshot`` returns (pickled) with the input
  offsets, and hands it to ``restore`` after a restart.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any, Callable

from .schema import Codec, SchemaError, avro_schema, is_record_type

#: Parameter types and their names in the descriptor.
_PARAMETER_TYPES = {int: "int", float: "double", bool: "bool", str: "string"}


class DefinitionError(TypeError):
    """A streamlet written in a way Runnel cannot host, saying what to change."""


class Inlet:
    """An inlet of a class streamlet, carrying records of ``record_type``."""

    def __init__(self, record_type: type, name: str | None = None):
        self.record_type = record_type
        self.name = name

    def __set_name__(self, owner: type, attribute: str) -> None:
        if self.name is None:
            self.name = attribute.replace("_", "-")


class Outlet:
    """An outlet of a class streamlet. On an instance, ``self.<outlet>.emit(record, key=None)``
    sends a record (the key, ``str`` or ``bytes``, picks its partition)."""

    def __init__(self, record_type: type, name: str | None = None):
        self.record_type = record_type
        self.name = name
        self.index = -1

    def __set_name__(self, owner: type, attribute: str) -> None:
        if self.name is None:
            self.name = attribute.replace("_", "-")

    def __get__(self, instance: Any, owner: type) -> Any:
        if instance is None:
            return self
        return _Emitter(instance.__dict__["_runnel_emitted"], self.index)


class _Emitter:
    __slots__ = ("_emitted", "_index")

    def __init__(self, emitted: list, index: int):
        self._emitted = emitted
        self._index = index

    def emit(self, record: Any, key: str | bytes | None = None) -> None:
        """Sends ``record`` on this outlet once the input it answers is done."""
        self._emitted.append((self._index, record, key))


class Parameter:
    """A parameter of a class streamlet: the blueprint or ``--set`` gives its value; read it
    as ``self.<parameter>`` (already of ``kind``)."""

    def __init__(self, kind: type, default: Any = dataclasses.MISSING, description: str = "",
                 name: str | None = None):
        if kind not in _PARAMETER_TYPES:
            raise DefinitionError(
                f"parameter type {kind!r} is not one of int, float, bool, str"
            )
        self.kind = kind
        self.default = default
        self.description = description
        self.name = name
        self.attribute = ""

    def __set_name__(self, owner: type, attribute: str) -> None:
        self.attribute = attribute
        if self.name is None:
            self.name = attribute.replace("_", "-")

    def __get__(self, instance: Any, owner: type) -> Any:
        if instance is None:
            return self
        return instance.__dict__["_runnel_parameters"][self.name]

    def parse(self, text: str) -> Any:
        """The value of ``text``, written in the parameter's syntax (the blueprint's)."""
        if self.kind is bool:
            if text in ("true", "false"):
                return text == "true"
            raise ValueError(f"parameter '{self.name}': '{text}' is not true or false")
        try:
            return self.kind(text)
        except ValueError:
            article = "an" if self.kind is int else "a"
            raise ValueError(
                f"parameter '{self.name}': '{text}' is not {article} {_PARAMETER_TYPES[self.kind]}"
            ) from None

    def describe(self) -> dict:
        described: dict[str, Any] = {"key": self.name, "type": _PARAMETER_TYPES[self.kind]}
        if self.description:
            described["description"] = self.description
        if self.default is not dataclasses.MISSING:
            default = self.default
            described["default"] = (
                ("true" if default else "false") if isinstance(default, bool) else str(default)
            )
        return described


@dataclasses.dataclass
class Definition:
    """What the host needs to know of a streamlet: its ports, parameters, form and state, and
    how to make an instance that handles records."""

    type_name: str
    description: str
    inlets: list[Inlet]
    outlets: list[Outlet]
    parameters: list[Parameter]
    #: ``record`` (one record at a time), ``batch`` (lists) or ``arrow`` (pyarrow tables).
    form: str
    stateful: bool
    #: Makes an instance from the parameters' values (parsed).
    make: Callable[[dict[str, Any]], Any]

    def describe(self) -> dict:
        """The streamlet's entry of an app descriptor (docs/descriptor.md)."""
        described: dict[str, Any] = {
            "type": self.type_name,
            "inlets": [_port(inlet.name, inlet.record_type) for inlet in self.inlets],
            "outlets": [_port(outlet.name, outlet.record_type) for outlet in self.outlets],
            "parameters": [parameter.describe() for parameter in self.parameters],
        }
        if self.description:
            described["description"] = self.description
        if self.stateful:
            described["state"] = "instance"
        return described

    def parameter_values(self, given: dict[str, str]) -> dict[str, Any]:
        """The parameters' values from their text (``given``) or defaults."""
        unknown = set(given) - {parameter.name for parameter in self.parameters}
        if unknown:
            raise ValueError(f"unknown parameters {sorted(unknown)} for streamlet '{self.type_name}'")
        values = {}
        for parameter in self.parameters:
            if parameter.name in given:
                values[parameter.name] = parameter.parse(given[parameter.name])
            elif parameter.default is not dataclasses.MISSING:
                values[parameter.name] = parameter.default
            else:
                raise ValueError(
                    f"streamlet '{self.type_name}' needs parameter '{parameter.name}'"
                )
        return values


def _port(name: str, record_type: type) -> dict:
    schema = avro_schema(record_type)
    return {
        "name": name,
        "schema": {
            "format": "avro",
            "name": f"{schema['namespace']}.{schema['name']}",
            "definition": schema,
        },
    }


def streamlet(target: Any = None, *, batch: bool = False, name: str | None = None) -> Any:
    """Makes a function or class a streamlet (see the module's documentation); the result is
    the function or class itself, with its :class:`Definition` as ``__runnel__``.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Reading:
    ...     sensor: str
    ...     celsius: float
    >>> @streamlet
    ... def too_hot(reading: Reading, limit: float = 30.0) -> Reading | None:
    ...     return reading if reading.celsius > limit else None
    >>> [port["name"] for port in too_hot.__runnel__.describe()["inlets"]]
    ['in']
    """

    def wrap(target: Any) -> Any:
        if inspect.isclass(target):
            definition = _class_definition(target, batch, name)
        elif callable(target):
            definition = _function_definition(target, batch, name)
        else:
            raise DefinitionError(f"{target!r} is neither a function nor a class")
        target.__runnel__ = definition
        return target

    return wrap if target is None else wrap(target)


def _type_name(target: Any, name: str | None) -> str:
    return name or f"{target.__module__}:{target.__qualname__}"


def _check_port_type(what: str, record_type: Any) -> None:
    if not is_record_type(record_type):
        raise DefinitionError(
            f"{what} carries {record_type!r}: a port's type must be a dataclass or a pydantic model"
        )
    try:
        avro_schema(record_type)
    except SchemaError as error:
        raise DefinitionError(f"{what}: {error}") from None


def _function_definition(function: Callable, batch: bool, name: str | None) -> Definition:
    type_name = _type_name(function, name)
    hints = typing.get_type_hints(function)
    signature = inspect.signature(function)
    arguments = list(signature.parameters.values())
    if not arguments:
        raise DefinitionError(f"streamlet '{type_name}' takes no record: give it an argument")
    first = arguments[0]
    if first.name not in hints:
        raise DefinitionError(
            f"streamlet '{type_name}': annotate argument '{first.name}' with the inlet's record type"
        )
    returned = hints.get("return")
    if returned is None:
        raise DefinitionError(
            f"streamlet '{type_name}': annotate the return type with the outlet's record type"
        )
    form = "record"
    in_type, out_type = hints[first.name], _record_of(returned)
    if batch:
        if _is_arrow_table(in_type):
            raise DefinitionError(
                f"streamlet '{type_name}' takes pyarrow tables: use a class streamlet, whose "
                "Inlet and Outlet name the record types the tables' columns come from"
            )
        form = "batch"
        in_type, out_type = _list_of(in_type, type_name, "argument"), _list_of(returned, type_name, "return")
    _check_port_type(f"inlet 'in' of streamlet '{type_name}'", in_type)
    _check_port_type(f"outlet 'out' of streamlet '{type_name}'", out_type)
    parameters = []
    for argument in arguments[1:]:
        if argument.kind not in (argument.KEYWORD_ONLY, argument.POSITIONAL_OR_KEYWORD):
            raise DefinitionError(f"streamlet '{type_name}': argument '{argument.name}' cannot be a parameter")
        if argument.name not in hints:
            raise DefinitionError(
                f"streamlet '{type_name}': annotate parameter '{argument.name}' (int, float, bool or str)"
            )
        default = dataclasses.MISSING if argument.default is argument.empty else argument.default
        parameter = Parameter(hints[argument.name], default, name=argument.name.replace("_", "-"))
        parameter.attribute = argument.name
        parameters.append(parameter)
    inlet, outlet = Inlet(in_type, "in"), Outlet(out_type, "out")
    outlet.index = 0

    def make(values: dict[str, Any]) -> Any:
        keywords = {parameter.attribute: values[parameter.name] for parameter in parameters}
        return _FunctionInstance(function, keywords, batch)

    return Definition(type_name, inspect.getdoc(function) or "", [inlet], [outlet], parameters,
                      form, False, make)


def _record_of(annotation: Any) -> Any:
    """The record type of a return annotation ``T``, ``T | None`` or ``list[T]``."""
    arguments = [argument for argument in typing.get_args(annotation) if argument is not type(None)]
    if typing.get_origin(annotation) is list:
        return arguments[0]
    if len(arguments) == 1 and type(None) in typing.get_args(annotation):
        return arguments[0]
    return annotation


def _list_of(annotation: Any, type_name: str, where: str) -> Any:
    if typing.get_origin(annotation) is not list:
        raise DefinitionError(
            f"batch streamlet '{type_name}': annotate the {where} as list[RecordType]"
        )
    return typing.get_args(annotation)[0]


def _is_arrow_table(annotation: Any) -> bool:
    return getattr(annotation, "__module__", "").startswith("pyarrow") and getattr(
        annotation, "__name__", ""
    ) == "Table"


class _FunctionInstance:
    """A function streamlet's instance: calls the function, emits what it returns."""

    def __init__(self, function: Callable, keywords: dict[str, Any], batch: bool):
        self.function = function
        self.keywords = keywords
        self.batch = batch
        self._runnel_emitted: list = []

    def process(self, inlet: int, record: Any) -> None:
        self._emit(self.function(record, **self.keywords))

    def process_batch(self, inlet: int, records: list) -> None:
        self._emit(self.function(records, **self.keywords))

    def _emit(self, returned: Any) -> None:
        if returned is None:
            return
        if isinstance(returned, list):
            self._runnel_emitted.extend((0, record, None) for record in returned)
        else:
            self._runnel_emitted.append((0, returned, None))


def _class_definition(cls: type, batch: bool, name: str | None) -> Definition:
    type_name = _type_name(cls, name)
    members = [member for klass in reversed(cls.__mro__) for member in vars(klass).values()]
    inlets = [member for member in members if isinstance(member, Inlet)]
    outlets = [member for member in members if isinstance(member, Outlet)]
    parameters = [member for member in members if isinstance(member, Parameter)]
    if not inlets:
        raise DefinitionError(f"streamlet '{type_name}' has no Inlet")
    for index, outlet in enumerate(outlets):
        outlet.index = index
    for inlet in inlets:
        _check_port_type(f"inlet '{inlet.name}' of streamlet '{type_name}'", inlet.record_type)
    for outlet in outlets:
        _check_port_type(f"outlet '{outlet.name}' of streamlet '{type_name}'", outlet.record_type)
    names = [port.name for port in inlets] + [port.name for port in outlets]
    duplicates = sorted({port for port in names if names.count(port) > 1})
    if duplicates:
        raise DefinitionError(f"streamlet '{type_name}' names ports {duplicates} twice")
    has_batch = callable(getattr(cls, "process_batch", None))
    has_record = callable(getattr(cls, "process", None))
    if not (has_batch or has_record):
        raise DefinitionError(f"streamlet '{type_name}' has neither process nor process_batch")
    form = "record"
    if has_batch and (batch or not has_record):
        form = "batch"
        hints = typing.get_type_hints(cls.process_batch)
        if any(_is_arrow_table(hint) for hint in hints.values()):
            form = "arrow"
    has_snapshot = callable(getattr(cls, "snapshot", None))
    if has_snapshot != callable(getattr(cls, "restore", None)):
        raise DefinitionError(
            f"streamlet '{type_name}' defines one of snapshot and restore: a stateful streamlet needs both"
        )
    several = len(inlets) > 1

    def make(values: dict[str, Any]) -> Any:
        instance = cls.__new__(cls)
        instance.__dict__["_runnel_parameters"] = values
        instance.__dict__["_runnel_emitted"] = []
        instance.__init__()
        if callable(getattr(instance, "setup", None)):
            instance.setup()
        return _ClassInstance(instance, [inlet.name for inlet in inlets] if several else None)

    return Definition(type_name, inspect.getdoc(cls) or "", inlets, outlets, parameters, form,
                      has_snapshot, make)


class _ClassInstance:
    """A class streamlet's instance, called as the host hands records over."""

    def __init__(self, instance: Any, inlet_names: list[str] | None):
        self.instance = instance
        self.inlet_names = inlet_names
        self._runnel_emitted = instance.__dict__["_runnel_emitted"]

    def process(self, inlet: int, record: Any) -> None:
        if self.inlet_names is None:
            self.instance.process(record)
        else:
            self.instance.process(self.inlet_names[inlet], record)

    def process_batch(self, inlet: int, records: Any) -> None:
        if self.inlet_names is None:
            self.instance.process_batch(records)
        else:
            self.instance.process_batch(self.inlet_names[inlet], records)

    def snapshot(self) -> Any:
        return self.instance.snapshot()

    def restore(self, snapshot: Any) -> None:
        self.instance.restore(snapshot)


def codecs(ports: list) -> list[Codec]:
    """A codec per port, in the ports' order."""
    return [Codec(port.record_type) for port in ports]


def load(reference: str) -> Definition:
    """The definition of the streamlet ``module:attribute`` (importing the module).

    >>> load("runnel.examples:too_hot").type_name
    'runnel.examples:too_hot'
    """
    import importlib

    module_name, _, attribute = reference.partition(":")
    if not attribute:
        raise DefinitionError(f"'{reference}' is not module:attribute")
    module = importlib.import_module(module_name)
    target = module
    for part in attribute.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise DefinitionError(f"module '{module_name}' has no '{attribute}'")
    definition = getattr(target, "__runnel__", None)
    if definition is None:
        raise DefinitionError(f"'{reference}' is not decorated with @runnel.streamlet")
    return definition
