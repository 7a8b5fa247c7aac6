"""calc.units: the parser for what people type, and `fmt`, the one place a figure becomes text."""

from __future__ import annotations

from fractions import Fraction

import pytest

from calc.units import GB, GiB, InputError, MiB, fmt, parse_count, parse_fraction, parse_memory, parse_size, parse_tokens, shown, to_gib


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10e9", 10 * 10**9),
        (10000000000, 10 * 10**9),
        ("10000000000", 10 * 10**9),
        ("10 GB", 10 * GB),
        ("10GB", 10 * GB),
        ("8501810176 B", 8501810176),
        ("10,000,000,000", 10 * 10**9),
        ("10_000_000_000", 10 * 10**9),
        ("  16e9 B ", 16 * 10**9),
        ("1.5 KiB", 1536),
        ("68501 MiB", 68501 * MiB),
        ("1024 TiB", 2**50),
        (0, 0),
    ],
)
def test_parse_size_accepts(text, expected) -> None:
    assert parse_size(text) == expected


def test_parse_size_gib_is_exact_to_the_byte() -> None:
    # 9.31 x 2^30 = 9,996,536,381.44 B: rounded half up to the whole byte
    assert parse_size("9.31 GiB") == 9996536381
    assert parse_size("9.31 GiB") == round(Fraction("9.31") * GiB)
    assert parse_size("0.5 B") == 1  # half up, not to even


def test_parse_size_is_the_exact_value_rounded_once() -> None:
    """Bytes are worked in whole numbers (numerator over a power of ten), as the exact fraction
    gives them: rounded half up once, after the unit, with the bounds on the exact value."""
    cases = ["2.5 B", "0.0005 KiB", "1e-1 KiB", "1.5e-3 MB", "2.25e-1 kB", "7.22e9", "0.99999 GiB", "1125899906842623.5", "3.3333e3 B"]
    for text in cases:
        number, _, unit = text.partition(" ")
        exact = Fraction(number) * {"": 1, "B": 1, "KiB": 2**10, "MB": 10**6, "kB": 10**3, "GiB": GiB}[unit]
        assert parse_size(text) == int(exact + Fraction(1, 2)), text  # floor(x + 1/2): half up
    assert parse_size("1125899906842624") == 2**50 and parse_size("1 TiB") == 2**40
    for text, message in (
        ("1125899906842624.5", "below 1 PiB"),
        ("0.49999 B", "below one byte"),
        ("0.0004 KiB", "below one byte"),
        ("1.5e-30", "below one byte"),
    ):
        with pytest.raises(InputError, match=message):
            parse_size(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "pin: found nothing, expected a size"),
        ("   ", "pin: found nothing, expected a size"),
        ("abc", "pin: found 'abc', expected a size such as 10e9"),
        ("-5 GB", "pin: found '-5 GB', expected a size of zero or more bytes"),
        ("nan", "pin: found 'nan', expected a size such as"),
        ("inf", "pin: found 'inf', expected a size such as"),
        ("1e400", "pin: found '1e400', expected a memory size below 1 PiB"),
        ("1025 TiB", "expected a memory size below 1 PiB"),
        ("10 XB", "pin: found unit 'XB' in '10 XB', expected one of B, KB"),
        ("79.29 GiG", "found unit 'GiG'"),
        ("80G", "pin: found unit 'G' in '80G', expected GiB or GB: a bare G is a power of two in one tool and of ten in another"),
        ("512 m", "pin: found unit 'm' in '512 m', expected MiB or MB"),
        ("10 GB GB", "pin: found '10 GB GB'"),
        (True, "pin: found True, expected a size"),
        (None, "pin: found None, expected a size"),
        (1.5, "pin: found 1.5, expected a size"),
    ],
)
def test_parse_size_rejects_with_a_message(text, message) -> None:
    with pytest.raises(InputError) as error:
        parse_size(text, "pin")
    assert message in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a number without its unit: the size meant, in GiB, where the number reads as one (nvidia-smi's 24 GiB card)
        ("120", "total: found '120', 120 B, expected at least 1 MiB, such as '120 GiB' (a number without a unit is bytes)"),
        ("1.2", "total: found '1.2', 1 B, expected at least 1 MiB, such as '1.2 GiB' (a number without a unit is bytes)"),
        # above 2 TiB in GiB: the figure in MiB, as nvidia-smi prints it (a box's '120,919 MiB' with its unit left out)
        ("120919", "total: found '120919', 120,919 B, expected at least 1 MiB, such as '120919 MiB' (a number without a unit is bytes)"),
        ("120,919", "total: found '120,919', 120,919 B, expected at least 1 MiB, such as '120,919 MiB' (a number without a unit is bytes)"),
        # 1e6 GiB would be refused in turn as no card's total
        ("1e6", "total: found '1e6', 1,000,000 B, expected at least 1 MiB, such as '24 GiB' (a number without a unit is bytes)"),
        # a unit typed: nothing was left out, the size is only too small
        ("0.5 MiB", "total: found '0.5 MiB', 524,288 B, expected at least 1 MiB, such as '24 GiB'"),
        ("512KiB", "total: found '512KiB', 524,288 B, expected at least 1 MiB, such as '24 GiB'"),
    ],
)
def test_parse_memory_refuses_a_size_below_1_mib_saying_what_was_meant(text, message) -> None:
    with pytest.raises(InputError) as error:
        parse_memory(text, "total")
    assert str(error.value) == message


