"""Go's math/rand in Python, against values Go itself published.

Sources of the expected values (none computed with kubesched):
- golang/go src/math/rand/regress_test.go: every method of ``New(NewSource(0))``,
  reseeded with 0 before each method, 20 calls with arguments cycling through
  fixed lists (``Uint64`` from the version of the test that has it);
- golang/go src/math/rand/example_test.go: ``Example`` (``Seed(42)``, one
  ``Intn(20)``), ``ExamplePerm``, ``ExampleShuffle`` and
  ``ExampleShuffle_slicesInUnison`` (which continue on the same global source),
  ``ExampleIntn`` (``Seed(86)``) and ``Example_rand`` (``NewSource(99)``);
- the global source of every Go program before Go 1.20 (seeded with 1):
  ``rand.Int()`` printed 5577006791947779410, 8674665223082153551, ...
"""

from __future__ import annotations

import random
import struct

import pytest

from kubesched.trace.gorand import COOKED, GoRand

INT32S = [1, 10, 32, 1 << 20, (1 << 20) + 1, 1000000000, 1 << 30, (1 << 31) - 2, (1 << 31) - 1]
INT64S = INT32S + [1000000000000000000, 1 << 60, (1 << 63) - 2, (1 << 63) - 1]


def regress(method: str, args: list[int] | None = None) -> list:
    """What regress_test.go does for one method: 20 calls after Seed(0), arguments cycling."""
    rng = GoRand(0)
    call = getattr(rng, method)
    return [call(args[i % len(args)]) if args else call() for i in range(20)]


def test_seed_1_gives_the_int_sequence_every_go_program_printed_before_go_1_20():
    rng = GoRand(1)
    assert [rng.int_() for _ in range(5)] == [
        5577006791947779410, 8674665223082153551, 6129484611666145821, 4037200794235010051, 3916589616287113937]


def test_regress_golden_int63_uint64_uint32_float64():
    assert regress("int63")[:8] == [
        8717895732742165505, 2259404117704393152, 6050128673802995827, 501233450539197794,
        3390393562759376202, 2669985732393126063, 1774932891286980153, 6044372234677422456]
    # the top bit comes from the cooked table's sign: Uint64 differs from Int63 exactly there
    assert regress("uint64") == [
        8717895732742165505, 2259404117704393152, 6050128673802995827, 9724605487393973602,
        12613765599614152010, 11893357769247901871, 1774932891286980153, 15267744271532198264,
        17498302081433670737, 1543572285742637646, 11885104867954719224, 17548432336275752516,
        7837839688282259259, 2518412263346885298, 5617773211005988520, 11562935753659892057,
        16368296284793757383, 161231572858529631, 16482847956365694147, 16596477517051940556]
    assert regress("uint32")[:6] == [4059586549, 1052117029, 2817310706, 233405013, 1578775030, 1243308993]
    assert regress("int31")[-3:] == [37539650, 1690228450, 1716684894]
    assert regress("float64")[:4] == [0.9451961492941164, 0.24496508529377975, 0.6559562651954052, 0.05434383959970039]


def test_regress_golden_bounded_draws():
    assert regress("int31n", INT32S) == [
        0, 4, 25, 310570, 857611, 621654496, 413258767, 1407315077, 1926657288,
        0, 8, 27, 367019, 209005, 307989752, 544722126, 1663557311, 37539650, 0, 4]
    assert regress("int63n", INT64S) == [
        0, 2, 19, 959842, 688912, 393126063, 89212473, 834026388, 1577188963,
        543572285742637646, 355889821886249464, 8325060299420976708, 7837839688282259259,
        0, 0, 25, 679623, 882178, 510918339, 782454476]
    assert regress("intn", INT64S) == [
        0, 4, 25, 310570, 857611, 621654496, 413258767, 1407315077, 1926657288,
        543572285742637646, 355889821886249464, 8325060299420976708, 7837839688282259259,
        0, 2, 14, 515775, 839455, 690228450, 642943070]


