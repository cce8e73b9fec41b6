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
