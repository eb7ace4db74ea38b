"""Method discovery and typed options: the built-in methods are found by module, a copy
of a method module under a new name is found and usable by name with no other edit, a
module that fails to import or breaks the contract is reported (never skipped), and
unknown methods and option keys fail with the known names."""

from __future__ import annotations

import importlib
import json
from dataclasses import FrozenInstanceError, dataclass, fields
from pathlib import Path
from typing import Literal

import mlflow
import pytest

from mlflow_metacompress.distill import ArchSpec, get_method, list_methods
from mlflow_metacompress.distill import methods as methods_pkg
from mlflow_metacompress.distill.options import MethodOptions, coerce, parse_options
from tests.support.distill import QUICK_FIT, add_method_module

BUILT_IN = {"compressor", "avatar", "morph", "fidelity"}


def copy_of(method: str, new_name: str) -> str:
    """The source of built-in ``method``'s module with its NAME changed (the only edit)."""
    source = (Path(methods_pkg.__file__).parent / f"{method}.py").read_text()
    assert source.count(f'NAME = "{method}"') == 1  # the name is declared once
    return source.replace(f'NAME = "{method}"', f'NAME = "{new_name}"')


def test_built_in_methods_are_discovered_with_frozen_typed_options():
    names = list_methods()
    assert BUILT_IN <= set(names) and names == sorted(names)
    for name in names:
        method = get_method(name)
        module = importlib.import_module(method.module)
        assert module.NAME == name and method.options is module.Options and method.run is module.run
        defaults = method.parse({})
        assert defaults == method.options()
        with pytest.raises(FrozenInstanceError):
            defaults.lr = 1.0  # type: ignore[misc]  # frozen: the test expects the refusal
        assert {f.name for f in fields(method.options)} >= {"lr"}


def test_existing_option_names_keep_working():
    assert {"population", "generations", "temperature", "lr", "tolerance", "max_vocab"} <= set(
        get_method("compressor").options.__dataclass_fields__
    )
    search = {
        "population",
        "generations",
        "probes",
        "probe_steps",
        "probe_rows",
        "probe_valid",
        "size_lower",
        "max_vocab",
        "max_lengths",
        "lr",
        "temperature",
    }
    assert search | {"energy_samples"} <= set(get_method("avatar").options.__dataclass_fields__)
    assert search | {"cosine_weight", "language"} <= set(get_method("morph").options.__dataclass_fields__)
    assert search | {
        "arch",
        "head_dim",
        "ffn_ratio",
        "max_layers",
        "min_vocab",
        "student_config",
        "transforms",
        "variants_per_step",
        "select",
        "language",
        "variant_kd",
        "align",
        "align_kind",
        "confidence",
        "confidence_threshold",
        "consistency",
    } <= set(get_method("fidelity").options.__dataclass_fields__)


