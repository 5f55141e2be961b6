"""Defects found comparing the tiers of a tiered program (the NumPy tier, "mixed", compiled)
and the switch between them (driver/tiered.py)."""
import threading
import warnings

import numpy as np

from tracejit.driver.tiered import CompileWarning, TieredProgram


def test_a_failed_stage_under_warnings_as_errors_is_recorded_and_the_next_stage_still_builds(
        monkeypatch, capsys):
    """With warnings turned into errors (pytest's ``filterwarnings = error``), the CompileWarning
    raised inside the background thread killed it: the error was not recorded (``error`` None,
    ``lower()`` said "the compile failed: None"), the stages after the failed one were never
    built, and the thread died with an unhandled exception."""
    died = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))

    def mixed():
        raise RuntimeError("kernel k3 did not compile")

    def compiled():
        return lambda leaves: [leaves[0] * 2]

    program = TieredProgram("f", lambda leaves: [leaves[0] * 2],
                            [("mixed", mixed), ("compiled", compiled)])
    x = np.arange(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(program([x])[0], x * 2)      # on the NumPy tier
        program._done.wait(10)
        assert died == []
        assert isinstance(program.error, RuntimeError)
        assert program.tier == "compiled"
        np.testing.assert_array_equal(program([x])[0], x * 2)
    assert "kernel k3 did not compile" in capsys.readouterr().err


def test_a_failed_stage_still_warns_once_with_the_default_filters():
    program = TieredProgram("g", lambda leaves: [leaves[0]],
                            [("compiled", lambda: 1 / 0)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program([np.ones(2)])
        program._done.wait(10)
        program([np.ones(2)])
    assert [w.category for w in caught] == [CompileWarning]
    assert isinstance(program.error, ZeroDivisionError) and program.tier == "numpy"
