"""Controllers go by kube-controller-manager's names; a name kubesched does not know is refused."""

from __future__ import annotations

import pytest

from kubesched.controllers import CONTROLLERS
from kubesched.drivers.simulation import Simulation


def test_the_resource_claim_controller_has_upstream_s_name_as_key_and_as_event_source():
    assert CONTROLLERS["resourceclaim-controller"].name == "resourceclaim-controller"
    assert all(cls.name == name for name, cls in CONTROLLERS.items())


def test_options_for_an_unknown_controller_are_refused_by_name():
    with pytest.raises(KeyError, match="controller options: unknown controller 'resource-claim-controller'"):
        Simulation(controller_options={"resource-claim-controller": {}})
