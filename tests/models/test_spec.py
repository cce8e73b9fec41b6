"""The one model description (biascore.models.spec.ModelSpec) answers every name a model has: what the dashboard
loads for a name it offers, how announced runs compare models, how a served model is named where it is refused."""
from __future__ import annotations

import pickle

from biascore.methods import get
from biascore.models.handle import ModelHandle
from biascore.models.spec import ModelSpec
from biascore.runs.announce import run_tag


def test_the_dashboard_loads_a_served_label_by_its_url_and_any_other_name_as_itself(monkeypatch):
    monkeypatch.setenv("BIASCORE_MODELS", "smollm2-135m,llama=served:http://gpu:8000/v1#meta/Llama")
    served = ModelSpec.configured("llama")
    assert (served.name, served.label, served.served) == ("served:http://gpu:8000/v1#meta/Llama", "llama", True)
    plain = ModelSpec.configured("smollm2-135m")
    assert (plain.name, plain.label, plain.served) == ("smollm2-135m", "smollm2-135m", False)


def test_runs_compare_an_alias_by_the_model_it_names_and_a_path_resolved(tmp_path, monkeypatch):
    assert ModelSpec("smollm2").run_name == ModelSpec("smollm2-135m").run_name == "smollm2-135m"
    (tmp_path / "ckpt").mkdir()
    monkeypatch.chdir(tmp_path)
    assert ModelSpec("./ckpt").run_name == ModelSpec(str(tmp_path / "ckpt")).run_name == str(tmp_path / "ckpt")
    assert ModelSpec("org/not-here").run_name == "org/not-here"  # a hub id as given
    method = get("attribution")
    options = method.Options.build()
    tag = run_tag(method, ModelSpec("./ckpt"), "demo", None, options)
    assert tag == run_tag(method, str(tmp_path / "ckpt"), "demo", None, options)  # a name: its spec's run name
    assert tag != run_tag(method, "smollm2", "demo", None, options)


def test_a_served_model_is_refused_by_its_label_never_its_url():
    url = "served:http://127.0.0.1:9/v1#meta/Llama"
    assert ModelHandle(ModelSpec(url, label="llama")).served_label == "llama"
    assert ModelHandle(ModelSpec(url)).served_label == url  # no label: named as given
    assert ModelHandle("smollm2-135m").served_label is None  # loaded in this process


def test_a_spec_is_frozen_hashable_and_pickles():
    spec = ModelSpec.parse("smollm2-135m", label="smollm2-135m (split auto)", max_memory="cpu=300MiB")
    assert pickle.loads(pickle.dumps(spec)) == spec and hash(spec) == hash(pickle.loads(pickle.dumps(spec)))


def test_one_parse_of_a_model_entry_in_every_shell(monkeypatch, capsys):
    """``LABEL=served:URL`` means the same in BIASCORE_MODELS, --model, a sweep's models and load_model; a label
    holding '=' or '#' is refused by each in the same one line, naming no URL."""
    import pytest

    from biascore import load_model, settings
    from biascore.cli.main import main
    from biascore.sweep.spec import SpecError, build_spec

    url = "served:http://127.0.0.1:18101/v1#smollm2"
    spec = ModelSpec.parse(f"gpu = {url}")
    assert (spec.label, spec.name, spec.served) == ("gpu", url, True)
    assert load_model(f"gpu={url}").spec == spec
    monkeypatch.setenv("BIASCORE_MODELS", f"smollm2-135m,gpu={url}")
    assert settings.served_models() == {"gpu": url} and ModelSpec.configured("gpu") == ModelSpec(url, label="gpu")
    tasks = build_spec(None, models=[f"gpu={url}"], benchmarks=["demo"], metrics=["attribution"]).tasks()
    assert tasks[0].spec.label == "gpu" and tasks[0].spec.name == url
    for label in ("A=B", "A#B"):
        with pytest.raises(ValueError) as refused:
            ModelSpec.parse(f"{label}={url}")
        line = str(refused.value)
        assert f"not {label!r}" in line and "127.0.0.1" not in line and "\n" not in line
        monkeypatch.setenv("BIASCORE_MODELS", f"smollm2-135m,{label}={url}")
        with pytest.raises(settings.SettingsError) as refused:
            settings.allowed_models()
        assert str(refused.value).endswith(line)
        with pytest.raises(SpecError) as refused:
            build_spec(None, models=[f"{label}={url}"], benchmarks=["demo"], metrics=["attribution"])
        assert str(refused.value).endswith(line)
        assert main(["score", "--model", f"{label}={url}", "--benchmark", "demo"]) == 2
        assert capsys.readouterr().err.strip().endswith(line)


def test_public_lines_show_no_port_of_a_path_like_url():
    from biascore.errors import one_line

    line = one_line(RuntimeError("model path A=served:http:/127.0.0.1:18101/v1#smollm2 does not exist"), public=True)
    assert "18101" not in line and "127.0.0.1" not in line and line.endswith("does not exist")
