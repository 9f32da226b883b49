"""The secret scan of the run's logs (tests/secret_scan.py) finds what it is for.

The values are assembled at run time, so this file's source is not itself a finding for
anyone grepping the logs, and nothing here is logged: the planted values go to files
under ``tmp_path`` only, which the session's scan does not read.
"""

from __future__ import annotations

import logging
from pathlib import Path

from tests.secret_scan import PLANTED, capture, mask, report, scan

PEPPER = PLANTED["api key pepper"]
JWT = "eyJhbGciOiJSUzI1NiJ9" + "." + "eyJzdWIiOiJ1MSJ9" + ".c2lnbmF0dXJl"


def write(path: Path, *lines: str) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_a_planted_secret_is_found_with_its_line_and_masked(tmp_path):
    log = write(tmp_path / "gw0.log", "starting", f"pepper is {PEPPER} here", "done")
    [finding] = scan([log])
    assert (finding.path, finding.line, finding.what) == (log, 2, "api key pepper")
    assert finding.excerpt == "pepper is <api key pepper> here"
    assert PEPPER not in str(finding) and PEPPER not in report([finding])


def test_every_planted_value_and_a_jwt_is_found(tmp_path):
    log = write(tmp_path / "main.log", *PLANTED.values(), f"Authorization: Bearer {JWT}")
    assert [f.what for f in scan([log])] == [*PLANTED, "JWT"]


def test_a_jwt_shaped_string_is_masked_whole(tmp_path):
    assert mask(f"token={JWT};") == "token=<JWT>;"


def test_a_clean_log_and_look_alikes_are_not_findings(tmp_path):
    fake_token = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.fake.token"  # one segment, no payload
    log = write(tmp_path / "gw1.log", "GET /v1/health 200", fake_token, "dev-agent", "planted-")
    assert scan([log]) == []


def test_several_files_are_reported_in_order(tmp_path):
    second = write(tmp_path / "gw1.log", "ok", f"x {PLANTED['agent api key']}")
    first = write(tmp_path / "gw0.log", f"{PLANTED['search api key']} y")
    assert [(f.path.name, f.line) for f in scan([second, first])] == [
        ("gw0.log", 1),
        ("gw1.log", 2),
    ]


def test_the_capture_handler_writes_formatted_args_and_tracebacks(tmp_path):
    logger = logging.Logger("memnet.secret-scan-test")  # not in the manager: no propagation
    handler = capture(tmp_path / "gw0.log")
    logger.addHandler(handler)
    try:
        logger.debug("key %s", PLANTED["openai api key"])
        try:
            raise RuntimeError(f"with {PEPPER}")
        except RuntimeError:
            logger.exception("failed")
    finally:
        handler.close()
    assert [f.what for f in scan([tmp_path / "gw0.log"])] == ["openai api key", "api key pepper"]