def test_a_copied_method_module_is_listed_and_usable_by_name(tmp_path, monkeypatch, capsys):
    from mlflow_metacompress.cli import main
    from mlflow_metacompress.pipeline.stages import resolve_methods

    add_method_module(tmp_path, monkeypatch, "compressor_copy", copy_of("compressor", "compressor_copy"))
    assert "compressor_copy" in list_methods() and BUILT_IN <= set(list_methods())
    method = get_method("compressor_copy")
    assert method.module == "mlflow_metacompress.distill.methods.compressor_copy"
    assert method.parse({"population": "4"}).population == 4
    assert resolve_methods("compressor,compressor_copy") == ["compressor", "compressor_copy"]  # -P methods=...
    assert resolve_methods("all") == list_methods()
    assert main(["distill", "methods"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["compressor_copy"]["options"]["population"] == 20 and BUILT_IN <= set(listed)


@pytest.mark.slow
def test_a_copied_method_trains_and_registers_through_the_cli(tracking, tmp_path, monkeypatch, capsys):
    from mlflow_metacompress.cli import main
    from tests.support.models import tiny_teacher

    add_method_module(tmp_path, monkeypatch, "compressor_copy", copy_of("compressor", "compressor_copy"))
    data, teacher = tiny_teacher(tmp_path)
    capsys.readouterr()
    rc = main(
        [
            "distill",
            "student",
            "--method",
            "compressor_copy",
            "--data-dir",
            str(data),
            "--teacher",
            teacher,
            "--size-mb",
            "0.1",
            "--population",
            "4",
            "--generations",
            "2",
            *QUICK_FIT,
            "--no-progress",
            "--option",
            "tolerance=0.5",
        ]
    )
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model_uri"] == "models:/metacompress-compressor_copy/1"
    assert result["config"]["method"] == "compressor_copy"
    tags = mlflow.MlflowClient().get_model_version("metacompress-compressor_copy", "1").tags
    assert tags["metacompress.method"] == "compressor_copy" and tags["metacompress.teacher"] == teacher
    run = mlflow.MlflowClient().get_run(result["run_id"])
    assert run.data.params["opt.population"] == "4" and run.data.params["opt.tolerance"] == "0.5"
    assert run.data.params["opt.temperature"] == "1.0"  # defaults are logged too
    assert "best_val_acc" in run.data.metrics  # compressor monitors validation accuracy


def test_unknown_methods_and_options_fail_with_the_known_names(capsys):
    from mlflow_metacompress.cli import main

    with pytest.raises(ValueError, match=r"unknown distillation method 'nope'; known methods: \[.*'compressor'.*\]"):
        get_method("nope")
    # the CLI refuses both before reading any data (the data folder does not exist)
    common = ["distill", "student", "--teacher", "models:/t/1", "--data-dir", "/nonexistent", "--no-progress"]
    assert main([*common, "--method", "nope"]) == 2
    assert "unknown distillation method 'nope'; known methods: [" in capsys.readouterr().err
    assert main([*common, "--method", "avatar", "--option", "probs=3"]) == 2
    err = capsys.readouterr().err
    assert "unknown option(s) ['probs'] of method 'avatar'" in err and "'probes'" in err
    assert main([*common, "--method", "compressor", "--option", "population=many"]) == 2
    assert "option population='many' of method 'compressor': expected an integer" in capsys.readouterr().err
    assert main([*common, "--method", "compressor", "--option", "energy_samples=3"]) == 2  # avatar's, not compressor's
    assert "unknown option(s) ['energy_samples'] of method 'compressor'" in capsys.readouterr().err


def test_a_module_that_fails_to_import_is_reported_not_skipped(tmp_path, monkeypatch):
    add_method_module(tmp_path, monkeypatch, "typo_method", "import no_such_package_xyz\nNAME = 'typo'\n")
    with pytest.raises(ModuleNotFoundError, match="no_such_package_xyz"):
        list_methods()
    with pytest.raises(ModuleNotFoundError):
        get_method("compressor")  # discovery is all or nothing


def test_a_module_breaking_the_contract_is_named(tmp_path, monkeypatch):
    add_method_module(tmp_path, monkeypatch, "half_method", "NAME = 'half'\n\ndef run(ctx, options):\n    pass\n")
    with pytest.raises(TypeError, match=r"methods\.half_method: Options must be a frozen dataclass"):
        list_methods()


def test_two_modules_declaring_one_name_are_refused(tmp_path, monkeypatch):
    add_method_module(tmp_path, monkeypatch, "second_compressor", copy_of("compressor", "compressor"))
    with pytest.raises(
        ValueError, match="'compressor' is declared by both .*methods.compressor and .*second_compressor"
    ):
        list_methods()


@dataclass(frozen=True)
class _Opts(MethodOptions):
    flag: bool = False
    count: int = 1
    names: tuple[str, ...] | None = None
    mode: Literal["a", "b"] = "a"
    arch: ArchSpec | None = None
    label: str | None = None


def test_option_values_are_converted_to_the_field_types():
    o = parse_options(
        _Opts,
        {
            "flag": "true",
            "count": "3",
            "names": ["x", "y"],
            "mode": "b",
            "lr": 1,
            "arch": {
                "vocab_size": 1000,
                "num_hidden_layers": 1,
                "hidden_size": 16,
                "num_attention_heads": 1,
                "intermediate_size": 32,
            },
            "label": "None",
        },
    )
    assert o == _Opts(lr=1.0, flag=True, count=3, names=("x", "y"), mode="b", arch=ArchSpec(1000, 1, 16, 1, 32))
    assert isinstance(o.lr, float) and o.label is None
    assert parse_options(_Opts, {"names": "x, y,", "count": 4.0}).names == ("x", "y")
    assert coerce("0", bool) is False and coerce(2, float) == 2.0
    for key, value, message in [
        ("count", True, "expected an integer, got a boolean"),
        ("count", "2.5", "expected an integer"),
        ("flag", "maybe", "expected a boolean"),
        ("mode", "c", r"expected one of \['a', 'b'\]"),
        ("lr", "fast", "expected a number"),
        ("label", 3, "expected a string"),
    ]:
        with pytest.raises(ValueError, match=f"option {key}=.*: {message}"):
            parse_options(_Opts, {key: value})
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['colour', 'size'\]; known options: \["):
        parse_options(_Opts, {"colour": 1, "size": 2, "count": 1})
