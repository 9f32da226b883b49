"""The retention timer of ``function_app.py`` as the local host runs it: indexed with its
schedule setting, whose default parses, and firing it runs one sweep (docs/retention.md)."""

from __future__ import annotations

from memnet.bootstrap import Services


def test_the_sweep_timer_reads_its_schedule_from_the_app_setting() -> None:
    import function_app
    from funchost import functions_of
    from funchost.schedule import parse_ncrontab

    timers = {t.name: t for t in functions_of(function_app.app).timer_functions}
    timer = timers["retention_sweep"]
    assert (timer.schedule, timer.run_on_startup) == ("%MEMNET_SWEEP_SCHEDULE%", False)
    assert parse_ncrontab("0 17 * * * *") is not None  # the default funchost sets


def test_firing_the_timer_runs_one_sweep_pass(services: Services) -> None:
    import function_app
    from funchost import functions_of
    from funchost.background import fire_timer

    timers = {t.name: t for t in functions_of(function_app.app).timer_functions}
    fire_timer(timers["retention_sweep"], past_due=False)
    state = services.retention.walker.state()
    assert state is not None and state.passes_completed == 1
