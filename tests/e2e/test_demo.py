"""`tavla demo` end to end: the whole story on the session's `tavla dev` stack, as a
person runs it (a subprocess finding the stack by its ports' setting), and its
failure named when there is no stack.

The demo checks every figure itself (balances to the cent from its own reading of
the commission schedule, the Florida refusal's reason, the compliance alert);
this test checks that it says every step passed, and exits 0.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from services.kit.devstack.demo.story import STEPS
from tests.e2e.devstack import REPO, DevRun, stack_ports


def run_demo(port_base: int, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TAVLA_DATABASE_URL", "TAVLA_KAFKA_BOOTSTRAP", "TAVLA_DEV_PORT_OFFSET")}
    env["TAVLA_DEV_PORT_BASE"] = str(port_base)  # as `tavla dev` was given it
    return subprocess.run([sys.executable, "-m", "services.cli", "demo"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


# About a minute on a quiet machine; far more on two cores shared with other test runs.
@pytest.mark.timeout(600)
def test_the_demo_tells_the_whole_story_on_the_dev_stack(dev_stack: DevRun) -> None:
    result = run_demo(dev_stack.block.first, timeout=540)
    print(result.stdout, result.stderr)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    out = result.stdout
    for number, (title, _) in enumerate(STEPS, 1):
        assert f"[demo] step {number}/{len(STEPS)}: {title}" in out
        assert f"[demo] ok: {title}" in out
    assert f"[demo] all {len(STEPS)} steps passed" in out
    # What the person watching sees: the schedule's arithmetic, the refusal, the alert.
    assert "win sum = stake $5.00 x cube" in out and "(half up); the winner pays both" in out
    assert "[location_restricted]" in out
    assert "ALERT_KIND_CHIP_DUMPING" in out and "one_directional_flow" in out


def test_the_demo_names_the_step_that_failed() -> None:
    nowhere = stack_ports()  # ports nothing listens on, kept so until the demo is done
    try:
        result = run_demo(nowhere.first, timeout=60)
    finally:
        nowhere.release()
    assert result.returncode == 1, result.stdout + result.stderr
    assert (f"[demo] FAILED step 1/{len(STEPS)}: the dev stack answers at the gateway: "
            "GET /healthz: the gateway at http://127.0.0.1:") in result.stdout
    assert "[demo] step 2/" not in result.stdout
