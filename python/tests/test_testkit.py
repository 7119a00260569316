"""Streamlets run by the test kit: outputs, keys, dead letters, batches, state and time."""

import dataclasses

import runnel
from runnel import testkit
from runnel.examples import Reading, Total, Totals, too_hot, too_hot_batch


def test_a_map_passes_what_it_returns_and_takes_its_parameters():
    readings = [Reading("a", 31.0), Reading("b", 12.0), Reading("c", 45.5)]
    assert testkit.run(too_hot, readings).outputs["out"] == [readings[0], readings[2]]
    assert testkit.run(too_hot, readings, {"limit": 40}).outputs["out"] == [readings[2]]


def test_a_failing_record_is_a_dead_letter_with_its_traceback_and_the_rest_go_on():
    result = testkit.run(too_hot, [Reading("a", 31.0), Reading("b", float("nan")), Reading("c", 33.0)])
    assert [reading.sensor for reading in result.outputs["out"]] == ["a", "c"]
    [dead] = result.dead_letters
    assert dead.offset == 1
    assert "streamlet 'runnel.examples:too_hot' failed on the record at partition 0 offset 1" in dead.error
    assert "ValueError: sensor b sent NaN" in dead.error
    assert "Traceback" in dead.error


def test_a_record_that_does_not_decode_is_a_dead_letter_saying_where_it_was():
    result = testkit.run(too_hot, [testkit.Raw(b"\x02"), Reading("a", 31.0)])
    assert result.outputs["out"] == [Reading("a", 31.0)]
    [dead] = result.dead_letters
    assert "the record at partition 0 offset 0 of inlet 'in' does not decode as Reading" in dead.error


def test_a_batch_form_failing_on_one_record_finds_it_and_keeps_the_others():
    @runnel.streamlet(batch=True)
    def strict(readings: list[Reading]) -> list[Reading]:
        for reading in readings:
            if reading.sensor == "bad":
                raise ValueError("a bad sensor")
        return readings

    good = [Reading("a", 1.0), Reading("b", 2.0)]
    assert testkit.run(too_hot_batch, good + [Reading("c", 99.0)]).outputs["out"] == [Reading("c", 99.0)]
    result = testkit.run(strict, [good[0], Reading("bad", 0.0), good[1]])
    assert result.outputs["out"] == good
    assert [dead.offset for dead in result.dead_letters] == [1]
    assert "ValueError: a bad sensor" in result.dead_letters[0].error


def test_a_class_streamlet_reads_its_parameters_as_attributes():
    result = testkit.run(Totals, [Reading("a", -300.0), Reading("a", 2.0)], {"minimum": 0})
    assert result.outputs["totals"] == [Total("a", 1, 2.0)]


def test_keys_go_with_the_outputs():
    result = testkit.run(Totals, [Reading("a", 1.0), Reading("a", 2.0), Reading("b", 5.0)])
    assert result.outputs["totals"] == [Total("a", 1, 1.0), Total("a", 2, 3.0), Total("b", 1, 5.0)]
    assert result.keys["totals"] == [b"a", b"a", b"b"]


def test_state_comes_back_from_a_checkpoint():
    first = testkit.TestRun(Totals)
    first.send([Reading("a", 1.0), Reading("b", 2.0)])
    snapshot = first.checkpoint()
    first.send([Reading("a", 100.0)])  # after the checkpoint: lost with the process
    restarted = testkit.TestRun(Totals, restore=snapshot)
    assert restarted.send([Reading("a", 3.0)]).outputs["totals"] == [Total("a", 2, 4.0)]


def test_time_is_the_test_kits_and_moves_when_told():
    @dataclasses.dataclass
    class Stamped:
        sensor: str
        at: int

    @runnel.streamlet
    def stamp(reading: Reading) -> Stamped:
        return Stamped(reading.sensor, runnel.now_millis())

    run = testkit.TestRun(stamp, now=1_000)
    assert run.send([Reading("a", 1.0)]).outputs["out"] == [Stamped("a", 1_000)]
    run.advance(250)
    assert run.send([Reading("a", 1.0)]).outputs["out"] == [Stamped("a", 1_250)]


def test_the_key_of_the_record_is_at_hand():
    @runnel.streamlet
    def by_key(reading: Reading) -> Reading:
        return Reading(runnel.current_key().decode(), reading.celsius)

    result = testkit.run(by_key, [testkit.keyed("k1", Reading("a", 1.0))])
    assert result.outputs["out"] == [Reading("k1", 1.0)]


def test_an_output_of_the_wrong_type_is_a_dead_letter_naming_the_outlet():
    @runnel.streamlet
    def wrong(reading: Reading) -> Total:
        return reading  # not a Total

    [dead] = testkit.run(wrong, [Reading("a", 1.0)]).dead_letters
    assert "an output for outlet 'out' does not encode: expected a Total, got a Reading" in dead.error


def test_a_streamlet_with_several_inlets_is_told_which_one():
    @runnel.streamlet
    class Merge:
        left = runnel.Inlet(Reading)
        right = runnel.Inlet(Reading)
        out = runnel.Outlet(Reading)

        def process(self, inlet, reading):
            self.out.emit(Reading(f"{inlet}:{reading.sensor}", reading.celsius))

    run = testkit.TestRun(Merge)
    assert run.send([Reading("a", 1.0)], inlet="right").outputs["out"] == [Reading("right:a", 1.0)]
