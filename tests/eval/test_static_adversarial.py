"""Static checks, adversarial side: each adversarial candidate is caught by its named check on the
offending line (marked `# BAD`); every named check has such a case."""

from __future__ import annotations

import pytest
from kernelskill.eval.static.checks import CHECKS
from static_cheats import CHEATS
from static_refusals import REFUSALS
from static_util import assert_flagged, candidate

BAD = {**CHEATS, **REFUSALS}


@pytest.mark.parametrize(("check", "body"), [
    pytest.param(c, b, id=f"{c}-{i}") for c, bodies in BAD.items() for i, b in enumerate(bodies)])
def test_adversarial_candidate_is_caught_on_its_line(check, body):
    assert_flagged(candidate(body), check)


def test_every_named_check_has_an_adversarial_case():
    assert set(BAD) == set(CHECKS) == {
        "timer_patching", "threads_or_processes", "side_stream", "fallback_to_reference", "calls_reference",
        "output_caching", "call_counting", "precision_downgrade", "introspection", "dynamic_code",
        "global_state", "import_allowlist", "attribute_allowlist", "reflection", "decorator_allowlist",
    }
