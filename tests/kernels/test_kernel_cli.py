"""`wb kernel check|bench` through the real CLI."""

import pytest


def test_check_passes_and_reports(cli):
    code, out, _ = cli("kernel", "check", "--quick")
    assert code == 0, out
    lines = out.strip().splitlines()
    assert lines[-1] == "PASS"
    transfer = next(line for line in lines if "transfer cases byte-exact" in line)
    good, total = transfer.split(": ")[1].split(" ")[0].split("/")
    assert good == total and int(total) > 50
    bug = next(line for line in lines if "c4_latent strides" in line)
    hits, cases = bug.split("mismatches > 0 in ")[1].split(" ")[0].split("/")
    assert hits == cases and int(cases) > 0
    # What the PASS does not cover is said above it: --quick's smaller cases, and on a machine without a CUDA
    # device the CUDA kernel itself (the reference was checked against the oracle), with the reason.
    assert any(line.strip().startswith("--quick:") for line in lines), out
    import torch

    if not torch.cuda.is_available():
        skipped = next((line for line in lines if "not checked: the CUDA kernel" in line), None)
        assert skipped is not None and "no CUDA device here" in skipped, out
        assert lines.index(skipped) < len(lines) - 1


def test_a_check_without_a_cuda_device_says_the_kernel_was_not_checked():
    import torch
    from wb_kernels.check import CheckReport, not_checked

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the kernel is checked")
    reasons = not_checked("auto", "reference")
    assert len(reasons) == 1 and reasons[0].startswith("the CUDA kernel: no CUDA device here: "), reasons
    assert not_checked("reference", "reference")[0].startswith("the CUDA kernel: --impl reference")
    assert not_checked("cuda", "cuda") == []
    rep = CheckReport(impl="reference", against="oracle", device="cpu", seed=0, quick=True,
                      not_checked=tuple(reasons))
    d = rep.as_dict()
    assert d["quick"] is True and d["not_checked"] == reasons
    assert any(line.startswith("  not checked: the CUDA kernel: no CUDA device here") for line in rep.summary())


def test_report_json_shape():
    from wb_kernels.check import CaseResult, CheckReport

    rep = CheckReport(impl="cuda", against="reference", device="x", seed=0,
                      cases=[CaseResult("transfer", "a", True, 0, 10),
                             CaseResult("buggy", "b", False, 3, 10)], bug_reproduced=(1, 1))
    d = rep.as_dict()
    assert d["ok"] is False and d["groups"]["buggy"] == {"cases": 1, "ok": 0}
    assert [f["name"] for f in d["failures"]] == ["b"]
    assert rep.summary()[-1] == "FAIL"


def test_bench_without_gpu_is_a_clear_error(cli):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the bench runs instead of refusing")
    code, _, err = cli("kernel", "bench", "--quick")
    assert code == 2
    assert "needs a CUDA device" in err and "Hint:" in err


def test_bad_variants(cli):
    code, _, err = cli("kernel", "bench", "--variants", "x")
    assert code == 2 and "--variants" in err


@pytest.mark.parametrize("value, bad", [("-1", "-1"), ("0,-3", "-3")])
def test_a_negative_variant_is_refused_before_the_device_is_looked_for(cli, value, bad):
    # Passed on to the kernel, which ran its default variant for a number it does not have and the bench
    # labelled that timing "v-1".
    code, out, err = cli("kernel", "bench", "--quick", "--variants", value)
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith(f"Error: --variants {value!r}: {bad} is not a variant number (they count from 0") \
        and "Traceback" not in err, err
    assert len(err.splitlines()) == 2, err


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_variants_value_is_refused_not_read_as_all(cli, value):
    # `--variants "$V"` with V unset timed the usual set silently, as if --variants had been left out.
    code, out, err = cli("kernel", "bench", "--quick", "--variants", value)
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith(f"Error: --variants {value!r}: names no variant") and "Traceback" not in err, err
    assert len(err.splitlines()) == 2, err


def test_the_variants_help_names_the_set_timed_without_it(cli):
    # It said "(default all)", but without --variants the bench times a fixed subset of the kernel's variants.
    from wb_kernels.bench import D2D_VARIANTS, HOST_VARIANTS

    code, out, err = cli("kernel", "bench", "--help")
    text = " ".join(out.split())
    assert code == 0 and "default all" not in text, text
    assert ",".join(map(str, D2D_VARIANTS)) in text and ",".join(map(str, HOST_VARIANTS)) in text, text


def test_a_variant_the_built_kernel_lacks_is_refused_naming_its_range():
    # Only the build knows how many variants the kernel has (kernels/cuda/transfer.cu): 99 of 25 was timed as
    # "v99", the kernel's default variant under a number it does not have.
    from wb_kernels.bench import chosen_variants

    from workbench.errors import BadInput

    names = [f"variant {i}" for i in range(25)]
    assert chosen_variants([0, 24], names) == [0, 24] and chosen_variants(None, names) is None
    with pytest.raises(BadInput) as exc:
        chosen_variants([0, 99], names)
    assert str(exc.value) == "--variants: 99 is not a variant of this kernel, which has 0 to 24"
    assert exc.value.where == "--variants" and exc.value.exit_code == 2


@pytest.mark.parametrize("impl", ["bogus", "CUDA", "cpu", ""])
def test_an_unknown_impl_is_refused_before_any_case_runs(cli, impl):
    # A mistyped --impl ran the reference against the oracle and said PASS, as if the named kernel was checked.
    code, out, err = cli("kernel", "check", "--quick", "--impl", impl)
    assert code == 2, (code, out, err)
    assert err.startswith("Error: --impl") and "auto, cuda, reference" in err and "Traceback" not in err
    assert out == ""


@pytest.mark.parametrize("layers", ["0", "-3"])
def test_layers_below_one_are_refused_before_the_device_is_looked_for(cli, layers):
    # Taken as given (no pool has fewer than one layer): here the missing device was all that was said of them.
    code, out, err = cli("kernel", "bench", "--quick", "--layers", layers)
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith(f"Error: --layers {layers}") and "Traceback" not in err, err


def test_impl_cuda_without_a_device_names_the_flag(cli):
    # `--json`'s error said where: null, as if nothing the user gave were at fault; --impl cuda is.
    import json

    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: --impl cuda runs")
    code, out, err = cli("kernel", "check", "--quick", "--impl", "cuda", "--json")
    assert code == 2, (code, out, err)
    e = json.loads(out)["error"]
    assert e["where"] == "--impl" and e["message"].startswith("no CUDA device here"), e


def test_mismatched_bytes_counts_every_differing_byte_and_none_of_an_equal_copy():
    # The check counts a case's bad bytes with it (compared whole first, counted only on a mismatch).
    import torch
    from wb_kernels.check import mismatched_bytes

    want = torch.arange(4 * 3 * 50, dtype=torch.int64).remainder(251).to(torch.uint8).reshape(4, 3, 50)
    got = want.clone()
    assert mismatched_bytes(got, want) == 0
    got[0, 0, 0] ^= 0xFF
    got[3, 2, 10:20] += 1
    assert mismatched_bytes(got, want) == 11 == mismatched_bytes(want, got)
    assert mismatched_bytes(want[:2], want[:2].clone()) == 0
    assert mismatched_bytes(torch.zeros(0, dtype=torch.uint8), torch.zeros(0, dtype=torch.uint8)) == 0