def test_parse_memory_takes_zero_and_a_reading() -> None:
    assert [parse_memory(t) for t in ("0", "0 GiB", "1 MiB", "81559MiB", "1,048,576")] == [0, 0, MiB, 81559 * MiB, MiB]


def test_parse_count() -> None:
    assert parse_count("131,072") == parse_count("131_072") == parse_count(131072) == 131072
    with pytest.raises(InputError, match="seats: found 0, expected at least 1"):
        parse_count("0", "seats", 1)
    with pytest.raises(InputError, match=r"found '1\.5', expected a whole number"):
        parse_count("1.5")
    with pytest.raises(InputError, match="found nothing"):
        parse_count("")
    with pytest.raises(InputError, match="expected a number below"):
        parse_count(str(10**13))


@pytest.mark.parametrize(
    ("text", "expected"),
    [("32k", 32_000), ("32K", 32_768), ("1M", 1_048_576), ("1m", 1_000_000), ("25.6k", 25_600), ("131072", 131_072), ("131,072", 131_072), (" 8k ", 8_000)],
)
def test_parse_tokens_reads_lengths_as_vllm_does(text: str, expected: int) -> None:
    """vllm/utils/argparse_utils.py human_readable_int (0.20.0 to 0.33.0): k m g t decimal, K M G T binary."""
    assert parse_tokens(text, "--max-model-len", 1) == expected


def test_parse_tokens_refuses_what_vllm_refuses() -> None:
    with pytest.raises(InputError, match=r"--max-model-len: found '1\.5K', expected a whole number before K \(binary\), or 1\.5k \(decimal\)"):
        parse_tokens("1.5K", "--max-model-len", 1)
    with pytest.raises(InputError, match="--max-model-len: found 'k', expected a whole number"):
        parse_tokens("k", "--max-model-len", 1)
    with pytest.raises(InputError, match=r"found '99T' \(108,851,651,149,824\), expected a whole number from 1 to 1e\+12"):
        parse_tokens("99T", "--max-model-len", 1)
    with pytest.raises(InputError, match=r"found '0k' \(0\), expected a whole number from 1"):
        parse_tokens("0k", "--max-model-len", 1)


def test_parse_fraction() -> None:
    assert parse_fraction("0.92") == Fraction(23, 25)
    assert parse_fraction("1") == 1
    for bad in ("0", "1.01", "-0.5", "abc", "nan", ""):
        with pytest.raises(InputError, match="--gpu-memory-utilization"):
            parse_fraction(bad, "--gpu-memory-utilization")


# --- fmt ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "unit", "digits", "down", "text"),
    [
        (10 * 10**9, "GiB", 2, False, "9.31 GiB"),
        (16 * 10**9, "GiB", 2, False, "14.90 GiB"),
        (102 * GiB, "GiB", 1, False, "102.0 GiB"),
        (10 * 10**9, "GB", 1, False, "10.0 GB"),
        (128 * 10**9, "GB", 0, False, "128 GB"),
        (120919 * MiB, "MiB", 0, False, "120,919 MiB"),
        (10 * 10**9, "e9", 2, False, "10e9 B"),
        (10 * 10**9, "e9", 0, False, "10e9 B"),
        (20 * 10**9, "e9", 0, False, "20e9 B"),
        (100 * 10**9, "e9", 1, False, "100e9 B"),
        (14_830_000_000, "e9", 1, False, "14.8e9 B"),
        (9_398_704_579, "e9", 2, True, "9.39e9 B"),
        (9_398_704_579, "e9", 1, False, "9.4e9 B"),
        (9_398_704_579, "e9", 0, True, "9e9 B"),
        (8501810176, "B", 0, False, "8,501,810,176 B"),
        (Fraction(1708119), "tokens", 0, False, "1,708,119 tokens"),
        (Fraction(10**10, 5987), "M tokens", 2, False, "1.67 M tokens"),
        (Fraction(16 * 10**9, 13952), "M tokens", 2, False, "1.14 M tokens"),  # 1.1468 M: whole tokens floor
        (Fraction(18178182, 100), "tokens", 0, False, "181,781 tokens"),  # a pool holds no part of a token
        (Fraction(3000000002, 3), "tokens", 0, False, "1,000,000,000 tokens"),
        (Fraction(10**6), "x", 2, False, "1,000,000.00x"),  # a ratio is grouped like any figure
        (Fraction(181777, 131072), "x", 2, False, "1.39x"),
        (Fraction(9, 10), "%", 0, False, "90 %"),
        (Fraction(9, 10), "%", 1, False, "90.0 %"),
        (Fraction(5, 1000), "%", 1, False, "0.5 %"),
        (Fraction(49, 50), "fraction", 2, False, "0.98"),
        (Fraction(357), "s", 0, False, "357 s"),
        (Fraction(1234567, 2), "count", 0, False, "617,284"),
    ],
)
def test_fmt(value, unit, digits, down, text) -> None:
    assert fmt(value, unit, digits, down) == text