def test_regress_golden_perm():
    assert regress("perm", [0, 1, 5, 8, 9, 10, 16])[:9] == [
        [], [0], [0, 4, 1, 3, 2], [3, 1, 0, 4, 7, 5, 2, 6], [5, 0, 3, 6, 7, 4, 2, 1, 8],
        [4, 5, 0, 2, 6, 9, 3, 1, 8, 7], [14, 2, 0, 8, 3, 5, 13, 12, 1, 4, 6, 7, 11, 9, 15, 10],
        [], [0]]


def test_the_package_examples_on_the_global_source():
    rng = GoRand(42)
    assert rng.intn(20) == 5  # "Magic 8-Ball says: As I see it yes", the sixth answer
    assert sorted(rng.perm(3)) == [0, 1, 2]  # ExamplePerm: unordered output
    words = "ink runs from the corners of my mouth".split()
    rng.shuffle(words)
    assert words == ["mouth", "my", "the", "of", "runs", "corners", "from", "ink"]
    numbers, letters = list("12345"), list("ABCDE")
    order = list(range(5))
    rng.shuffle(order)
    assert [f"{letters[i]}: {numbers[i]}" for i in order] == ["C: 3", "D: 4", "A: 1", "E: 5", "B: 2"]

    rng = GoRand(86)
    assert [rng.intn(100) for _ in range(3)] == [42, 76, 30]

    rng = GoRand(99)  # Example_rand: Float32 is float32(Float64()), then Float64
    as_float32 = [struct.unpack("f", struct.pack("f", rng.float64()))[0] for _ in range(3)]
    assert [f"{value:.7g}" for value in as_float32] == ["0.2635776", "0.6358173", "0.6718283"]
    assert [rng.float64() for _ in range(3)] == [0.628605430454327, 0.4504798828572669, 0.9562755949377957]


def test_seeds_equal_mod_2_31_minus_1_give_the_same_stream_and_0_is_go_s_fixed_seed():
    def first(seed: int) -> list[int]:
        rng = GoRand(seed)
        return [rng.int63() for _ in range(3)]

    assert first(5) == first(5 + (1 << 31) - 1) == first(5 - ((1 << 31) - 1))
    assert first(0) == first(89482311) != first(1)
    assert len(COOKED) == 607


def test_a_python_generator_drawing_go_s_values():
    rng, twin = GoRand(7), GoRand(7)
    assert isinstance(rng, random.Random)
    assert [rng.randrange(1000) for _ in range(5)] == [twin.intn(1000) for _ in range(5)]
    assert rng.randrange(10, 20) == 10 + twin.intn(10)
    assert rng.randrange(20, 10, -3) == 20 - 3 * twin.intn(4)
    assert rng.choice("abcdef") == "abcdef"[twin.intn(6)]
    assert rng.random() == twin.float64()
    assert rng.getrandbits(70) == (twin.uint64() | twin.uint64() << 64) & ((1 << 70) - 1)
    assert rng.draws == twin.draws == 11


def test_state_can_be_kept_skipped_and_restored():
    rng = GoRand(42)
    rng.int_()
    kept = rng.getstate()
    ahead = [rng.int63() for _ in range(3)]
    rng.setstate(kept)
    assert [rng.int63() for _ in range(3)] == ahead

    skipped = GoRand(42)
    skipped.advance(4)
    assert skipped.draws == rng.draws == 4 and skipped.int63() == rng.int63()


@pytest.mark.parametrize("call", [
    lambda r: r.intn(0), lambda r: r.int31n(-1), lambda r: r.int31n(1 << 31), lambda r: r.int63n(0),
    lambda r: r.perm(-1), lambda r: r.randrange(0), lambda r: r.randrange(5, 5), lambda r: r.randrange(0, 5, 0),
])
def test_bounds_go_refuses_raise_value_error(call):
    with pytest.raises(ValueError):
        call(GoRand(1))


def test_seeds_outside_int64_are_refused():
    with pytest.raises(ValueError, match="int64"):
        GoRand(1 << 63)
    with pytest.raises(TypeError, match="integer"):
        GoRand(None)  # type: ignore[arg-type]
    with pytest.raises(IndexError):
        GoRand(1).choice([])
