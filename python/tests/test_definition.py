"""Streamlets as functions and classes: their ports, parameters, forms and descriptors."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import runnel
from runnel.definition import DefinitionError
from runnel.examples import Reading, Total, Totals, too_hot, too_hot_batch

PACKAGE = Path(__file__).resolve().parents[1]


def test_a_function_streamlet_has_in_out_and_its_keyword_parameters():
    described = too_hot.__runnel__.describe()
    assert described["type"] == "runnel.examples:too_hot"
    assert described["description"] == "Passes the readings above the limit."
    assert [port["name"] for port in described["inlets"]] == ["in"]
    assert [port["name"] for port in described["outlets"]] == ["out"]
    assert described["inlets"][0]["schema"]["name"] == "runnel.examples.Reading"
    assert described["parameters"] == [{"key": "limit", "type": "double", "default": "30.0"}]
    assert too_hot.__runnel__.form == "record"
    assert too_hot_batch.__runnel__.form == "batch"
    assert "state" not in described


def test_a_class_streamlet_names_its_ports_after_its_attributes_and_keeps_state():
    described = Totals.__runnel__.describe()
    assert [port["name"] for port in described["inlets"]] == ["readings"]
    assert [port["name"] for port in described["outlets"]] == ["totals"]
    assert described["outlets"][0]["schema"]["definition"]["name"] == "Total"
    assert described["state"] == "instance"


def test_parameters_are_parsed_from_the_blueprints_text_and_checked():
    @runnel.streamlet
    class Tuned:
        readings = runnel.Inlet(Reading)
        out = runnel.Outlet(Reading)
        window_size = runnel.Parameter(int, description="how many")
        strict = runnel.Parameter(bool, default=False)

        def process(self, reading):
            self.out.emit(reading)

    definition = Tuned.__runnel__
    assert definition.describe()["parameters"] == [
        {"key": "window-size", "type": "int", "description": "how many"},
        {"key": "strict", "type": "bool", "default": "false"},
    ]
    assert definition.parameter_values({"window-size": "12"}) == {"window-size": 12, "strict": False}
    with pytest.raises(ValueError, match="needs parameter 'window-size'"):
        definition.parameter_values({})
    with pytest.raises(ValueError, match="'twelve' is not an int"):
        definition.parameter_values({"window-size": "twelve"})
    with pytest.raises(ValueError, match="'yes' is not true or false"):
        definition.parameter_values({"window-size": "1", "strict": "yes"})
    with pytest.raises(ValueError, match=r"unknown parameters \['size'\]"):
        definition.parameter_values({"window-size": "1", "size": "2"})


def test_definitions_runnel_cannot_host_are_refused_with_what_to_change():
    with pytest.raises(DefinitionError, match="annotate argument 'reading'"):
        @runnel.streamlet
        def untyped(reading) -> Reading:
            return reading

    with pytest.raises(DefinitionError, match="annotate the return type"):
        @runnel.streamlet
        def no_return(reading: Reading):
            return reading

    with pytest.raises(DefinitionError, match="must be a dataclass"):
        @runnel.streamlet
        def plain(reading: dict) -> Reading:
            return reading

    with pytest.raises(DefinitionError, match="annotate the argument as list"):
        @runnel.streamlet(batch=True)
        def not_a_list(reading: Reading) -> list[Reading]:
            return [reading]

    with pytest.raises(DefinitionError, match="needs both"):
        @runnel.streamlet
        class HalfState:
            readings = runnel.Inlet(Reading)

            def process(self, reading):
                pass

            def snapshot(self):
                return 1

    with pytest.raises(DefinitionError, match=r"names ports \['in'\] twice"):
        @runnel.streamlet
        class Twice:
            first = runnel.Inlet(Reading, name="in")
            second = runnel.Outlet(Reading, name="in")

            def process(self, reading):
                pass


def test_describe_prints_the_descriptor_entries_and_names_a_bad_reference():
    described = subprocess.run(
        [sys.executable, "-m", "runnel", "describe", "runnel.examples:too_hot", "runnel.examples:Totals"],
        cwd=PACKAGE, capture_output=True, text=True, check=True,
    )
    streamlets = json.loads(described.stdout)["streamlets"]
    assert [entry["type"] for entry in streamlets] == ["runnel.examples:too_hot", "runnel.examples:Totals"]
    failed = subprocess.run(
        [sys.executable, "-m", "runnel", "describe", "runnel.examples:Reading"],
        cwd=PACKAGE, capture_output=True, text=True,
    )
    assert failed.returncode == 1
    assert "streamlet 'runnel.examples:Reading': 'runnel.examples:Reading' is not decorated" in failed.stderr


def test_total_is_a_plain_dataclass():
    assert dataclasses.is_dataclass(Total)