@pytest.mark.parametrize(
    ("value", "digits", "half_up", "down"),
    [
        (Fraction("0.125"), 2, "0.13", "0.12"),  # half up, not to even
        (Fraction("0.135"), 2, "0.14", "0.13"),
        (Fraction("2.5"), 0, "3", "2"),
        (Fraction("3.5"), 0, "4", "3"),
        (Fraction("120.648"), 1, "120.6", "120.6"),
        (Fraction("120.65"), 1, "120.7", "120.6"),
        (Fraction("9.398"), 2, "9.40", "9.39"),
        (Fraction(1, 3), 4, "0.3333", "0.3333"),
        (Fraction(2, 3), 4, "0.6667", "0.6666"),
    ],
)
def test_fmt_rounds_half_up_or_down(value, digits, half_up, down) -> None:
    assert fmt(value, "plain", digits) == half_up
    assert fmt(value, "plain", digits, down=True) == down


def test_fmt_is_exact_on_large_byte_counts() -> None:
    # one byte under 13.815 GiB still rounds down at two decimals, one byte over rounds up
    exact = Fraction("13.815") * GiB
    assert fmt(int(exact), "GiB") == "13.81 GiB"
    assert fmt(int(exact) + 1, "GiB") == "13.82 GiB"


def test_fmt_accepts_int_float_and_fraction() -> None:
    assert fmt(0.5, "plain", 1) == fmt(Fraction(1, 2), "plain", 1) == "0.5"
    assert fmt(0, "GiB") == "0.00 GiB"


def test_tokens_round_up_only_when_asked() -> None:
    """A count of tokens is floored unless the figure is a least need (up)."""
    assert fmt(Fraction(5, 2), "tokens", up=True) == "3 tokens"
    assert shown(Fraction(5, 2), "tokens") == 2 and shown(Fraction(5, 2), "tokens", up=True) == 3


def test_fmt_unknown_unit() -> None:
    with pytest.raises(InputError, match="fmt: found unit 'furlongs', expected one of GiB"):
        fmt(1, "furlongs")


def test_to_gib_is_exact() -> None:
    assert to_gib(GiB) == 1
    assert to_gib(10**10) == Fraction(10**10, 2**30)


def test_up_rounds_a_minimum_so_the_printed_pin_still_holds_it() -> None:
    one_context = 7_210_430_127  # smallest pin for one 131,072-token context at the measured cost
    assert fmt(one_context, "e9", 2) == "7.21e9 B"  # nearest: below the minimum
    assert fmt(one_context, "e9", 2, up=True) == "7.22e9 B"
    assert parse_size("7.22e9") >= one_context
    assert fmt(7_220_000_000, "e9", 2, up=True) == "7.22e9 B"  # already on the step: unchanged
    assert fmt(Fraction(-3, 2), "plain", 0) == "-2"  # half away from zero


def test_typed_units_take_any_case_and_the_short_binary_forms() -> None:
    """A unit read in any case ('100 gib', '80 gb'), and Ki, Mi, Gi, Ti as free -h and Kubernetes
    print them ('115Gi'): each the unit it spells, never the other power."""
    assert parse_size("100 gib") == parse_size("100 GiB") == 100 * GiB
    assert parse_size("80 gb") == parse_size("80 GB") == 80 * 10**9
    assert parse_size("115Gi") == 115 * GiB and parse_size("512 mi") == 512 * 2**20 and parse_size("2 ti") == 2 * 2**40
    assert parse_size("3 kb") == parse_size("3 KB") == 3000 and parse_size("7 b") == 7
