"""Resource quantities as a user writes them in manifests, parsed exactly."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubesched.core.quantity import (
    QuantityError,
    format_quantity,
    format_resource_list,
    parse_quantity,
    parse_resource_list,
    to_scheduler_units,
)


@pytest.mark.parametrize(
    "text, exact",
    [
        ("0.5", Fraction(1, 2)),
        ("500m", Fraction(1, 2)),
        ("1Gi", 2**30),
        ("1e3", 1000),
        ("1E3", 1000),
        ("128974848", 128974848),
        ("1.5", Fraction(3, 2)),
        ("100Mi", 100 * 2**20),
        ("2k", 2000),
        ("1Ki", 1024),
        ("3M", 3_000_000),
        ("1E", 10**18),  # a lone E is the exa suffix, not an exponent
        ("12e-3", Fraction(12, 1000)),
        ("250n", Fraction(250, 10**9)),
        ("+7", 7),
        (2, 2),  # YAML gives numbers for `cpu: 2`
        (0.1, Fraction(1, 10)),  # and floats for `cpu: 0.1`: no binary rounding
    ],
)
def test_parse_quantity_is_exact(text, exact):
    assert parse_quantity(text) == exact


@pytest.mark.parametrize(
    "resource, text, units",
    [
        ("cpu", "0.5", 500),
        ("cpu", "500m", 500),
        ("cpu", "1.5", 1500),
        ("cpu", "2", 2000),
        ("cpu", "1e3", 1_000_000),
        ("cpu", 0.1, 100),
        ("cpu", "0.0001", 1),  # milli-CPU rounds up, as MilliValue() does
        ("memory", "1Gi", 1073741824),
        ("memory", "128974848", 128974848),
        ("memory", "100Mi", 104857600),
        ("memory", "2k", 2000),
        ("memory", "1.5", 2),  # bytes round up, as Value() does
        ("memory", "500m", 1),
        ("pods", "110", 110),
        ("nvidia.com/gpu", "2", 2),
        ("ephemeral-storage", "1e3", 1000),
    ],
)
def test_scheduler_units(resource, text, units):
    assert to_scheduler_units(resource, text) == units


@pytest.mark.parametrize(
    "bad", ["", "abc", "1.2.3", "1Gb", "1K", "1ki", "1mi", "--1", "Gi", "1e", "1 Gi", "0x10", True, None, [1]]
)
def test_bad_quantities_raise(bad):
    with pytest.raises(QuantityError, match="quantities must match the regular expression"):
        parse_quantity(bad)


def test_quantity_error_is_a_value_error():
    assert issubclass(QuantityError, ValueError)


def test_resource_list_error_names_the_field():
    with pytest.raises(QuantityError) as err:
        parse_resource_list({"cpu": "1", "memory": "lots"}, "spec.containers[0].resources.requests")
    assert str(err.value).startswith("spec.containers[0].resources.requests.memory: ")
    assert "'lots'" in str(err.value)


def test_resource_list_parses_every_entry():
    assert parse_resource_list({"cpu": "250m", "memory": "64Mi", "pods": 3}) == {
        "cpu": 250, "memory": 64 * 2**20, "pods": 3,
    }


@pytest.mark.parametrize(
    "resource, amount, text",
    [
        ("cpu", 2000, "2"),
        ("cpu", 1500, "1500m"),
        ("cpu", 0, "0"),
        ("memory", 2**30, "1Gi"),
        ("memory", 500 * 2**20, "500Mi"),
        ("memory", 1536 * 2**20, "1536Mi"),
        ("memory", 1000, "1000"),
        ("memory", 0, "0"),
    ],
)
def test_format_quantity(resource, amount, text):
    assert format_quantity(resource, amount) == text
    assert to_scheduler_units(resource, text) == amount


def test_format_resource_list_round_trips():
    parsed = parse_resource_list({"cpu": "1.25", "memory": "3Gi", "example.com/fpga": "4"})
    assert parse_resource_list(format_resource_list(parsed)) == parsed
