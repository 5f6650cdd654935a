"""The sandbox for a user who is not root: the namespaces come inside a user namespace of the
run's own (`unshare --user --map-root-user`), where the caller's uid is uid 0, and a child drops
every capability of that namespace. Root can ask for the same (host_probe.probe_layers(userns=True)):
the same namespaces, mounts and capability drop an unprivileged user gets, so the side-effect
tests of test_sandbox.py and test_boundary.py run again here under them, judge and candidate
included (the judge starts its candidate in a user namespace nested in its own). A host that
allows no user namespace skips, with the reason."""

from __future__ import annotations

import json

import pytest
from kernelskill.eval.sandbox import layers as S
from kernelskill.eval.sandbox.host_probe import probe_layers
from kernelskill.eval.sandbox.report import report
from kernelskill.eval.sandbox.spec import Layers

USERNS = probe_layers(userns=True)
_GONE = "; ".join(f"{k}: {v}" for k, v in USERNS.missing.items() if k != "uid")
pytestmark = [
    pytest.mark.usefixtures("sandbox_child_on_path", "userns_layers"),
    pytest.mark.skipif(not ({"net", "pid", "mount"} <= USERNS.namespaces and USERNS.drop_caps),
                       reason=f"no user namespace with its layers on this host: {_GONE}"),
]


@pytest.fixture
def userns_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sandboxed child of this test starts as an unprivileged user's would."""
    monkeypatch.setattr(S, "probe", lambda: USERNS)


# The side-effect tests, collected here again under the fixture above.
from test_boundary import (  # noqa: E402
    test_the_candidate_process_reads_nothing_of_its_judge_and_reaches_nothing_of_the_host,
)
from test_sandbox import (  # noqa: E402
    test_a_legitimate_child_works,
    test_credentials_and_the_kernelskill_cache_are_neither_readable_nor_writable,
    test_host_unix_sockets_under_run_are_unreachable_and_nvidia_folders_stay,
    test_no_connection_reaches_a_listener_on_loopback,
    test_project_tree_and_tmp_are_out_of_reach,
    test_raw_disks_and_kernel_knobs_are_out_of_reach,
    test_root_child_holds_no_capability,
)

__all__ = [
    "test_a_legitimate_child_works",
    "test_credentials_and_the_kernelskill_cache_are_neither_readable_nor_writable",
    "test_host_unix_sockets_under_run_are_unreachable_and_nvidia_folders_stay",
    "test_no_connection_reaches_a_listener_on_loopback",
    "test_project_tree_and_tmp_are_out_of_reach",
    "test_raw_disks_and_kernel_knobs_are_out_of_reach",
    "test_root_child_holds_no_capability",
    "test_the_candidate_process_reads_nothing_of_its_judge_and_reaches_nothing_of_the_host",
]


def test_the_layer_set_says_user_namespace_and_travels_to_the_judge() -> None:
    assert USERNS.userns and USERNS.uid is None
    assert USERNS.unshare_prefix()[1:3] == ["--user", "--map-root-user"]
    assert Layers.from_json(USERNS.to_json()) == USERNS  # handed to the judge (LAYERS_VAR)
    assert json.loads(USERNS.to_json())["userns"] is True
    lines = {ln.split()[0]: ln for ln in report(USERNS)}
    assert "inside a user namespace" in lines["pid"] and "capability dropped" in lines["caps"]
