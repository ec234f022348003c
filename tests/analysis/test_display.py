"""How a rate, a difference of rates and a value read wherever wb prints them (workbench.analysis.display)."""

from __future__ import annotations

from workbench.analysis import display


def test_a_small_rate_never_reads_as_zero_and_an_intervals_ends_never_read_alike():
    # One decimal of percent wrote 0.00012 as "0.0%" and an interval [0.00012, 0.00034] as [0.0%, 0.0%]: the ends
    # were kept apart from a region's bounds only. They get the decimals that tell them apart, and no more.
    assert display.rate(0.00012) == "0.01%" and display.rate(4e-7) == "0.00004%"
    assert display.rate(0.99999) == "99.999%"  # short of 1, as 0.00012 is above 0
    assert display.rate_interval((0.00012, 0.00034)) == "[0.01%, 0.03%]"
    assert display.rate_interval((0.00012, 0.00014)) == "[0.012%, 0.014%]"
    assert display.rate_interval((0.12341, 0.12344)) == "[12.341%, 12.344%]"
    assert display.rate_interval((0.0, 0.00004)) == "[0.000%, 0.004%]"  # both ends at the decimals that part them
    assert display.points(0.00012) == "+0.01 points"
    assert display.points_interval((-0.00012, 0.00034)) == "[-0.01, +0.03] points"
    # Ordinary rates, an exact 0 or 1, and an end kept apart from a region's bound read as they did.
    assert display.rate(0.175) == "17.5%" and display.rate(0.0) == "0.0%" and display.rate(1.0) == "100.0%"
    assert display.rate_interval((0.107, 0.273)) == "[10.7%, 27.3%]"
    assert display.rate_interval((0.0202, 0.044), (0.02,)) == "[2.02%, 4.4%]"
    assert display.points(0.0) == "0.0 points" and display.points_interval((0.0003, 0.074), (0.0,)) == \
        "[+0.03, +7.4] points"


def test_a_rate_beyond_the_last_decimal_still_reads_apart_from_0_and_100_percent():
    # At its 8-decimal cap rate(1e-12) read "0.00000000%" and rate(1 - 1e-11) "100.00000000%": a non-zero rate read 0.
    assert display.rate(1e-12) == "<0.00000001%" and display.rate(1 - 1e-11) == ">99.99999999%"
    assert display.rate_ends((0.0, 1e-12)) == ("0.00000000%", "<0.00000001%")  # a chart's tooltips, as the table
    assert display.rate_interval((1e-12, 0.3)) == "[<0.00000001%, 30.0%]"
    assert display.rate(0.0) == "0.0%" and display.rate(1.0) == "100.0%" and display.rate(1e-10) == "0.00000001%"
    assert display.points(1e-12) == ">0.00000000 points" and display.points(-1e-12) == "<0.00000000 points"
    assert display.rate_interval((0.02 + 1e-12, 0.05), (0.02,)) == "[>2.00000000%, 5.0%]"  # above the bound


def test_a_value_and_a_noise_floor_read_as_the_rest_do():
    # display.value wrote f"{x:g}" (1234567 read 1.23457e+06) and noise_floor one decimal (a floor of 0.0004 read
    # "±0.0 points", as if two identical arms could not differ at all).
    assert display.value(None, "aborts", 1234567) == "1,234,567" and display.value(None, "wall_s", 346.3) == "346.3"
    assert display.value(None, "wall_s", 1234.56) == "1,234.56"
    assert display.noise_floor(0.0004) == "±0.04 points" and display.noise_floor(0.114) == "±11.4 points"
    assert display.noise_floor(-0.00002) == "±0.002 points" and display.noise_floor(0.0) == "±0.0 points"
    assert display.noise_floor(1e-12) == "±<0.00000001 points"


def test_a_p_value_never_reads_0():
    # `:.2g` wrote a p-value that underflowed a float as "0" (Fisher p = 0 over 12,000 sessions a run).
    assert display.p_value(0.0) == "< 1e-300" and display.p_is(0.0) == "< 1e-300"
    assert display.p_value(2.7e-36) == "2.7e-36" and display.p_is(2.7e-36) == "= 2.7e-36"
    assert display.p_value(1.0) == "1" and display.p_value(0.0123) == "0.012"
